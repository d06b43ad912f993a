// Past 8 ranks on one GPU (SharedGpuWorld): every stdlib spec with every strategy it accepts, at
// 16, 32, 64 and 72 ranks, as co-resident kernels on GPU 0, checked against the float64
// references. Up to 32 ranks each rank is its own launch on its own stream (one hardware work
// queue each, and CUDA has 32); at 64 and 72 every call of every rank is one cooperative launch of
// the kernel's <kernel>_ranks entry point (runtime/RankLaunch.h). A rank count past the range a
// spec declares is compiled from a copy of the spec that declares it alone, proved at that count
// (tests/SpecForRanks.h; every stdlib spec declares 2..72 now), and the specs with rows run past 16
// with shorter rows and one strategy a count (rowsCaseRuns). One element type per case (it goes
// round the specs and strategies), the three counts of tests/ManyRankCounts.h (1: every chunk but
// the first empty; one element in the last chunk; a partial last chunk, long at 16 ranks), three
// eager calls each, then a CUDA graph of four back-to-back calls (pipelined calls of one instance),
// every call checked against the spec interpreted in float64. No special values: magnitudes near
// the top of a type would overflow a sum over many ranks.
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

/// Past 16 ranks a spec with rows runs with rows of this length instead of its 4096: its counts
/// are R + 1 whole rows for a partial last chunk, and the float64 reference of rows of 4096 (about
/// R^2 n a call) would take minutes a case. The proof covers every row length (dsl/README.md).
constexpr int64_t kWideRowLength = 256;

/// Whether a spec with rows runs `sync` at `nranks`: every strategy it accepts at 16; past 16 one a
/// count, in turn, so that 32, 64 and 72 between them run each of its (three) strategies once.
bool rowsCaseRuns(const tests::StdlibSpecFacts& facts, SyncKind sync, int nranks) {
  if (nranks <= 16)
    return true;
  std::vector<SyncKind> accepted;
  for (SyncKind each : tests::kGpuStrategies)
    if (tests::specAccepts(facts, each, ReduceOp::Sum))
      accepted.push_back(each);
  const int turn = nranks == 32 ? 0 : nranks == 64 ? 1 : 2;
  return !accepted.empty() && accepted[size_t(turn) % accepted.size()] == sync;
}

/// Whether the suite runs `facts` under `sync` at `nranks`.
bool caseRuns(const tests::StdlibSpecFacts& facts, SyncKind sync, int nranks) {
  return tests::specAccepts(facts, sync, ReduceOp::Sum) &&
         (!gputest::hasRows(facts.name) || rowsCaseRuns(facts, sync, nranks));
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
        if (!caseRuns(facts, sync, nranks))
          continue;
        const int root = hasRoot(facts.kind) ? nranks - 1 - int(turn % 3) : 0;
        WideRankCase c{nranks, facts.name, sync, dtype, ReduceOp::Sum, root};
        if (hasRows(facts.name) && nranks > 16)
          c.rowLength = kWideRowLength;
        cases.push_back(c);
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

// Every stdlib spec runs at every wide rank count, with every strategy the GPU matrices run that
// it accepts (a spec with rows: all at 16, one a count past it, each of them once over 32, 64 and
// 72).
TEST(WideRanksOneGpuCases, CoverEverySpecAtEveryWideRankCount) {
  const std::vector<WideRankCase> cases = wideRankCases();
  auto runs = [&](int nranks, const std::string& spec, SyncKind sync) {
    return std::any_of(cases.begin(), cases.end(), [&](const WideRankCase& c) {
      return c.nranks == nranks && c.spec == spec && c.sync == sync;
    });
  };
  int specsWithRows = 0;
  for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs) {
    specsWithRows += hasRows(facts.name);
    for (SyncKind sync : tests::kGpuStrategies) {
      const bool accepted = tests::specAccepts(facts, sync, ReduceOp::Sum);
      int wideCountsRun = 0;
      for (int nranks : kWideRankCounts) {
        if (nranks == 16 || !hasRows(facts.name)) {
          EXPECT_EQ(runs(nranks, facts.name, sync), accepted)
              << nranks << " " << facts.name << " " << name(sync);
        } else {
          wideCountsRun += runs(nranks, facts.name, sync);
        }
      }
      if (hasRows(facts.name)) {
        EXPECT_EQ(wideCountsRun, accepted ? 1 : 0) << facts.name << " " << name(sync);
      }
    }
  }
  EXPECT_EQ(specsWithRows, 5);
  for (const WideRankCase& c : cases)
    EXPECT_EQ(c.rowLength, hasRows(c.spec) && c.nranks > 16 ? kWideRowLength : 0) << caseName(c);
}

} // namespace
} // namespace collc
