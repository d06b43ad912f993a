// Past 8 ranks on one GPU (SharedGpuWorld): every stdlib spec with every strategy it accepts, at
// 16, 32, 64 and 72 ranks, as co-resident kernels on GPU 0, checked against the float64
// references. Up to 32 ranks each rank is its own launch on its own stream (one hardware work
// queue each, and CUDA has 32); at 64 and 72 every call of every rank is one cooperative launch of
// the kernel's <kernel>_ranks entry point (runtime/RankLaunch.h). A rank count past the range a
// spec declares is compiled from a copy of the spec that declares it alone, proved at that count
// (tests/SpecForRanks.h); ten specs stop short of 72 (mostRanksRunHere says where and why). One
// element type per case (it goes round the specs and strategies), the three counts of
// tests/ManyRankCounts.h (1: every chunk but the first empty; one element in the last chunk; a
// partial last chunk, long at 16 ranks), three eager calls each, then a CUDA graph of four
// back-to-back calls (pipelined calls of one instance), every call checked against the spec
// interpreted in float64. No special values: magnitudes near the top of a type would overflow a
// sum over many ranks.
#include "compiler/Compile.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "tests/StdlibApplicability.h"
#include "tests/StdlibStrategies.h"
#include "tests/gpu/CoResidentCases.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <algorithm>

namespace collc {
namespace {

constexpr int kWideRankCounts[] = {16, 32, 64, 72};
constexpr int kGraphCalls = 4;

/// The most ranks a spec runs at here, with the reason; the proof times were measured on two cores
/// before the proof across calls was made faster, not since. allreduce_ring and allreduce_twoshot
/// (stdlib ranges 2..9 and 2..10): copies at 32 ranks exceeded the verifier's default work ("takes
/// more than 50000000 steps of work"; chunk(n) makes the proof run 8 R classes of n, each with work
/// growing as R^2). broadcast_direct and reduce_direct (2..52 and 2..48, each spec says why):
/// copies at 64 ranks took over 5 minutes to prove, and at 72 were refused after 4, against 9 s
/// at 32. allreduce_rmsnorm and the two allreduce_rmsnorm_fp8 and two allreduce_rmsnorm_nvfp4
/// specs (the specs with rows): their counts are whole rows of 4096, R + 1 of them for a partial
/// last chunk, and the reference interpreted on the host for that at 32 ranks and more (about
/// R^2 n a call) would take minutes a case.
int mostRanksRunHere(const std::string& spec) {
  if (spec == "allreduce_ring" || spec == "allreduce_twoshot" || gputest::hasRows(spec))
    return 16;
  if (spec == "broadcast_direct" || spec == "reduce_direct")
    return 32;
  return COLLC_MAX_RANKS;
}

using WideRankCase = gputest::CoResidentCase;
using gputest::caseName;
using gputest::hasRows;

std::vector<WideRankCase> wideRankCases() {
  std::vector<WideRankCase> cases;
  size_t turn = 0;
  for (int nranks : kWideRankCounts)
    for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs)
      for (SyncKind sync : tests::kGpuStrategies) {
        const DType dtype = kAllDTypes[turn++ % std::size(kAllDTypes)];
        if (!tests::specAccepts(facts, sync, ReduceOp::Sum) ||
            nranks > mostRanksRunHere(facts.name))
          continue;
        const int root = hasRoot(facts.kind) ? nranks - 1 - int(turn % 3) : 0;
        cases.push_back({nranks, facts.name, sync, dtype, ReduceOp::Sum, root});
      }
  return cases;
}

const gputest::CoResidentVariant& variantFor(const WideRankCase& c) {
  static gputest::CoResidentVariants variants(wideRankCases);
  return variants.of(c);
}

class WideRanksOneGpu : public gputest::SharedGpuTest<WideRankCase> {};

TEST_P(WideRanksOneGpu, EveryCallMatchesFloat64Reference) {
  const WideRankCase& c = GetParam();
  const gputest::CoResidentVariant& variant = variantFor(c);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  const CompiledCollective& compiled = variant.compiled;
  ASSERT_LE(compiled.launch.blocks * c.nranks, multiprocessorCount(0));
  ASSERT_EQ(world_->launchesRanksAsOne(), c.nranks > kMostWorkQueues);
  const bool rows = compiled.rowLength > 0;
  ASSERT_EQ(rows, hasRows(c.spec));
  const uint64_t caseSeed = uint64_t(c.nranks) * 1000003 + uint64_t(c.dtype) * 101 +
                            uint64_t(c.sync) * 11 + uint64_t(c.root);
  gputest::checkCountsThenGraph(*world_, variant, c.nranks, caseSeed, /*specialValues=*/false,
                                kGraphCalls);
}

INSTANTIATE_TEST_SUITE_P(Stdlib, WideRanksOneGpu, ::testing::ValuesIn(wideRankCases()),
                         [](const ::testing::TestParamInfo<WideRankCase>& info) {
                           return caseName(info.param);
                         });

// Every stdlib spec runs at every wide rank count up to mostRanksRunHere, with every strategy
// the GPU matrices run that it accepts; every other at all four.
TEST(WideRanksOneGpuCases, CoverEverySpecAtEveryWideRankCount) {
  const std::vector<WideRankCase> cases = wideRankCases();
  int restricted = 0;
  for (int nranks : kWideRankCounts)
    for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs)
      for (SyncKind sync : tests::kGpuStrategies) {
        const bool runs = tests::specAccepts(facts, sync, ReduceOp::Sum) &&
                          nranks <= mostRanksRunHere(facts.name);
        restricted += nranks > mostRanksRunHere(facts.name);
        EXPECT_EQ(std::any_of(cases.begin(), cases.end(),
                              [&](const WideRankCase& c) {
                                return c.nranks == nranks && c.spec == facts.name && c.sync == sync;
                              }),
                  runs)
            << nranks << " " << facts.name << " " << name(sync);
      }
  // Five specs at three rank counts (the ring, the two-shot and the three with rows) and two at
  // two, four strategies each: nothing else is left out.
  EXPECT_EQ(restricted, (5 * 3 + 2 * 2) * 4);
}

} // namespace
} // namespace collc
