// The row-wise epilogue end to end on the CPU: the verifier proves the fused spec and refuses a
// row read before it is complete; the compiler fixes the row length, describes the aux buffers
// and the epilogue for the runtime, and refuses what cannot work (no row length, a row length
// the vector does not divide).
#include "compiler/RowEpilogue.h"

#include "compiler/Compile.h"
#include "compiler/DevicePrelude.h"
#include "compiler/DiagnosticText.h"
#include "compiler/Sema.h"
#include "compiler/Verifier.h"
#include "compiler/ir/RowOps.h"
#include "dsl/Parser.h"

#include <gtest/gtest.h>
#include <set>

namespace collc {
namespace {

std::string fusedSpec(const std::string& reduceStep) {
  return "collective fused kind allreduce\n"
         "  rows hidden\n"
         "  buffers in: T[n], out: T[n], residual: T[n], residual_out: T[n], weight: T[hidden]\n"
         "  scratch slot[nranks]: T[n]\n"
         "{\n"
         "  step push: for p in peers { put in -> p.slot[rank] }\n"
         "  step reduce {\n" +
         reduceStep + "  }\n}\n";
}

struct Checked {
  bool ok = false;
  VerifyResult proof;
  std::string diagnostics;
};

Checked verifyText(const std::string& text) {
  Checked checked;
  llvm::SourceMgr sources;
  llvm::raw_string_ostream out(checked.diagnostics);
  Diagnostics diags(sources, out);
  auto ast = parseSpecText(diags, text, "fused.coll");
  if (!ast)
    return checked;
  auto program = analyze(*ast, diags);
  if (!program)
    return checked;
  checked.proof = verify(*program, diags);
  checked.ok = checked.proof.ok;
  out.flush();
  return checked;
}

// The passes know a row operation only through its entry: each is found back by its name and
// quantization, and its device files are ones the compiler embeds (so DeviceFilesNvrtcTest
// compiles them).
TEST(RowOps, EveryOpHasOneEntryFoundByItsNameWithEmbeddedDeviceFiles) {
  std::set<std::string_view> names;
  ASSERT_FALSE(ir::allRowOps().empty());
  for (size_t k = 0; k < ir::allRowOps().size(); ++k) {
    const ir::RowOpInfo& info = ir::allRowOps()[k];
    EXPECT_EQ(size_t(info.op), k) << info.displayName << " is not in the order of ir::RowOp";
    EXPECT_TRUE(names.insert(info.displayName).second) << info.displayName << " has two entries";
    ASSERT_NE(ir::findRowOp(info.name, info.quant), nullptr) << info.displayName;
    EXPECT_EQ(ir::findRowOp(info.name, info.quant)->op, info.op) << info.displayName;
    EXPECT_EQ(&ir::rowOpInfo(info.op), &info) << info.displayName;
    // Its quantization's keywords name the parameters after the weight, and find it back.
    EXPECT_EQ(ir::quantKeywords(info.quant).size() + 1, info.params.size()) << info.displayName;
    if (info.quant != ir::RowQuant::None) {
      EXPECT_EQ(ir::findQuant(ir::quantKeywords(info.quant)), info.quant) << info.displayName;
    }
    EXPECT_FALSE(info.helperFiles.empty()) << info.displayName;
    for (std::string_view helper : info.helperFiles) {
      bool embedded = false;
      for (const auto& [file, text] : deviceFiles())
        embedded = embedded || file == helper;
      EXPECT_TRUE(embedded) << info.displayName << ": " << helper << " is not in compiler/device/";
    }
  }
  EXPECT_EQ(ir::findRowOp("no_such_op"), nullptr);
}

TEST(RowEpilogue, FusedSpecIsProvedForEveryRankCount) {
  auto c = verifyText(fusedSpec("    wait push\n"
                                "    residual_out = reduce(in, slot[peers]) + residual\n"
                                "    out = rmsnorm(residual_out, weight)\n"));
  EXPECT_TRUE(c.ok) << c.diagnostics;
  // Rows are not element-aligned with the push, but every read of this rank's data in the row
  // step is by the block that wrote it: data arrival (ll, sentinel) still applies.
  EXPECT_FALSE(c.proof.indexAligned);
  EXPECT_TRUE(c.proof.localAligned);
  EXPECT_TRUE(c.proof.exchangesAreMutual);
}

TEST(RowEpilogue, RowReadWithoutWaitIsRefused) {
  auto c = verifyText(fusedSpec("    residual_out = reduce(in, slot[peers]) + residual\n"
                                "    out = rmsnorm(residual_out, weight)\n"));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.diagnostics.find("without waiting for it; add 'wait push'"), std::string::npos)
      << c.diagnostics;
}

TEST(RowEpilogue, IncompleteRowIsRefusedWithTheElement) {
  // Only this rank's own slot: the row holds one rank's contribution.
  auto c = verifyText(fusedSpec("    wait push\n"
                                "    residual_out = in + residual\n"
                                "    out = rmsnorm(residual_out, weight)\n"));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.diagnostics.find("'rmsnorm' reads row 0 of 'residual_out' on rank 0 before the "
                               "row is complete: element 0 holds in[0] of rank 0"),
            std::string::npos)
      << c.diagnostics;
}

TEST(RowEpilogue, ResidualCountedTwiceFailsThePostcondition) {
  auto c = verifyText(fusedSpec("    wait push\n"
                                "    residual_out = reduce(in, slot[peers]) + residual + residual\n"
                                "    out = rmsnorm(residual_out, weight)\n"));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.diagnostics.find("postcondition fails"), std::string::npos) << c.diagnostics;
}

