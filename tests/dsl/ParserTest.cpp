#include "dsl/Parser.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

struct ParseResult {
  std::unique_ptr<ast::Spec> spec;
  std::string diagnostics;
  std::string printed;
};

ParseResult parse(llvm::StringRef text) {
  ParseResult result;
  llvm::SourceMgr sources;
  llvm::raw_string_ostream out(result.diagnostics);
  Diagnostics diags(sources, out);
  result.spec = parseSpecText(diags, text, "test.coll");
  if (result.spec) {
    llvm::raw_string_ostream printed(result.printed);
    ast::print(*result.spec, printed);
  }
  return result;
}

const char* const kOneShot = R"(
collective allreduce_oneshot kind allreduce
  ranks 2..4
  buffers in: T[n], out: T[n]
  scratch slot[nranks]: T[n]
  sync barrier
  launch blocks=8 threads=256
{
  step push {
    for p in peers { put in -> p.slot[rank] }
  }
  step reduce {
    wait push
    out = reduce(in, slot[peers])
  }
}
)";

TEST(Parser, OneShotSpec) {
  auto r = parse(kOneShot);
  ASSERT_TRUE(r.spec) << r.diagnostics;
  EXPECT_EQ(r.spec->name, "allreduce_oneshot");
  EXPECT_EQ(r.spec->kind, CollectiveKind::AllReduce);
  EXPECT_EQ(r.spec->minRanks, 2u);
  EXPECT_EQ(r.spec->maxRanks, 4u);
  ASSERT_EQ(r.spec->buffers.size(), 3u);
  EXPECT_TRUE(r.spec->buffers[2].scratch);
  EXPECT_EQ(r.spec->syncName, "barrier");
  ASSERT_EQ(r.spec->launch.size(), 2u);
  EXPECT_EQ(r.spec->launch[1].value, 256u);
  ASSERT_EQ(r.spec->steps.size(), 2u);
  EXPECT_EQ(r.spec->steps[1].body[0]->kind, ast::Stmt::Kind::Wait);
  EXPECT_EQ(r.spec->steps[1].body[1]->kind, ast::Stmt::Kind::Reduce);
  EXPECT_EQ(r.printed, "Collective allreduce_oneshot kind allreduce ranks 2..4\n"
                       "  Buffer in: T[n]\n"
                       "  Buffer out: T[n]\n"
                       "  Scratch slot[nranks]: T[n]\n"
                       "  Sync barrier\n"
                       "  Launch blocks = 8\n"
                       "  Launch threads = 256\n"
                       "  Step push\n"
                       "    For p in peers\n"
                       "      Put in -> (p).slot[rank]\n"
                       "  Step reduce\n"
                       "    Wait push\n"
                       "    Reduce out = reduce(in, slot[peers])\n");
}

TEST(Parser, EveryNodeHasALocation) {
  auto r = parse(kOneShot);
  ASSERT_TRUE(r.spec);
  const auto& put = *r.spec->steps[0].body[0]->body[0];
  EXPECT_TRUE(put.loc.isValid());
  EXPECT_TRUE(put.target.loc.isValid());
  EXPECT_TRUE(put.target.peer->loc.isValid());
  EXPECT_TRUE(put.sources[0].loc.isValid());
  EXPECT_TRUE(r.spec->buffers[0].size->loc.isValid());
}

TEST(Parser, ExpressionPrecedenceAndRankArithmetic) {
  auto r = parse(R"(collective ring kind allreduce
    buffers in: T[n], out: T[n]
    scratch s[nranks]: T[chunk(n) * 2 + 1]
  { step a { for i in 0..nranks - 1 { put in.chunk((rank + i) % nranks) -> ((rank + 1) % nranks).s[rank] } } })");
  ASSERT_TRUE(r.spec) << r.diagnostics;
  std::string size;
  llvm::raw_string_ostream out(size);
  ast::print(*r.spec->buffers[2].size, out);
  EXPECT_EQ(out.str(), "((chunk(n) * 2) + 1)");
  const auto& loop = *r.spec->steps[0].body[0];
  EXPECT_EQ(loop.kind, ast::Stmt::Kind::For);
  std::string hi;
  llvm::raw_string_ostream hiOut(hi);
  ast::print(*loop.hi, hiOut);
  EXPECT_EQ(hiOut.str(), "(nranks - 1)");
}

