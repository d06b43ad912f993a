// The stdlib's in-place and aliasing claims, per strategy (tests/StdlibAliases.h), as the compiler
// states them of each variant it compiles: every spec, every strategy it accepts, 2, 3, 5 and 8
// ranks, with the spec's launch shape and with the blocks the one-GPU matrix compiles it with on
// a GPU of 132 multiprocessors. The GPU matrix (tests/gpu/InPlaceGpuTest.cpp) runs what these
// allow in place and checks every element.
#include "tests/StdlibAliases.h"

#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "runtime/CoResidency.h"

#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>

namespace collc {
namespace {

constexpr int kRankCounts[] = {2, 3, 5, 8};
constexpr int kMultiprocessors = 132; // an H200's

TEST(StdlibAliases, EverySpecHasItsClaims) {
  for (const tests::StdlibSpecFacts& spec : tests::kStdlibSpecs)
    EXPECT_TRUE(tests::findStdlibAliases(spec.name)) << spec.name;
  EXPECT_EQ(std::size(tests::kStdlibAliases), std::size(tests::kStdlibSpecs));
}

TEST(StdlibAliases, EachStrategysLoweredProgramAllowsWhatTheTableSays) {
  for (const tests::StdlibSpecFacts& spec : tests::kStdlibSpecs) {
    const tests::StdlibAliasFacts& claims = *tests::findStdlibAliases(spec.name);
    auto source = loadSpec(spec.name);
    ASSERT_TRUE(bool(source)) << toString(source.takeError());
    for (SyncKind sync : tests::kGpuStrategies) {
      if (!tests::specAccepts(spec, sync, ReduceOp::Sum)) {
        EXPECT_FALSE((claims.inPlace | claims.auxAliased | claims.together) & tests::bit(sync))
            << spec.name << " claims something of " << name(sync) << ", which it refuses";
        continue;
      }
      for (int nranks : kRankCounts) {
        CompileOptions options;
        options.sync = sync;
        options.nranks = nranks;
        options.formatSource = false;
        // The dtype and operator vary with the rank count: the claims hold for each.
        options.dtype = kAllDTypes[size_t(nranks) % std::size(kAllDTypes)];
        if (reduces(spec.kind) && tests::strategyApplies(sync, ReduceOp::Max) &&
            std::string(spec.name) != "allreduce_rmsnorm")
          options.op = kAllReduceOps[size_t(nranks) % std::size(kAllReduceOps)];
        for (bool coResident : {false, true}) {
          std::string diagnostics;
          DiagnosticText sink(diagnostics);
          auto compiled = compileCollective(*source, options, sink);
          ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError()) << diagnostics;
          const std::string where = std::string(spec.name) + " " + std::string(name(sync)) +
                                    " at " + std::to_string(nranks) + " ranks, " +
                                    std::to_string(compiled->launch.blocks) + " blocks";
          const unsigned bit = tests::bit(sync);
          EXPECT_EQ(compiled->inPlace, bool(claims.inPlace & bit)) << where;
          EXPECT_EQ(!compiled->auxAliases.empty(), bool(claims.auxAliased & bit)) << where;
          if (compiled->inPlace && !compiled->auxAliases.empty()) {
            EXPECT_EQ(compiled->aliasesTogether, bool(claims.together & bit)) << where;
          }
          const int most = maxCoResidentBlocksPerRank(kMultiprocessors, nranks);
          if (coResident || compiled->launch.blocks <= most)
            break; // the one-GPU matrix compiles it as it is
          options.blocks = most;
        }
      }
    }
  }
}

} // namespace
} // namespace collc
