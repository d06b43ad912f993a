// Per-row sizes: `n / ROWS` (the row count of a spec with rows), padded with round_up(.., k), in
// sums and products with numbers that ceil_div and round_up make from the row length; their plain
// form for the runtime (ElementCount), checked against the expression's own value, and the
// evaluation that the kernel and the verifier share.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/execute/Affine.h"
#include "compiler/ir/Expr.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::ExprNode;

Expr rows() {
  return ExprNode::binary(ExprKind::Div, ExprNode::count(), ExprNode::rowLength());
}
Expr num(int64_t v) {
  return ExprNode::constant(v);
}
Expr op(ExprKind kind, Expr a, Expr b) {
  return ExprNode::binary(kind, std::move(a), std::move(b));
}

/// The sizes NVFP4 and per-token FP8 need, at row length `hidden`.
struct Shape {
  Expr size;
  uint64_t (*expected)(uint64_t tokens, uint64_t hidden);
};

std::vector<Shape> targetShapes() {
  const Expr blocks = op(ExprKind::CeilDiv, ExprNode::rowLength(), num(16));
  return {
      // scale: f32[n / hidden]
      {rows(), [](uint64_t t, uint64_t) { return t; }},
      // block_scale: fp8e4m3[n / hidden * ceil_div(hidden, 16)]
      {op(ExprKind::Mul, rows(), blocks),
       [](uint64_t t, uint64_t h) { return t * ((h + 15) / 16); }},
      // swizzled: fp8e4m3[round_up(n / hidden, 128) * round_up(ceil_div(hidden, 16), 4)]
      {op(ExprKind::Mul, op(ExprKind::RoundUp, rows(), num(128)),
          op(ExprKind::RoundUp, blocks, num(4))),
       [](uint64_t t, uint64_t h) {
         return (t + 127) / 128 * 128 * (((h + 15) / 16 + 3) / 4 * 4);
       }},
      // 2 * n + n / hidden + 3: every part at once
      {op(ExprKind::Add, op(ExprKind::Add, op(ExprKind::Mul, num(2), ExprNode::count()), rows()),
          num(3)),
       [](uint64_t t, uint64_t h) { return 2 * t * h + t + 3; }},
  };
}

TEST(PerRowSize, FormsAgreeWithTheExpressionAtEveryShape) {
  for (int64_t hidden : {1, 16, 2056, 4096, 5120, 8192})
    for (const Shape& shape : targetShapes()) {
      ir::Env env;
      env.rowLength = hidden;
      std::string why;
      auto form = ir::sizeForm(shape.size, env, &why);
      ASSERT_TRUE(form) << ir::toText(shape.size) << ": " << why;
      ElementCount count;
      count.perCount = uint64_t(form->perCount);
      count.constant = uint64_t(form->constant);
      count.perRow = uint64_t(form->perRow);
      count.rowLength = uint64_t(hidden);
      count.rowMultiple = uint64_t(form->rowMultiple);
      for (int64_t tokens : {1, 7, 64, 129, 1000}) {
        env.count = tokens * hidden;
        auto value = ir::evaluate(shape.size, env, &why);
        ASSERT_TRUE(value) << why;
        EXPECT_EQ(uint64_t(*value), shape.expected(uint64_t(tokens), uint64_t(hidden)))
            << ir::toText(shape.size) << " hidden " << hidden << " tokens " << tokens;
        EXPECT_EQ(count.at(uint64_t(env.count)), uint64_t(*value))
            << ir::toText(shape.size) << " hidden " << hidden << " tokens " << tokens;
      }
    }
}

TEST(PerRowSize, FormsOfPaddedRows) {
  ir::Env env;
  env.rowLength = 4096;
  auto form = ir::sizeForm(op(ExprKind::Mul, num(3), op(ExprKind::RoundUp, rows(), num(128))), env);
  ASSERT_TRUE(form);
  EXPECT_EQ(form->perCount, 0);
  EXPECT_EQ(form->constant, 0);
  EXPECT_EQ(form->perRow, 3);
  EXPECT_EQ(form->rowMultiple, 128);
  form = ir::sizeForm(op(ExprKind::Sub, op(ExprKind::Mul, num(2), rows()), rows()), env);
  ASSERT_TRUE(form);
  EXPECT_EQ(form->perRow, 1);
  EXPECT_EQ(form->rowMultiple, 1);
}