TEST(Parser, OneStatementStepForm) {
  auto r = parse("collective c kind allreduce buffers in: T[n], out: T[n] { step copy: out = in }");
  ASSERT_TRUE(r.spec) << r.diagnostics;
  EXPECT_EQ(r.spec->steps[0].body[0]->kind, ast::Stmt::Kind::Copy);
}

TEST(Parser, ReportsFirstErrorWithLineAndCaret) {
  auto r = parse("collective c kind allreduce\n  buffers in: T[n] out: T[n]\n{ }");
  EXPECT_FALSE(r.spec);
  EXPECT_NE(r.diagnostics.find("test.coll:2:20: error: expected"), std::string::npos)
      << r.diagnostics;
  EXPECT_NE(r.diagnostics.find("^"), std::string::npos);
}

TEST(Parser, DeepNestingIsAnErrorNotACrash) {
  std::string text = "collective c kind allreduce buffers in: T[" + std::string(10000, '(') + "n" +
                     std::string(10000, ')') + "], out: T[n] { }";
  auto r = parse(text);
  EXPECT_FALSE(r.spec);
  EXPECT_NE(r.diagnostics.find("nested too deeply"), std::string::npos);
}

TEST(Parser, ReadingAPeerIsRefusedWithAHint) {
  auto r = parse("collective c kind allreduce buffers in: T[n], out: T[n] scratch s: T[n]\n"
                 "{ step a { out = reduce(in, p.s) } }");
  EXPECT_FALSE(r.spec);
  EXPECT_NE(r.diagnostics.find("reads a peer's memory"), std::string::npos) << r.diagnostics;
}

const char* const kFused = R"(
collective fused kind allreduce
  rows hidden = 4096
  buffers in: T[n], out: T[n], residual: T[n], residual_out: T[n], weight: T[hidden]
  scratch slot[nranks]: T[n]
{
  step push: for p in peers { put in -> p.slot[rank] }
  step reduce {
    wait push
    residual_out = reduce(in, slot[peers]) + residual
    out = rmsnorm(residual_out, weight)
    out = in + residual + residual_out
  }
}
)";

TEST(Parser, RowsAddendsAndRmsNorm) {
  auto r = parse(kFused);
  ASSERT_TRUE(r.spec) << r.diagnostics;
  EXPECT_EQ(r.spec->rowLengthName, "hidden");
  EXPECT_EQ(r.spec->defaultRowLength, 4096u);
  const auto& body = r.spec->steps[1].body;
  ASSERT_EQ(body.size(), 4u);
  EXPECT_EQ(body[1]->kind, ast::Stmt::Kind::Reduce);
  ASSERT_EQ(body[1]->addends.size(), 1u);
  EXPECT_EQ(body[1]->addends[0].name, "residual");
  EXPECT_EQ(body[2]->kind, ast::Stmt::Kind::RowNorm);
  ASSERT_EQ(body[2]->sources.size(), 2u);
  EXPECT_EQ(body[2]->sources[0].name, "residual_out");
  EXPECT_EQ(body[2]->sources[1].name, "weight");
  EXPECT_EQ(body[3]->kind, ast::Stmt::Kind::Copy);
  EXPECT_EQ(body[3]->addends.size(), 2u);
  EXPECT_NE(r.printed.find("  Rows hidden = 4096\n"), std::string::npos) << r.printed;
  EXPECT_NE(r.printed.find("Reduce residual_out = reduce(in, slot[peers]) + residual\n"),
            std::string::npos)
      << r.printed;
  EXPECT_NE(r.printed.find("RowNorm out = rmsnorm(residual_out, weight)\n"), std::string::npos)
      << r.printed;
  EXPECT_NE(r.printed.find("Copy out = in + residual + residual_out\n"), std::string::npos)
      << r.printed;
}

