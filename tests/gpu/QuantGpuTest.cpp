// AllReduce + residual add + RMSNorm quantized to FP8 (stdlib/allreduce_rmsnorm_fp8.coll) on one
// GPU: 2 to 8 co-resident ranks (SharedGpuWorld), every strategy the spec accepts, hidden sizes
// 2048, 4096, 5120 and 8192, 1 to 64 tokens. Every call's FP8 output and residual_out are checked
// against the spec interpreted in float64 (tools/harness/InterpretedReference.h): the quantized
// codes bit for bit except where the value lies within the fp32 computation's error of a rounding
// boundary (counted, and printed). Then a graph of back-to-back calls, each with its own buffers.
// The per-token spec (allreduce_rmsnorm_fp8_per_token.coll, suite PerToken) runs the same check
// at 2, 4 and 8 ranks under each strategy it accepts, the hidden sizes taken in turn, 1, 7 and 64
// tokens: its written scales are checked with the outputs (each within the reference's bound).
// The NVFP4 specs (allreduce_rmsnorm_nvfp4.coll, swizzled block scales, and _linear, suite Nvfp4)
// run the same check at 2, 4 and 8 ranks under each strategy, the layouts and hidden sizes taken
// in turn, 1, 7 and 64 tokens: the e2m1 codes and the written block scales bit for bit except
// within the fp32 computation's error of a rounding boundary (counted), then a graph of calls.
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/SharedGpuWorld.h"
#include "tests/StdlibApplicability.h"
#include "tests/StdlibStrategies.h"
#include "tests/gpu/CoResidentCases.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <algorithm>
#include <iostream>

