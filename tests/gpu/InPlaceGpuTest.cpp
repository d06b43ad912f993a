// In place on one GPU (SharedGpuWorld): every stdlib spec, with every strategy whose lowered
// program the verifier proved for it (tests/StdlibAliases.h), run in place (out is in's memory),
// with its aux pairs aliased (the fused RMSNorm's residual_out as residual), and both at once
// where they were proved together; 2, 3, 5 and 8 co-resident ranks, one element type per case in
// turn, and for the reducing specs the operator in turn. Each way of sharing runs three counts
// (tests/ManyRankCounts.h) of three eager calls, a timed graph of four in-place calls whose last
// is checked, and a graph of four back-to-back in-place calls on buffers of their own, every call
// and element checked against the float64 reference of copies of its inputs taken before it. Each
// case first checks that the variant it runs states the table's claims (the compile-time test of
// all of them is tests/compiler/StdlibAliasesTest.cpp). Timings are not looked at.
#include "compiler/Compile.h"
#include "runtime/CoResidency.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "tests/ManyRankCounts.h"
#include "tests/StdlibAliases.h"
#include "tests/gpu/CoResidentCases.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <algorithm>
#include <ostream>

namespace collc {
namespace {

constexpr int kRankCounts[] = {2, 3, 5, 8};
constexpr int kGraphCalls = 4;

using InPlaceCase = gputest::CoResidentCase;
using gputest::caseName;
using gputest::hasRows;

/// The ways of sharing memory the claims allow the strategy: in place, the aux pairs, both.
std::vector<BufferSharing> sharingsOf(const tests::StdlibAliasFacts& claims, SyncKind sync) {
  const unsigned bit = tests::bit(sync);
  std::vector<BufferSharing> sharings;
  if (claims.inPlace & bit)
    sharings.push_back({true, false});
  if (claims.auxAliased & bit)
    sharings.push_back({false, true});
  // Together: every pair the variant allows at once, in place among them only where it is one.
  // Without in place that is the aux sharing above, already run.
  if ((claims.together & bit) && (claims.inPlace & bit) && (claims.auxAliased & bit))
    sharings.push_back({true, true});
  return sharings;
}

std::vector<InPlaceCase> inPlaceCases() {
  std::vector<InPlaceCase> cases;
  size_t turn = 0; // the element type goes round from case to case
  for (int nranks : kRankCounts)
    for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs)
      for (size_t s = 0; s < std::size(tests::kGpuStrategies); ++s) {
        const SyncKind sync = tests::kGpuStrategies[s];
        if (!tests::specAccepts(facts, sync, ReduceOp::Sum) ||
            sharingsOf(*tests::findStdlibAliases(facts.name), sync).empty())
          continue;
        const DType dtype = kAllDTypes[turn++ % std::size(kAllDTypes)];
        ReduceOp op = ReduceOp::Sum;
        if (reduces(facts.kind) && !hasRows(facts.name))
          op = kAllReduceOps[(size_t(nranks) + s) % std::size(kAllReduceOps)];
        if (!tests::strategyApplies(sync, op))
          op = ReduceOp::Sum;
        const int root = hasRoot(facts.kind) ? int((turn + 1) % size_t(nranks)) : 0;
        cases.push_back({nranks, facts.name, sync, dtype, op, root});
      }
  return cases;
}

const gputest::CoResidentVariant& variantFor(const InPlaceCase& c) {
  static gputest::CoResidentVariants variants(inPlaceCases);
  return variants.of(c);
}

class InPlaceOneGpu : public gputest::SharedGpuTest<InPlaceCase> {};

TEST_P(InPlaceOneGpu, EveryCallInPlaceMatchesFloat64Reference) {
  const InPlaceCase& c = GetParam();
  const gputest::CoResidentVariant& variant = variantFor(c);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  const CompiledCollective& compiled = variant.compiled;
  // The claims this case runs on, stated by the very variant it runs.
  const tests::StdlibAliasFacts& claims = *tests::findStdlibAliases(c.spec);
  const unsigned bit = tests::bit(c.sync);
  ASSERT_EQ(compiled.inPlace, bool(claims.inPlace & bit));
  ASSERT_EQ(!compiled.auxAliases.empty(), bool(claims.auxAliased & bit));
  if (claims.together & bit) {
    ASSERT_TRUE(compiled.aliasesTogether);
  }

  const bool rows = compiled.rowLength > 0;
  const std::vector<uint64_t> counts = gputest::coResidentCounts(c.nranks, compiled);
  const uint64_t maxCount = *std::max_element(counts.begin(), counts.end());
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(*world_, compiled, variant.cubin, maxCount);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());