TEST(PerRowSize, OtherUsesOfNAreRefusedWithTheReason) {
  ir::Env env;
  env.rowLength = 64;
  struct Case {
    Expr size;
    const char* why;
  } cases[] = {
      {op(ExprKind::Div, ExprNode::count(), ExprNode::nranks()),
       "n may be divided only by the row length"},
      {op(ExprKind::Div, op(ExprKind::Mul, num(2), ExprNode::count()), ExprNode::rowLength()),
       "n may not be divided"},
      {op(ExprKind::RoundUp, ExprNode::count(), num(8)), "only the row count may be rounded up"},
      {op(ExprKind::CeilDiv, rows(), num(8)), "only the row count may be rounded up"},
      {op(ExprKind::Mul, rows(), rows()), "n times n"},
      {op(ExprKind::Mul, rows(), ExprNode::count()), "n times n"},
      {op(ExprKind::Add, op(ExprKind::RoundUp, rows(), num(128)),
          op(ExprKind::RoundUp, rows(), num(4))),
       "rounded up to different multiples (128 and 4)"},
      {op(ExprKind::Sub, num(0), rows()), "must not shrink"},
      {op(ExprKind::RoundUp, rows(), num(0)), "the multiple must be positive"},
      {ExprNode::chunkSize(rows()), "chunk(...) of a row count"},
  };
  for (const Case& c : cases) {
    std::string why;
    EXPECT_FALSE(ir::sizeForm(c.size, env, &why)) << ir::toText(c.size);
    EXPECT_NE(why.find(c.why), std::string::npos) << ir::toText(c.size) << ": " << why;
  }
  // Without rows (row length 0), n / row length is no row count.
  std::string why;
  env.rowLength = 0;
  EXPECT_FALSE(ir::sizeForm(rows(), env, &why));
  EXPECT_NE(why.find("needs a row length"), std::string::npos) << why;
}

TEST(PerRowSize, RoundingOfNumbersIsCheckedAndPrinted) {
  ir::Env env;
  std::string why;
  EXPECT_EQ(ir::evaluate(op(ExprKind::CeilDiv, ExprNode::nranks(), num(16)), env).value_or(-1), 1);
  env.nranks = 33;
  EXPECT_EQ(ir::evaluate(op(ExprKind::CeilDiv, ExprNode::nranks(), num(16)), env).value_or(-1), 3);
  EXPECT_EQ(ir::evaluate(op(ExprKind::RoundUp, ExprNode::nranks(), num(16)), env).value_or(-1), 48);
  env.nranks = 32;
  EXPECT_EQ(ir::evaluate(op(ExprKind::RoundUp, ExprNode::nranks(), num(16)), env).value_or(-1), 32);
  // Numbers fold where the factory makes the node.
  EXPECT_EQ(op(ExprKind::RoundUp, num(33), num(16))->value, 48);
  const Expr byZero = op(ExprKind::CeilDiv, ExprNode::rowLength(), num(0));
  EXPECT_FALSE(ir::evaluate(byZero, env, &why));
  EXPECT_EQ(why, "ceil_div by zero");
  const Expr padded = op(ExprKind::RoundUp, rows(), num(128));
  EXPECT_EQ(ir::toC(padded), "round_up_u64((count / kHidden), 128)");
  EXPECT_EQ(ir::toText(padded), "round_up((n / row_length), 128)");
  EXPECT_EQ(padded->type, ir::CType::U64);
}

// The verifier's symbolic evaluation: with n = 8 * hidden * q + s (whole rows), round_up(n /
// hidden, 4) is exact in q once q's period makes 4 divide the rows' part in q.
TEST(PerRowSize, TheVerifierEvaluatesPaddedRowsInQ) {
  execute::Arith arith(true);
  execute::Bindings env;
  env.rowLength = 16;
  env.count = execute::Affine{16 * 8, 16 * 3}; // 8 rows a q, 3 rows more
  std::string why;
  auto value = execute::evaluate(op(ExprKind::RoundUp, rows(), num(4)), env, arith, &why);
  ASSERT_TRUE(value) << why;
  EXPECT_EQ(value->u, 8);
  EXPECT_EQ(value->v, 4);
  env.count = execute::Affine{16 * 2, 0}; // 2 rows a q: 4 does not divide it, the run splits q
  EXPECT_THROW(execute::evaluate(op(ExprKind::RoundUp, rows(), num(4)), env, arith, &why),
               execute::SplitQ);
}

