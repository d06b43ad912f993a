// The last calls of an instance whose kernel sends LL packets (ll, ll128_atomic), as co-resident
// ranks on GPU 0. Packets carry the epoch's low 32 bits, so the kernel refuses every call past
// COLLC_LAST_PACKET_EPOCH. Each case seeds the instance's epoch counters just short of it (a hook
// for tests), runs two large calls, then the last two calls with a smaller count (every element
// checked: what the large calls left in both scratch copies must not be taken for theirs), then
// one more call, which every rank refuses: synchronize reports it, and keeps reporting it. A
// variant of ll128_atomic without packets (lines only) has no last call: its next two calls are
// checked.
#include "runtime/CoResidency.h"
#include "runtime/CollectiveInstance.h"
#include "tests/ManyRankCounts.h"
#include "tests/StdlibApplicability.h"
#include "tests/gpu/CoResidentCases.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <algorithm>
#include <string>
#include <vector>

namespace collc {
namespace {

using BoundaryCase = gputest::CoResidentCase;

std::vector<BoundaryCase> boundaryCases() {
  std::vector<BoundaryCase> cases;
  for (int nranks : {2, 3})
    for (const char* spec : {"allreduce_oneshot", "allreduce_twoshot", "allgather_direct"})
      for (SyncKind sync : {SyncKind::LL, SyncKind::LL128Atomic}) {
        const tests::StdlibSpecFacts* facts = tests::findStdlibSpec(spec);
        if (facts && tests::specAccepts(*facts, sync, ReduceOp::Sum))
          cases.push_back({nranks, spec, sync, DType::F32, ReduceOp::Sum, 0});
      }
  return cases;
}

const gputest::CoResidentVariant& variantFor(const BoundaryCase& c) {
  static gputest::CoResidentVariants variants(boundaryCases);
  return variants.of(c);
}

/// `calls` eager calls of `count`, every element of each checked.
void runChecked(SharedGpuWorld& world, CollectiveInstance& instance,
                const gputest::CoResidentVariant& variant, uint64_t count, int calls,
                uint64_t seed) {
  RunOptions options;
  options.reference = variant.spec;
  options.count = count;
  options.time = false;
  options.checks = calls;
  options.seed = seed;
  Expected<RunReport> report = runAndCheck(world, instance, variant.compiled, options);
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_TRUE(report->correct) << report->firstMismatches;
  EXPECT_EQ(report->checkedCalls, calls);
}

/// One call past the last: refused on every rank, and reported by synchronize.
void expectRefused(SharedGpuWorld& world, CollectiveInstance& instance,
                   const gputest::CoResidentVariant& variant, uint64_t count) {
  const CompiledCollective& compiled = variant.compiled;
  RunOptions options;
  options.reference = variant.spec;
  options.count = count;
  options.time = false;
  options.checks = 1;
  Expected<RunReport> report = runAndCheck(world, instance, compiled, options);
  ASSERT_FALSE(bool(report)) << "a call past call " << COLLC_LAST_PACKET_EPOCH << " ran";
  const std::string message = toString(report.takeError());
  EXPECT_NE(message.find("refused call 4294967296: this instance has run its 4294967295 calls"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("recreate the instance"), std::string::npos) << message;
  for (int r = 0; r < compiled.nranks; ++r)
    EXPECT_NE(message.find("rank " + std::to_string(r) + " refused call"), std::string::npos)
        << message;
}

class EpochBoundaryOneGpu : public gputest::SharedGpuTest<BoundaryCase> {};

TEST_P(EpochBoundaryOneGpu, LastCallsAreRightAndTheNextIsRefused) {
  const BoundaryCase& c = GetParam();
  const gputest::CoResidentVariant& variant = variantFor(c);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  const CompiledCollective& compiled = variant.compiled;
  const std::vector<uint64_t> counts = tests::manyRankCounts(c.nranks);
  const uint64_t large = *std::max_element(counts.begin(), counts.end());
  const uint64_t small = counts[1];
  ASSERT_LT(small, large);
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(*world_, compiled, variant.cubin, large);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());

  // Calls L-3 and L-2 (L = COLLC_LAST_PACKET_EPOCH) fill both scratch copies with large packets;
  // calls L-1 and L, smaller, find them there.
  Error seeded = (*instance)->seedEpochsForTests(COLLC_LAST_PACKET_EPOCH - 4);
  ASSERT_FALSE(bool(seeded)) << toString(std::move(seeded));
  {
    SCOPED_TRACE("calls 4294967292 and 4294967293 of " + std::to_string(large));
    runChecked(*world_, **instance, variant, large, 2, 11);
  }
  {
    SCOPED_TRACE("calls 4294967294 and 4294967295 of " + std::to_string(small));
    runChecked(*world_, **instance, variant, small, 2, 12);
  }
  // A variant without packets (ll128_atomic's one-shot: lines only) has no last call.
  if (compiled.cudaSource.find("refuse_call_past_last(params, epoch);") == std::string::npos) {
    SCOPED_TRACE("calls 4294967296 and 4294967297 of " + std::to_string(small) + ", no packets");
    runChecked(*world_, **instance, variant, small, 2, 13);
    return;
  }
  {
    SCOPED_TRACE("call 4294967296");
    expectRefused(*world_, **instance, variant, small);
  }
  {
    SCOPED_TRACE("a call after it");
    expectRefused(*world_, **instance, variant, large);
  }
}

INSTANTIATE_TEST_SUITE_P(Stdlib, EpochBoundaryOneGpu, ::testing::ValuesIn(boundaryCases()),
                         [](const ::testing::TestParamInfo<BoundaryCase>& info) {
                           return gputest::caseName(info.param);
                         });

} // namespace
} // namespace collc
