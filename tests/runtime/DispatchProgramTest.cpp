// The dispatcher's first step without a GPU: the plan's variants compile through the front end
// and NVRTC, the heap they need is known, and a table that names what cannot be compiled, or a
// table named on purpose that is missing or malformed, is an error that says which.
#include "pipeline/CompileDispatch.h"
#include "runtime/Dispatcher.h"

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>

namespace collc {
namespace {

DispatchRequest h200Request() {
  DispatchRequest request;
  request.dtype = DType::BF16;
  request.nranks = 2;
  request.maxCount = 4 << 20;
  request.gpu = "NVIDIA_H200";
  request.topology = "nvlink-p2p";
  request.arch = "sm_90";
  return request;
}

/// A temporary table file with `rows`, removed with this object.
struct TempTable {
  explicit TempTable(const std::string& rows) {
    llvm::SmallString<128> p;
    EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("collc-table", "tsv", p));
    path = std::string(p);
    std::ofstream(path) << rows;
  }
  ~TempTable() { llvm::sys::fs::remove(path); }
  std::string path;
};

std::string errorOf(const DispatchRequest& request) {
  auto program = compileDispatchProgram(request);
  return program ? "" : toString(program.takeError());
}

TEST(DispatchProgram, TheDefaultRuleCompilesEveryVariant) {
  DispatchRequest request = h200Request();
  request.table = "none";
  auto program = compileDispatchProgram(request);
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  ASSERT_EQ(program->variants().size(), 3u);
  for (const DispatchVariant& variant : program->variants()) {
    EXPECT_FALSE(variant.cubin.empty()) << variant.variant.text();
    EXPECT_EQ(variant.compiled.dtype, DType::BF16);
    EXPECT_EQ(variant.compiled.nranks, 2);
  }
  EXPECT_EQ(program->variants()[0].compiled.sync, SyncKind::Sentinel);
  EXPECT_EQ(program->variants()[2].compiled.launch.blocks, 32);
  // Every variant's scratch at the largest call: at least one copy of 4 Mi bf16 elements.
  EXPECT_GT(program->heapBytes(), uint64_t(8) << 20);
  EXPECT_NE(program->description().find("built-in default rule"), std::string::npos);
}

// The built-in rule names the specs the stdlib declares at the request's rank count (past the
// two-shot's counts it would keep to the one-shot: tests/runtime/DispatchPlanTest.cpp): a plan
// that named a spec the count is not proved for could not compile. Both declare 2..72, so the
// rule's ranges stay at every count, 8 as 64 and 72.
TEST(DispatchProgram, TheDefaultRuleKeepsToSpecsThatDeclareTheRankCount) {
  DispatchRequest request = h200Request();
  request.table = "none";
  request.maxCount = 16 << 20; // 32 MiB of bf16: every range of the rule
  for (int nranks : {8, 64, 72}) {
    request.nranks = nranks;
    auto within = compileDispatchProgram(request);
    ASSERT_TRUE(bool(within)) << toString(within.takeError());
    ASSERT_EQ(within->variants().size(), 4u) << within->description();
    EXPECT_EQ(within->variants()[3].compiled.specName, "allreduce_twoshot");
    EXPECT_EQ(within->variants()[3].compiled.nranks, nranks);
  }
}

// Ranks that share one GPU keep every block resident together: the cap lowers each variant's
// blocks, the one the plan names (the built-in rule's 32 here) and the spec's own alike, and
// leaves the rest of the plan's choice.
TEST(DispatchProgram, MostBlocksPerRankCapsEveryVariant) {
  DispatchRequest request = h200Request();
  request.table = "none";
  request.maxCount = 1 << 20; // 2 MiB of bf16: the one-shot's two ranges of the rule
  request.nranks = 72;
  auto program = compileDispatchProgram(request, /*mostBlocksPerRank=*/8);
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  ASSERT_EQ(program->variants().size(), 2u) << program->description();
  for (const DispatchVariant& variant : program->variants()) {
    EXPECT_EQ(variant.variant.blocks.value_or(0), 32) << variant.variant.text();
    EXPECT_EQ(variant.compiled.launch.blocks, 8) << variant.variant.text();
    EXPECT_EQ(variant.compiled.launch.threads, variant.variant.threads.value_or(0))
        << variant.variant.text();
  }
  request.spec = "allreduce_oneshot"; // the rule then names its spec with its own launch: 8 blocks
  auto own = compileDispatchProgram(request, /*mostBlocksPerRank=*/3);
  ASSERT_TRUE(bool(own)) << toString(own.takeError());
  ASSERT_EQ(own->variants().size(), 1u) << own->description();
  EXPECT_EQ(own->variants()[0].compiled.launch.blocks, 3);
}

TEST(DispatchProgram, ATableRowChoosesTheVariantsCompiled) {
  TempTable table("NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0 inf 1K allreduce_twoshot ll "
                  "4 256 8 2 3.0 *\n");
  DispatchRequest request = h200Request();
  request.table = table.path;
  auto program = compileDispatchProgram(request);
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  ASSERT_EQ(program->variants().size(), 1u);
  const CompiledCollective& compiled = program->variants()[0].compiled;
  EXPECT_EQ(compiled.specName, "allreduce_twoshot");
  EXPECT_EQ(compiled.sync, SyncKind::LL);
  EXPECT_EQ(compiled.launch.blocks, 4);
  EXPECT_EQ(compiled.launch.threads, 256);
  EXPECT_EQ(compiled.launch.vectorBytes, 8);
  EXPECT_EQ(compiled.launch.unroll, 2);
  EXPECT_TRUE(program->plan().fromTable);
}

TEST(DispatchProgram, AnotherMachinesTableFallsBackToTheDefaultRule) {
  TempTable table("NVIDIA_B200 2 nvlink-p2p allreduce bf16 sum 0 inf 1K allreduce_twoshot ll "
                  "4 256 8 2 3.0 *\n");
  DispatchRequest request = h200Request();
  request.table = table.path;
  auto program = compileDispatchProgram(request);
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  EXPECT_FALSE(program->plan().fromTable);
  EXPECT_NE(program->plan().source.find("no row of"), std::string::npos);
}

TEST(DispatchProgram, ErrorsSayWhatIsWrong) {
  DispatchRequest request = h200Request();
  request.table = "/nonexistent/tuning.tsv";
  EXPECT_NE(errorOf(request).find("cannot read the tuning table /nonexistent/tuning.tsv"),
            std::string::npos);

  TempTable malformed("NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0 inf\n");
  request.table = malformed.path;
  EXPECT_NE(errorOf(request).find(malformed.path + ":1: error: expected 18 columns"),
            std::string::npos)
      << errorOf(request);

  TempTable unknownSpec("* * * allreduce * * 0 inf 1K no_such_spec - - - - - 3.0 *\n");
  request.table = unknownSpec.path;
  std::string error = errorOf(request);
  EXPECT_NE(error.find("dispatch: variant no_such_spec/- -x- v- u-"), std::string::npos) << error;
  EXPECT_NE(error.find("the plan came from tuning table " + unknownSpec.path), std::string::npos)
      << error;

  TempTable refused("* * * allreduce * * 0 inf 1K allreduce_oneshot ll128_atomic - - - - 3.0 *\n");
  request.table = refused.path;
  request.op = ReduceOp::Max;
  error = errorOf(request);
  EXPECT_NE(error.find("the compiler refused it"), std::string::npos) << error;

  request = h200Request();
  request.maxCount = 0;
  EXPECT_NE(errorOf(request).find("maxCount must be at least 1"), std::string::npos);
}

TEST(DispatchProgram, TheEnvironmentNamesTheTable) {
  TempTable table("* 2 * allreduce bf16 sum 0 inf 1K allreduce_oneshot barrier - - - - 3.0 *\n");
  const char* saved = std::getenv("COLLC_TUNING_TABLE");
  std::string savedValue = saved ? saved : "";
  setenv("COLLC_TUNING_TABLE", table.path.c_str(), 1);
  auto program = compileDispatchProgram(h200Request());
  setenv("COLLC_TUNING_TABLE", "/nonexistent/env-table.tsv", 1);
  std::string missing = errorOf(h200Request());
  if (saved)
    setenv("COLLC_TUNING_TABLE", savedValue.c_str(), 1);
  else
    unsetenv("COLLC_TUNING_TABLE");
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  EXPECT_TRUE(program->plan().fromTable);
  EXPECT_EQ(program->variants()[0].compiled.sync, SyncKind::Barrier);
  // Named by the environment, a missing table is an error, not a silent fall-back.
  EXPECT_NE(missing.find("/nonexistent/env-table.tsv"), std::string::npos) << missing;
}

} // namespace
} // namespace collc