namespace collc {
namespace {

constexpr const char* kSpec = "allreduce_rmsnorm_fp8";
constexpr const char* kPerTokenSpec = "allreduce_rmsnorm_fp8_per_token";
constexpr const char* kNvfp4Specs[] = {"allreduce_rmsnorm_nvfp4", "allreduce_rmsnorm_nvfp4_linear"};
constexpr int64_t kHiddenSizes[] = {2048, 4096, 5120, 8192};
constexpr uint64_t kTokens[] = {1, 3, 17, 64};
constexpr uint64_t kPerTokenTokens[] = {1, 7, 64};
constexpr int kGraphCalls = 4;

using QuantCase = gputest::CoResidentCase;

/// Every rank count, hidden size and strategy the spec accepts; the element type varies with them
/// so that each appears without multiplying the matrix.
std::vector<QuantCase> quantCases() {
  const tests::StdlibSpecFacts* facts = tests::findStdlibSpec(kSpec);
  std::vector<QuantCase> cases;
  if (!facts)
    return cases;
  for (int nranks = 2; nranks <= 8; ++nranks)
    for (size_t h = 0; h < std::size(kHiddenSizes); ++h)
      for (SyncKind sync : tests::kGpuStrategies) {
        if (!tests::specAccepts(*facts, sync, ReduceOp::Sum))
          continue;
        const DType dtype = kAllDTypes[(size_t(nranks) + h) % std::size(kAllDTypes)];
        cases.push_back({nranks, kSpec, sync, dtype, ReduceOp::Sum, 0, kHiddenSizes[h]});
      }
  return cases;
}

/// The per-token spec at 2, 4 and 8 ranks under each strategy it accepts, one hidden size a case
/// in turn (every size appears): 9 kernel compiles, so that the suite stays near a minute.
std::vector<QuantCase> perTokenCases() {
  const tests::StdlibSpecFacts* facts = tests::findStdlibSpec(kPerTokenSpec);
  std::vector<QuantCase> cases;
  if (!facts)
    return cases;
  size_t next = 0;
  for (int nranks : {2, 4, 8})
    for (SyncKind sync : tests::kGpuStrategies) {
      if (!tests::specAccepts(*facts, sync, ReduceOp::Sum))
        continue;
      const int64_t hidden = kHiddenSizes[next % std::size(kHiddenSizes)];
      const DType dtype = kAllDTypes[next % std::size(kAllDTypes)];
      ++next;
      cases.push_back({nranks, kPerTokenSpec, sync, dtype, ReduceOp::Sum, 0, hidden});
    }
  return cases;
}

/// The NVFP4 specs at 2, 4 and 8 ranks under each strategy they accept, the layout (swizzled or
/// linear) and the hidden size a case in turn: 9 kernel compiles, both layouts under every
/// strategy across the rank counts.
std::vector<QuantCase> nvfp4Cases() {
  std::vector<QuantCase> cases;
  size_t next = 0;
  for (int nranks : {2, 4, 8})
    for (SyncKind sync : tests::kGpuStrategies) {
      const char* spec = kNvfp4Specs[next % std::size(kNvfp4Specs)];
      const tests::StdlibSpecFacts* facts = tests::findStdlibSpec(spec);
      if (!facts || !tests::specAccepts(*facts, sync, ReduceOp::Sum))
        continue;
      const int64_t hidden = kHiddenSizes[next % std::size(kHiddenSizes)];
      const DType dtype = kAllDTypes[next % std::size(kAllDTypes)];
      ++next;
      cases.push_back({nranks, spec, sync, dtype, ReduceOp::Sum, 0, hidden});
    }
  return cases;
}

bool isNvfp4(const QuantCase& c) {
  return std::string(c.spec) == kNvfp4Specs[0] || std::string(c.spec) == kNvfp4Specs[1];
}

const gputest::CoResidentVariant& variantFor(const QuantCase& c) {
  static gputest::CoResidentVariants variants(quantCases);
  static gputest::CoResidentVariants perToken(perTokenCases);
  static gputest::CoResidentVariants nvfp4(nvfp4Cases);
  if (isNvfp4(c))
    return nvfp4.of(c);
  return std::string(c.spec) == kPerTokenSpec ? perToken.of(c) : variants.of(c);
}

class QuantOneGpu : public gputest::SharedGpuTest<QuantCase> {};

TEST_P(QuantOneGpu, EveryCallMatchesFloat64ReferenceBitForBit) {
  const QuantCase& c = GetParam();
  const gputest::CoResidentVariant& variant = variantFor(c);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  const CompiledCollective& compiled = variant.compiled;
  ASSERT_EQ(compiled.rowLength, c.rowLength);
  ASSERT_EQ(compiled.outputType(), isNvfp4(c) ? ElementType::F4E2M1 : ElementType::F8E4M3);
  const bool fewerTokens = std::string(c.spec) == kPerTokenSpec || isNvfp4(c);
  const std::vector<uint64_t> tokenCounts =
      fewerTokens ? std::vector<uint64_t>(std::begin(kPerTokenTokens), std::end(kPerTokenTokens))
                  : std::vector<uint64_t>(std::begin(kTokens), std::end(kTokens));
  const uint64_t maxCount = tokenCounts.back() * uint64_t(c.rowLength);
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(*world_, compiled, variant.cubin, maxCount);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  const uint64_t caseSeed = uint64_t(c.nranks) * 1000003 + uint64_t(c.rowLength) * 101 +
                            uint64_t(c.dtype) * 11 + uint64_t(c.sync);
  uint64_t checked = 0, near = 0;
  for (uint64_t tokens : tokenCounts) {
    SCOPED_TRACE("tokens " + std::to_string(tokens));
    RunOptions options;
    options.reference = variant.spec;
    options.count = tokens * uint64_t(c.rowLength);
    options.time = false;
    options.seed = caseSeed + tokens;
    Expected<RunReport> report = runAndCheck(*world_, **instance, compiled, options);
    ASSERT_TRUE(bool(report)) << toString(report.takeError());
    EXPECT_TRUE(report->correct) << report->firstMismatches;
    EXPECT_EQ(report->checkedCalls, options.checks);
    EXPECT_TRUE(report->quantized);
    checked += report->checkedElements;
    near += report->nearRoundingBoundary;
  }
  // Near a boundary either code passes. The reference quantizes the rows the kernel wrote to
  // residual_out (what its norm read), so the bound is the norm's float steps for every T and such
  // elements are rare.
  std::cout << "  " << near << " quantized elements near a rounding boundary; " << checked
            << " elements checked\n";
  EXPECT_LT(near * 100, checked);
  Expected<RunReport> graph = runGraphStress(*world_, **instance, compiled, maxCount, kGraphCalls,
                                             caseSeed, variant.spec.get());
  ASSERT_TRUE(bool(graph)) << toString(graph.takeError());
  EXPECT_TRUE(graph->correct) << graph->firstMismatches;
  EXPECT_EQ(graph->checkedCalls, kGraphCalls);
}

INSTANTIATE_TEST_SUITE_P(Stdlib, QuantOneGpu, ::testing::ValuesIn(quantCases()),
                         [](const ::testing::TestParamInfo<QuantCase>& info) {
                           return gputest::caseName(info.param);
                         });
INSTANTIATE_TEST_SUITE_P(PerToken, QuantOneGpu, ::testing::ValuesIn(perTokenCases()),
                         [](const ::testing::TestParamInfo<QuantCase>& info) {
                           return gputest::caseName(info.param);
                         });
INSTANTIATE_TEST_SUITE_P(Nvfp4, QuantOneGpu, ::testing::ValuesIn(nvfp4Cases()),
                         [](const ::testing::TestParamInfo<QuantCase>& info) {
                           return gputest::caseName(info.param);
                         });

} // namespace
} // namespace collc
