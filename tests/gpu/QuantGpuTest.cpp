// AllReduce + residual add + RMSNorm quantized to FP8 (stdlib/allreduce_rmsnorm_fp8.coll) on one
// GPU: 2 to 8 co-resident ranks (SharedGpuWorld), every strategy the spec accepts, hidden sizes
// 2048, 4096, 5120 and 8192, 1 to 64 tokens. Every call's FP8 output and residual_out are checked
// against the spec interpreted in float64 (tools/harness/InterpretedReference.h): the quantized
// codes bit for bit except where the value lies within the fp32 computation's error of a rounding
// boundary (counted, and printed). Then a graph of back-to-back calls, each with its own buffers.
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
constexpr int64_t kHiddenSizes[] = {2048, 4096, 5120, 8192};
constexpr uint64_t kTokens[] = {1, 3, 17, 64};
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

const gputest::CoResidentVariant& variantFor(const QuantCase& c) {
  static gputest::CoResidentVariants variants(quantCases);
  return variants.of(c);
}

class QuantOneGpu : public gputest::SharedGpuTest<QuantCase> {};

TEST_P(QuantOneGpu, EveryCallMatchesFloat64ReferenceBitForBit) {
  const QuantCase& c = GetParam();
  const gputest::CoResidentVariant& variant = variantFor(c);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  const CompiledCollective& compiled = variant.compiled;
  ASSERT_EQ(compiled.rowLength, c.rowLength);
  ASSERT_EQ(compiled.outputType(), ElementType::F8E4M3);
  const uint64_t maxCount = kTokens[std::size(kTokens) - 1] * uint64_t(c.rowLength);
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(*world_, compiled, variant.cubin, maxCount);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  const uint64_t caseSeed = uint64_t(c.nranks) * 1000003 + uint64_t(c.rowLength) * 101 +
                            uint64_t(c.dtype) * 11 + uint64_t(c.sync);
  uint64_t checked = 0, near = 0;
  for (uint64_t tokens : kTokens) {
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

} // namespace
} // namespace collc
