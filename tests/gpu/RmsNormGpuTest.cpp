// The fused AllReduce + residual add + RMSNorm (stdlib/allreduce_rmsnorm.coll) on 2 GPUs, through
// the run harness: fresh random input, residual and weight for every call, and both outputs
// (residual_out and out) checked against the spec interpreted
// (tools/harness/InterpretedReference.h), eagerly and after a timed graph; hidden 4096 and 8192, 1
// to 128 tokens, every type and the sync strategies the spec is written for; a graph of
// back-to-back calls each with its own buffers; and the harness's refusals (a count that is not
// whole rows, special values).
#include "compiler/Compile.h"
#include "compiler/RowEpilogue.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <map>
#include <ostream>
#include <tuple>

namespace collc {
namespace {

constexpr const char* kSpec = "allreduce_rmsnorm";

/// The fused spec compiled for the shared world with row length `hidden`; an error also when the
/// compiler did not describe its add + RMSNorm epilogue (the harness needs that to check it).
gputest::Variant rowVariantFor(int64_t hidden, DType dtype, SyncKind sync, int threads = 0) {
  gputest::Variant variant =
      gputest::variantFor(kSpec, dtype, ReduceOp::Sum, sync, /*root=*/0, hidden, threads);
  if (variant.error.empty() && (!variant.spec || !findAddRmsNorm(*variant.spec)))
    variant.error = "the compiler did not describe the add + RMSNorm epilogue";
  return variant;
}

constexpr SyncKind kSyncs[] = {SyncKind::Barrier, SyncKind::LL, SyncKind::Sentinel};
constexpr DType kTypes[] = {DType::BF16, DType::F16, DType::F32};

struct RmsNormCase {
  int64_t hidden;
  uint64_t tokens;
  DType dtype;
  SyncKind sync;
};

void PrintTo(const RmsNormCase& c, std::ostream* os) {
  *os << "hidden " << c.hidden << " tokens " << c.tokens << " " << name(c.dtype) << " "
      << name(c.sync);
}

std::vector<RmsNormCase> rmsNormCases() {
  std::vector<RmsNormCase> cases;
  for (int64_t hidden : {4096, 8192})
    for (uint64_t tokens : {1, 2, 7, 32, 128})
      for (DType dtype : kTypes)
        for (SyncKind sync : kSyncs)
          cases.push_back({hidden, tokens, dtype, sync});
  return cases;
}

class RmsNormGpu : public ::testing::TestWithParam<RmsNormCase> {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

// Three eager calls (every scratch copy), then a short timed graph whose last call is checked:
// the aux buffers must be passed, refreshed and read back on both paths.
TEST_P(RmsNormGpu, BothOutputsMatchFloat64Reference) {
  const RmsNormCase& c = GetParam();
  LocalWorld& world = *gputest::world();
  const gputest::Variant variant = rowVariantFor(c.hidden, c.dtype, c.sync);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  const uint64_t count = c.tokens * uint64_t(c.hidden);
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, variant.compiled, variant.cubin, count);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  RunOptions options;
  options.reference = variant.spec;
  options.count = count;
  options.graphOps = 8;
  options.replays = 2;
  options.seed = c.tokens * 131 + uint64_t(c.hidden) + uint64_t(c.dtype) * 7 + uint64_t(c.sync);
  Expected<RunReport> report = runAndCheck(world, **instance, variant.compiled, options);
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_TRUE(report->correct) << report->firstMismatches;
  EXPECT_EQ(report->checkedCalls, options.checks + 1);
  EXPECT_GT(report->usPerOp, 0);
}

INSTANTIATE_TEST_SUITE_P(Stdlib, RmsNormGpu, ::testing::ValuesIn(rmsNormCases()),
                         [](const ::testing::TestParamInfo<RmsNormCase>& info) {
                           const RmsNormCase& c = info.param;
                           return "h" + std::to_string(c.hidden) + "_t" + std::to_string(c.tokens) +
                                  "_" + std::string(name(c.dtype)) + "_" +
                                  std::string(name(c.sync));
                         });

// The code generator keeps a thread's part of a row in registers when it is at most 8 vectors, and
// reads the row back from memory otherwise: both paths, a row that ends part-way through a pass of
// the block, and a row of one pass.
struct RowShapeCase {
  int64_t hidden;
  int threads;
  DType dtype;
  const char* what;
};

constexpr RowShapeCase kRowShapes[] = {
    {8192, 64, DType::BF16, "memory_16_vectors_per_thread"},
    {4104, 512, DType::BF16, "registers_last_pass_partial"},
    {4096, 1024, DType::F32, "registers_one_pass"},
    {2048, 1024, DType::BF16, "registers_most_threads_idle"},
};

class RmsNormRowShapeGpu : public ::testing::TestWithParam<RowShapeCase> {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

TEST_P(RmsNormRowShapeGpu, BothOutputsMatchFloat64Reference) {
  const RowShapeCase& c = GetParam();
  LocalWorld& world = *gputest::world();
  for (SyncKind sync : kSyncs) {
    SCOPED_TRACE(name(sync));
    const gputest::Variant variant = rowVariantFor(c.hidden, c.dtype, sync, c.threads);
    ASSERT_TRUE(variant.error.empty()) << variant.error;
    ASSERT_EQ(variant.compiled.launch.threads, c.threads);
    for (uint64_t tokens : {1, 3, 40}) {
      const uint64_t count = tokens * uint64_t(c.hidden);
      Expected<std::unique_ptr<CollectiveInstance>> instance =
          CollectiveInstance::create(world, variant.compiled, variant.cubin, count);
      ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
      RunOptions options;
      options.reference = variant.spec;
      options.count = count;
      options.graphOps = 4;
      options.replays = 2;
      options.seed = tokens + uint64_t(c.hidden) + uint64_t(c.threads);
      Expected<RunReport> report = runAndCheck(world, **instance, variant.compiled, options);
      ASSERT_TRUE(bool(report)) << toString(report.takeError());
      EXPECT_TRUE(report->correct) << "tokens " << tokens << ": " << report->firstMismatches;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stdlib, RmsNormRowShapeGpu, ::testing::ValuesIn(kRowShapes),
                         [](const ::testing::TestParamInfo<RowShapeCase>& info) {
                           return std::string(info.param.what);
                         });

class RmsNormStressGpu : public ::testing::TestWithParam<SyncKind> {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

// 2,000 calls back to back in one graph, each with its own input, residual, weight and outputs:
// a call that overtakes its predecessor shows in some call's residual_out or out.
TEST_P(RmsNormStressGpu, BackToBackCallsAllCorrect) {
  LocalWorld& world = *gputest::world();
  const gputest::Variant variant = rowVariantFor(4096, DType::BF16, GetParam());
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  const uint64_t count = 2 * 4096;
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, variant.compiled, variant.cubin, count);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  Expected<RunReport> report = runGraphStress(world, **instance, variant.compiled, count, 2000,
                                              /*seed=*/42, variant.spec.get());
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_TRUE(report->correct) << report->firstMismatches;
  EXPECT_EQ(report->checkedCalls, 2000);
}

INSTANTIATE_TEST_SUITE_P(Stdlib, RmsNormStressGpu, ::testing::ValuesIn(kSyncs),
                         [](const ::testing::TestParamInfo<SyncKind>& info) {
                           return std::string(name(info.param));
                         });

class RmsNormHarnessGpu : public ::testing::Test {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

TEST_F(RmsNormHarnessGpu, RefusesCountsThatAreNotWholeRowsAndSpecialValues) {
  LocalWorld& world = *gputest::world();
  const gputest::Variant variant = rowVariantFor(4096, DType::BF16, SyncKind::LL);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, variant.compiled, variant.cubin, 2 * 4096);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  RunOptions options;
  options.reference = variant.spec;
  options.time = false;
  options.count = 4096 + 8;
  Expected<RunReport> partial = runAndCheck(world, **instance, variant.compiled, options);
  ASSERT_FALSE(bool(partial));
  EXPECT_NE(toString(partial.takeError()).find("not a whole number of rows of 4096"),
            std::string::npos);
  options.count = 4096;
  options.specialValues = true;
  Expected<RunReport> special = runAndCheck(world, **instance, variant.compiled, options);
  ASSERT_FALSE(bool(special));
  EXPECT_NE(toString(special.takeError()).find("special input values"), std::string::npos);
}

} // namespace
} // namespace collc