// quantize's keyword arguments in the order written, each with its source after the weight; which
// keywords go together is the compiler's (an unknown one parses).
TEST(Parser, QuantizeTakesKeywordArguments) {
  auto r = parse(R"(collective q kind allreduce
  rows hidden
  buffers in: T[n], out: fp4e2m1[n], y: T[n], w: T[hidden], bs: fp8e4m3[n], gs: f32[1]
{
  step a {
    out = quantize(rmsnorm(y, w), swizzled_block_scale=bs, global_scale=gs)
    out = quantize(rmsnorm(y, w), whatever=gs)
  }
}
)");
  ASSERT_TRUE(r.spec) << r.diagnostics;
  const auto& stmt = *r.spec->steps[0].body[0];
  ASSERT_EQ(stmt.quantize.size(), 2u);
  EXPECT_EQ(stmt.quantize[0].keyword, "swizzled_block_scale");
  EXPECT_EQ(stmt.quantize[1].keyword, "global_scale");
  ASSERT_EQ(stmt.sources.size(), 4u);
  EXPECT_EQ(stmt.sources[2].name, "bs");
  EXPECT_EQ(stmt.sources[3].name, "gs");
  EXPECT_NE(r.printed.find("RowNorm out = quantize(rmsnorm(y, w), swizzled_block_scale=bs, "
                           "global_scale=gs)\n"),
            std::string::npos)
      << r.printed;
  EXPECT_EQ(r.spec->steps[0].body[1]->quantize.at(0).keyword, "whatever");
  for (const char* bad : {"quantize(rmsnorm(y, w), block_scale=bs, block_scale=bs)",
                          "quantize(rmsnorm(y, w), 3=bs)", "quantize(rmsnorm(y, w), scale)"}) {
    auto refused = parse(std::string("collective q kind allreduce\n  rows hidden\n  buffers "
                                     "in: T[n], out: T[n], w: T[hidden], bs: f32[1]\n{\n  step a "
                                     "{ out = ") +
                         bad + " }\n}\n");
    EXPECT_FALSE(refused.spec) << bad;
    EXPECT_NE(refused.diagnostics.find("error: "), std::string::npos) << bad;
  }
}

TEST(Parser, RowsWithoutDefaultLength) {
  auto r = parse("collective c kind allreduce rows h buffers in: T[n], out: T[n] "
                 "{ step a: out = in }");
  ASSERT_TRUE(r.spec) << r.diagnostics;
  EXPECT_EQ(r.spec->rowLengthName, "h");
  EXPECT_EQ(r.spec->defaultRowLength, 0u);
}

TEST(Parser, RmsNormNeedsTwoOperands) {
  auto r = parse("collective c kind allreduce rows h buffers in: T[n], out: T[n]\n"
                 "{ step a: out = rmsnorm(in) }");
  EXPECT_FALSE(r.spec);
  EXPECT_NE(r.diagnostics.find("test.coll:2:27: error: expected ',' between the rows and the "
                               "weight in 'rmsnorm(rows, weight)'"),
            std::string::npos)
      << r.diagnostics;
}

TEST(Parser, RmsNormIsReserved) {
  auto r = parse("collective c kind allreduce buffers in: T[n], rmsnorm: T[n] { step a: in = in }");
  EXPECT_FALSE(r.spec);
  EXPECT_NE(r.diagnostics.find("'rmsnorm' is a reserved word"), std::string::npos) << r.diagnostics;
}

TEST(Parser, RowLengthMustBeAnInteger) {
  auto r = parse("collective c kind allreduce rows h = x buffers in: T[n], out: T[n] { }");
  EXPECT_FALSE(r.spec);
  EXPECT_NE(r.diagnostics.find("as the default row length"), std::string::npos) << r.diagnostics;
}

} // namespace
} // namespace collc