  const uint64_t caseSeed = uint64_t(c.nranks) * 1000003 + uint64_t(c.dtype) * 101 +
                            uint64_t(c.sync) * 11 + uint64_t(c.op) * 7 + uint64_t(c.root) + 77;
  for (const BufferSharing& sharing : sharingsOf(claims, c.sync)) {
    SCOPED_TRACE(describe(sharing));
    for (uint64_t count : counts) {
      SCOPED_TRACE("count " + std::to_string(count));
      RunOptions options;
      options.reference = variant.spec;
      options.count = count;
      options.time = false;
      options.specialValues = !rows; // one NaN poisons a whole row's norm
      options.seed = caseSeed + count;
      options.sharing = sharing;
      Expected<RunReport> report = runAndCheck(*world_, **instance, compiled, options);
      ASSERT_TRUE(bool(report)) << toString(report.takeError());
      EXPECT_TRUE(report->correct) << report->firstMismatches;
      EXPECT_EQ(report->checkedCalls, options.checks);
    }
    {
      // The timed path: graph calls in place one after another, the last on fresh inputs.
      SCOPED_TRACE("timed graph of " + std::to_string(kGraphCalls) + " calls");
      RunOptions options;
      options.reference = variant.spec;
      options.count = counts[1];
      options.checks = 1;
      options.graphOps = kGraphCalls;
      options.replays = 1;
      options.seed = caseSeed + 3;
      options.sharing = sharing;
      Expected<RunReport> report = runAndCheck(*world_, **instance, compiled, options);
      ASSERT_TRUE(bool(report)) << toString(report.takeError());
      EXPECT_TRUE(report->correct) << report->firstMismatches;
      EXPECT_EQ(report->checkedCalls, 2);
    }
    // Calls back to back in one graph per rank, each in place on buffers of its own.
    SCOPED_TRACE("graph of " + std::to_string(kGraphCalls) + " calls of " +
                 std::to_string(counts.back()));
    Expected<RunReport> report =
        runGraphStress(*world_, **instance, compiled, counts.back(), kGraphCalls, caseSeed,
                       variant.spec.get(), !rows, sharing);
    ASSERT_TRUE(bool(report)) << toString(report.takeError());
    EXPECT_TRUE(report->correct) << report->firstMismatches;
    EXPECT_EQ(report->checkedCalls, kGraphCalls);
  }
}

INSTANTIATE_TEST_SUITE_P(Stdlib, InPlaceOneGpu, ::testing::ValuesIn(inPlaceCases()),
                         [](const ::testing::TestParamInfo<InPlaceCase>& info) {
                           return caseName(info.param);
                         });

// The runtime refuses what the variant does not allow, whatever the harness asks: an in-place
// launch of the fused RMSNorm under ll, at the launch itself.
TEST(InPlaceOneGpuRefusals, TheRuntimeRefusesAnInPlaceLaunchTheVariantDoesNotAllow) {
  std::string skip, error;
  SharedGpuWorld* world = gputest::sharedGpuWorld(2, skip, error);
  if (!world) {
    if (!error.empty())
      FAIL() << error;
    GTEST_SKIP() << skip;
  }
  const InPlaceCase c{2, "allreduce_rmsnorm", SyncKind::LL, DType::BF16, ReduceOp::Sum, 0};
  gputest::CoResidentVariant variant = gputest::compileCoResident(c, multiprocessorCount(0));
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  ASSERT_FALSE(variant.compiled.inPlace);
  JitOptions jit;
  jit.arch = gpuArch(0);
  Expected<JitResult> cubin =
      compileCuda(variant.compiled.cudaSource, variant.compiled.kernelName, JitOutput::Cubin, jit);
  ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
  const uint64_t count = uint64_t(variant.compiled.rowLength);
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(*world, variant.compiled, cubin->image, count);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  // The harness says so before anything runs.
  RunOptions options;
  options.reference = variant.spec;
  options.count = count;
  options.time = false;
  options.sharing.inPlace = true;
  Expected<RunReport> report = runAndCheck(*world, **instance, variant.compiled, options);
  ASSERT_FALSE(bool(report));
  const std::string message = toString(report.takeError());
  EXPECT_NE(message.find("the verifier did not prove the ll variant's lowered program"),
            std::string::npos)
      << message;
  // And the runtime at the launch, with buffers of the right sizes (never run: refused first).
  Expected<DeviceBuffer> buffer =
      DeviceBuffer::allocate(0, count * sizeOf(variant.compiled.dtype) * 4);
  ASSERT_TRUE(bool(buffer)) << toString(buffer.takeError());
  char* base = buffer->as<char>();
  const uint64_t bytes = count * sizeOf(variant.compiled.dtype);
  std::vector<void*> aux = {base + bytes, base + 2 * bytes, base + 3 * bytes};
  Error launched = (*instance)->launch(0, base, base, aux, count, world->stream(0));
  ASSERT_TRUE(bool(launched));
  const std::string refused = toString(std::move(launched));
  EXPECT_NE(refused.find("buffers 'in' and 'out' are the same memory"), std::string::npos)
      << refused;
}

} // namespace
} // namespace collc