/// A spec with rows whose last aux buffers have `perRow` (per-row sizes; with y and the weight, at
/// most COLLC_MAX_AUX buffers).
std::string perRowSpec(const std::string& perRow) {
  return "collective q kind allreduce\n"
         "  ranks 2..4\n"
         "  rows hidden = 4096\n"
         "  buffers in: T[n], out: T[n], y: T[n], weight: T[hidden], " +
         perRow +
         "\n"
         "  scratch slot[nranks]: T[n]\n"
         "{\n"
         "  step push: for p in peers { put in -> p.slot[rank] }\n"
         "  step reduce {\n"
         "    wait push\n"
         "    y = reduce(in, slot[peers])\n"
         "    out = rmsnorm(y, weight)\n"
         "  }\n"
         "}\n";
}

CompiledCollective compiledWith(const std::string& perRow, int64_t hidden) {
  CompileOptions options;
  options.nranks = 3;
  options.dtype = DType::BF16;
  options.rowLength = hidden;
  options.formatSource = false;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(SpecSource{"q.coll", perRowSpec(perRow)}, options, out);
  EXPECT_TRUE(bool(compiled)) << toString(compiled.takeError()) << out.str();
  return compiled ? std::move(*compiled) : CompiledCollective{};
}

TEST(PerRowSize, AuxBuffersOfACompiledVariantAreSizedByTheRowCount) {
  for (int64_t hidden : {2056, 5120}) {
    const CompiledCollective linear = compiledWith(
        "token_scale: f32[n / hidden], block_scale: fp8e4m3[n / hidden * ceil_div(hidden, 16)]",
        hidden);
    const CompiledCollective swizzled = compiledWith(
        "swizzled: fp8e4m3[round_up(n / hidden, 128) * round_up(ceil_div(hidden, 16), 4)]", hidden);
    ASSERT_EQ(linear.aux.size(), 4u);
    ASSERT_EQ(swizzled.aux.size(), 3u);
    const uint64_t blocks = uint64_t(hidden + 15) / 16;
    for (uint64_t tokens : {1, 7, 64, 200}) {
      const uint64_t n = tokens * uint64_t(hidden);
      EXPECT_EQ(linear.aux[0].elements(n), n); // y: as before
      EXPECT_EQ(linear.aux[2].elements(n), tokens);
      EXPECT_EQ(linear.aux[3].elements(n), tokens * blocks);
      EXPECT_EQ(swizzled.aux[2].elements(n), (tokens + 127) / 128 * 128 * ((blocks + 3) / 4 * 4));
    }
    ASSERT_TRUE(linear.aux[2].fixedType);
    EXPECT_TRUE(*linear.aux[2].fixedType == ElementType::F32);
  }
}

// Sema proves a size's form at row length 1; a variant's row length that takes it away is the
// spec's error at the buffer, not an internal one.
TEST(PerRowSize, AVariantsRowLengthThatRoundsToZeroIsRefusedAtTheBuffer) {
  CompileOptions options;
  options.nranks = 2;
  options.rowLength = 64;
  options.formatSource = false;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(
      SpecSource{"q.coll", perRowSpec("pad: f32[round_up(n / hidden, hidden % 64)]")}, options,
      out);
  ASSERT_FALSE(bool(compiled));
  Error error = compiled.takeError();
  EXPECT_TRUE(error.isSpecError()) << error.message();
  EXPECT_NE(out.str().find("q.coll:4:"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("the size of 'pad' cannot be computed for this variant (2 ranks, row "
                           "length 64): round_up to a multiple of 0"),
            std::string::npos)
      << out.str();
  options.rowLength = 48; // 48 % 64 = 48: rows padded to 48
  diagnostics.clear();
  auto padded = compileCollective(
      SpecSource{"q.coll", perRowSpec("pad: f32[round_up(n / hidden, hidden % 64)]")}, options,
      out);
  ASSERT_TRUE(bool(padded)) << toString(padded.takeError()) << out.str();
  EXPECT_EQ(padded->aux[2].elements(7 * 48), 48u);
}

} // namespace
} // namespace collc
