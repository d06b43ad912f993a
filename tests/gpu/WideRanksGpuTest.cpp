// Past 8 ranks on one GPU (SharedGpuWorld): every stdlib spec that declares 16 ranks (the most any
// declares: the proof across calls bounds them, dsl/README.md), with
// every strategy it accepts, as co-resident kernels on GPU 0, checked against the float64
// references. One element type per case (it goes round the specs and strategies), the three
// counts of tests/ManyRankCounts.h (1: every chunk but the first empty; one element in the last
// chunk; a long partial last chunk), three eager calls each, then a CUDA graph of four back-to-back
// calls per rank (pipelined calls of one instance), every call checked against the spec
// interpreted in float64. No special values: their magnitudes near the top of a type are chosen so
// that a sum over 8 ranks stays finite, and 32 ranks' would not.
// 32 ranks is the most one GPU could hold: CUDA gives at most 32 hardware work queues
// (SharedGpuWorld.h), so 64 and 72 ranks are refused there (SharedGpuWorldTest). Add 32 here when
// a stdlib spec declares it.
#include "compiler/Compile.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "tests/StdlibApplicability.h"
#include "tests/StdlibStrategies.h"
#include "tests/gpu/CoResidentCases.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <algorithm>
#include <regex>

namespace collc {
namespace {

constexpr int kWideRankCounts[] = {16};
constexpr int kGraphCalls = 4;

using WideRankCase = gputest::CoResidentCase;
using gputest::caseName;
using gputest::hasRows;

/// Whether the stdlib spec declares `nranks` (`ranks A..B`, else 2..8). Read off the text: the
/// cases are listed in every gpu_tests process, so they must cost little to list.
bool declares(const std::string& specName, int nranks) {
  auto spec = loadSpec(specName);
  if (!spec) {
    consumeError(spec.takeError());
    return false;
  }
  int fewest = 2, most = 8;
  std::smatch match;
  if (std::regex_search(spec->text, match, std::regex(R"(\branks\s+(\d+)\s*\.\.\s*(\d+))"))) {
    fewest = std::stoi(match[1]);
    most = std::stoi(match[2]);
  }
  return fewest <= nranks && nranks <= most;
}

std::vector<WideRankCase> wideRankCases() {
  std::vector<WideRankCase> cases;
  size_t turn = 0;
  for (int nranks : kWideRankCounts)
    for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs) {
      if (!declares(facts.name, nranks))
        continue;
      for (SyncKind sync : tests::kGpuStrategies) {
        const DType dtype = kAllDTypes[turn++ % std::size(kAllDTypes)];
        if (!tests::specAccepts(facts, sync, ReduceOp::Sum))
          continue;
        const int root = hasRoot(facts.kind) ? nranks - 1 - int(turn % 3) : 0;
        cases.push_back({nranks, facts.name, sync, dtype, ReduceOp::Sum, root});
      }
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

// The cases above exist: a stdlib that stopped declaring past 8 ranks would leave the suite empty.
TEST(WideRanksOneGpuCases, CoverEveryWideRankCount) {
  const std::vector<WideRankCase> cases = wideRankCases();
  for (int nranks : kWideRankCounts)
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const WideRankCase& c) {
      return c.nranks == nranks;
    })) << nranks;
}

} // namespace
} // namespace collc
