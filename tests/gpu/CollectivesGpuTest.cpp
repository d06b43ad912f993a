// The stdlib collectives other than the two AllReduces of AllReduceGpuTest (allgather,
// reducescatter, broadcast, reduce, alltoall, and the rings), compiled for every sync strategy
// that accepts them and JIT-compiled for the GPUs at hand, run on 2 GPUs and checked against the
// spec interpreted in float64 (tools/harness/InterpretedReference.h): every dtype, every op of
// the kinds that reduce, every root of the kinds that have one, over sizes that hit the edges of
// the vectorized paths and of the blocks (1, 7, 8, 9 elements, odd and large counts), with inputs
// that include -0.0, subnormals, NaN, +-inf and large magnitudes; and a graph of 2,000 back-to-back
// calls per variant with every call checked.
#include "abi/CollectiveShapes.h"
#include "compiler/Compile.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "tests/StdlibApplicability.h"
#include "tests/StdlibStrategies.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <llvm/Support/raw_ostream.h>
#include <map>
#include <ostream>
#include <tuple>

namespace collc {
namespace {

using gputest::Variant;
using gputest::variantFor;

struct CollectiveCase {
  std::string spec;
  SyncKind sync;
  DType dtype;
  ReduceOp op;
  int root;
  uint64_t count;
};

void PrintTo(const CollectiveCase& c, std::ostream* os) {
  *os << c.spec << " " << name(c.sync) << " " << name(c.dtype) << " " << name(c.op) << " root "
      << c.root << " count " << c.count;
}

std::string caseName(const CollectiveCase& c) {
  return c.spec + "_" + std::string(name(c.sync)) + "_" + std::string(name(c.dtype)) + "_" +
         std::string(name(c.op)) + "_root" + std::to_string(c.root) + "_n" +
         std::to_string(c.count);
}

/// Every (spec, strategy, op, root) the compiler accepts, for 2 ranks.
template <typename Visit> void forEachVariant(Visit visit) {
  for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs) {
    // AllReduceGpuTest covers these two, with more sizes and the watchdog.
    if (std::string(facts.name) == "allreduce_oneshot" ||
        std::string(facts.name) == "allreduce_twoshot")
      continue;
    // A fused epilogue needs whole rows and finite inputs, which this matrix (odd counts,
    // special values, every op) does not give; RmsNormGpuTest.cpp and QuantGpuTest.cpp cover them.
    if (std::string(facts.name) == "allreduce_rmsnorm" ||
        std::string(facts.name) == "allreduce_rmsnorm_fp8" ||
        std::string(facts.name) == "allreduce_rmsnorm_fp8_per_token" ||
        std::string(facts.name) == "allreduce_rmsnorm_nvfp4" ||
        std::string(facts.name) == "allreduce_rmsnorm_nvfp4_linear")
      continue;
    for (SyncKind sync : tests::kGpuStrategies)
      for (ReduceOp op : kAllReduceOps)
        for (int root = 0; root < (hasRoot(facts.kind) ? 2 : 1); ++root)
          if (tests::specAccepts(facts, sync, op, /*nranks=*/2))
            visit(facts, sync, op, root);
  }
}

std::vector<CollectiveCase> collectiveCases() {
  // n is the count of the call: allgather's and alltoall's outputs hold n * nranks elements.
  const uint64_t counts[] = {1, 7, 8, 9, 1000, 4097, 65536 + 3, 1 << 20};
  std::vector<CollectiveCase> cases;
  forEachVariant([&](const tests::StdlibSpecFacts& facts, SyncKind sync, ReduceOp op, int root) {
    for (DType dtype : kAllDTypes)
      for (uint64_t count : counts)
        cases.push_back({facts.name, sync, dtype, op, root, count});
    // 8 Mi elements per block in f32 only: the large-size paths are the same per type.
    cases.push_back({facts.name, sync, DType::F32, op, root, uint64_t(8) << 20});
  });
  return cases;
}

class CollectivesGpu : public ::testing::TestWithParam<CollectiveCase> {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

TEST_P(CollectivesGpu, MatchesFloat64Reference) {
  const CollectiveCase& c = GetParam();
  LocalWorld& world = *gputest::world();
  const Variant& variant = variantFor(c.spec, c.dtype, c.op, c.sync, c.root);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, variant.compiled, variant.cubin, c.count);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  RunOptions options;
  options.reference = variant.spec;
  options.count = c.count;
  options.time = false;
  options.specialValues = true;
  options.seed = c.count * 31 + static_cast<uint64_t>(c.dtype) * 7 + uint64_t(c.root);
  Expected<RunReport> report = runAndCheck(world, **instance, variant.compiled, options);
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_TRUE(report->correct) << report->firstMismatches;
  EXPECT_EQ(report->checkedCalls, options.checks);
}

INSTANTIATE_TEST_SUITE_P(Stdlib, CollectivesGpu, ::testing::ValuesIn(collectiveCases()),
                         [](const ::testing::TestParamInfo<CollectiveCase>& info) {
                           return caseName(info.param);
                         });

std::vector<CollectiveCase> stressCases() {
  std::vector<CollectiveCase> cases;
  forEachVariant([&](const tests::StdlibSpecFacts& facts, SyncKind sync, ReduceOp op, int root) {
    if (op != ReduceOp::Sum)
      return;
    for (DType dtype : {DType::F32, DType::BF16})
      cases.push_back({facts.name, sync, dtype, op, root, 1024 + 5});
  });
  return cases;
}

class CollectivesGraphStressGpu : public ::testing::TestWithParam<CollectiveCase> {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

// Calls back to back in one graph, each with its own input and output: a call that starts before
// its peers finished the previous one (copy, flag or epoch reuse) corrupts some call's output.
TEST_P(CollectivesGraphStressGpu, BackToBackCallsAllCorrect) {
  const CollectiveCase& c = GetParam();
  const int calls = 2000;
  LocalWorld& world = *gputest::world();
  const Variant& variant = variantFor(c.spec, c.dtype, c.op, c.sync, c.root);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, variant.compiled, variant.cubin, c.count);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  Expected<RunReport> report =
      runGraphStress(world, **instance, variant.compiled, c.count, calls, /*seed=*/42,
                     variant.spec.get(), /*specialValues=*/true);
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_TRUE(report->correct) << report->firstMismatches;
  EXPECT_EQ(report->checkedCalls, calls);
  RecordProperty("us_per_call", std::to_string(report->usPerOp));
}

INSTANTIATE_TEST_SUITE_P(Stdlib, CollectivesGraphStressGpu, ::testing::ValuesIn(stressCases()),
                         [](const ::testing::TestParamInfo<CollectiveCase>& info) {
                           return caseName(info.param);
                         });

} // namespace
} // namespace collc