TEST(RowEpilogue, ShapesToVerifyAreWholeRows) {
  llvm::SourceMgr sources;
  std::string text;
  llvm::raw_string_ostream out(text);
  Diagnostics diags(sources, out);
  auto ast = parseSpecText(diags, fusedSpec("    out = in\n"), "f.coll");
  ASSERT_TRUE(ast);
  auto program = analyze(*ast, diags);
  ASSERT_TRUE(program) << out.str();
  for (int nranks = 2; nranks <= 8; ++nranks)
    for (auto [count, rowLength] : shapesToVerify(*program, nranks)) {
      ASSERT_GT(rowLength, 0);
      EXPECT_EQ(count % rowLength, 0);
    }
}

struct Compiled {
  std::optional<CompiledCollective> compiled;
  std::string diagnostics;
};

Compiled compileStdlib(const CompileOptions& options) {
  Compiled result;
  auto spec = loadSpec("allreduce_rmsnorm");
  EXPECT_TRUE(bool(spec));
  DiagnosticText out(result.diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  if (compiled)
    result.compiled = std::move(*compiled);
  else
    consumeError(compiled.takeError());
  out.flush();
  return result;
}

TEST(RowEpilogue, StdlibSpecDescribesItsEpilogue) {
  CompileOptions options;
  options.dtype = DType::BF16;
  options.rowLength = 8192;
  options.eps = 1e-5f;
  std::shared_ptr<const ir::Program> spec;
  options.specProgram = &spec;
  auto r = compileStdlib(options);
  ASSERT_TRUE(r.compiled) << r.diagnostics;
  const CompiledCollective& c = *r.compiled;
  EXPECT_EQ(c.rowLength, 8192);
  EXPECT_FLOAT_EQ(c.eps, 1e-5f);
  ASSERT_EQ(c.aux.size(), 3u);
  EXPECT_EQ(c.aux[0].name, "residual");
  EXPECT_FALSE(c.aux[0].written);
  EXPECT_EQ(c.aux[1].name, "residual_out");
  EXPECT_TRUE(c.aux[1].written);
  EXPECT_EQ(c.aux[2].name, "weight");
  EXPECT_EQ(c.aux[0].elements(3 * 8192), 3u * 8192);
  EXPECT_EQ(c.aux[2].elements(3 * 8192), 8192u);
  ASSERT_TRUE(spec);
  const std::optional<AddRmsNormEpilogue> epilogue = findAddRmsNorm(*spec);
  ASSERT_TRUE(epilogue);
  EXPECT_EQ(epilogue->residualIn, 0);
  EXPECT_EQ(epilogue->residualOut, 1);
  EXPECT_EQ(epilogue->weight, 2);
  EXPECT_NE(c.cudaSource.find("constexpr float kEps = 1e-05f;"), std::string::npos);
}

TEST(RowEpilogue, DefaultRowLengthComesFromTheSpec) {
  auto r = compileStdlib(CompileOptions{});
  ASSERT_TRUE(r.compiled) << r.diagnostics;
  EXPECT_EQ(r.compiled->rowLength, 4096);
}

TEST(RowEpilogue, RowLengthTheVectorDoesNotDivideIsRefused) {
  CompileOptions options;
  options.dtype = DType::F16;
  options.rowLength = 4100; // 16-byte vectors of f16 are 8 elements
  auto r = compileStdlib(options);
  EXPECT_FALSE(r.compiled);
  EXPECT_NE(r.diagnostics.find("row length 4100 is not a multiple of 8 elements"),
            std::string::npos)
      << r.diagnostics;
  options.vectorBytes = 8; // 4 elements: 4100 = 1025 * 4
  EXPECT_TRUE(compileStdlib(options).compiled);
}

// The variant's row length has the bounds the spec's `rows hidden = INT` has (Sema): 2^30 is the
// largest, one more is refused, not cut down.
TEST(RowEpilogue, RowLengthPast2To30IsRefusedAsInTheSpec) {
  CompileOptions options;
  options.rowLength = kMaxRowLength;
  auto largest = compileStdlib(options);
  EXPECT_TRUE(largest.compiled) << largest.diagnostics;
  options.rowLength = kMaxRowLength + 16;
  auto r = compileStdlib(options);
  EXPECT_FALSE(r.compiled);
  EXPECT_NE(r.diagnostics.find("row length 1073741840 (--hidden, CompileOptions::rowLength) is "
                               "larger than the most collc supports, 2^30 = 1073741824"),
            std::string::npos)
      << r.diagnostics;
}

TEST(RowEpilogue, SpecWithoutRowsRefusesARowLength) {
  auto spec = loadSpec("allreduce_oneshot");
  ASSERT_TRUE(bool(spec));
  CompileOptions options;
  options.rowLength = 4096;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  ASSERT_FALSE(bool(compiled));
  consumeError(compiled.takeError());
  EXPECT_NE(out.str().find("a row length (--hidden 4096) was given, but the spec has no rows"),
            std::string::npos)
      << out.str();
}

TEST(RowEpilogue, RowsWithoutALengthAreRefused) {
  std::string text = fusedSpec("    wait push\n"
                               "    residual_out = reduce(in, slot[peers]) + residual\n"
                               "    out = rmsnorm(residual_out, weight)\n");
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(SpecSource{"fused.coll", text}, CompileOptions{}, out);
  ASSERT_FALSE(bool(compiled));
  consumeError(compiled.takeError());
  EXPECT_NE(out.str().find("fused.coll:2:3: error: the spec works on rows of 'hidden' elements: "
                           "give the row length"),
            std::string::npos)
      << out.str();
}

} // namespace
} // namespace collc
