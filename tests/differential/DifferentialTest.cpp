// Differential testing on the CPU: random valid specs (SpecGenerator.h), each lowered with every
// strategy that accepts it at several rank counts, interpreted in float64: the spec against its
// kind's result, and every lowered program against the spec (InterpretedCheck.h), also in place
// and with aliased aux buffers where the variant's own proof allows it. Under barrier each spec
// of a reducing kind compiles for min too, unless the generator wrote something that holds for
// sum only, which must then be refused at the statement it names. The GPU counterpart runs the
// same specs' kernels (tests/gpu/DifferentialGpuTest.cpp).
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/ir/IR.h"
#include "tests/StdlibStrategies.h"
#include "tests/differential/FirstError.h"
#include "tests/differential/InterpretedCheck.h"
#include "tests/differential/SpecGenerator.h"

#include <gtest/gtest.h>
#include <iostream>
#include <llvm/Support/raw_ostream.h>

namespace collc::differential {
namespace {

// Seeds run here: every template comes up several times (SpecGenerator.cpp).
constexpr uint64_t kSeeds = 60;

std::vector<int> rankCounts(const CheckReport& spec) {
  std::vector<int> counts = {spec.minRanks};
  for (int r : {3, 5, spec.maxRanks})
    if (r > counts.back() && r <= spec.maxRanks)
      counts.push_back(r);
  return counts;
}

TEST(Differential, GeneratedSpecsInterpretedAgreeWithTheirKindAndEveryLowering) {
  int specs = 0, refused = 0, variants = 0, sumOnlyRefused = 0, auxUnderMin = 0;
  InterpretedCalls calls;
  // Every featured template too, which these seeds could miss.
  const std::vector<uint64_t> seeds = seedsCovering(kSeeds, featuredShapes());
  for (uint64_t seed : seeds) {
    const GeneratedSpec generated = generateSpec(seed);
    const SpecSource source{generated.name + ".coll", generated.text};
    std::ostream sink(nullptr);
    CheckReport report;
    if (Error error = checkSpec(source, sink, &report)) {
      // GeneratorTest reports refusals; only accepted specs are compared here.
      consumeError(std::move(error));
      ++refused;
      continue;
    }
    ++specs;
    bool reduces = true;
    for (int nranks : rankCounts(report))
      for (SyncKind sync : tests::kImplementedStrategies)
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min}) {
          if (op != ReduceOp::Sum && (!reduces || sync != SyncKind::Barrier))
            continue;
          CompileOptions options;
          options.nranks = nranks;
          options.sync = sync;
          options.op = op;
          options.experimentalLL128 = true;
          std::string diagnostics;
          DiagnosticText out(diagnostics);
          // The aliases' proofs for sum and up to 5 ranks only, to bound the test's time.
          auto programs =
              lowerVariantPrograms(source, options, out, op == ReduceOp::Sum && nranks <= 5);
          if (op != ReduceOp::Sum && !generated.sumOnlyAt.empty()) {
            // '+' of inputs (or atomic_add): refused for min at the statement the generator
            // wrote it in.
            ASSERT_FALSE(bool(programs)) << "seed " << seed << " compiled for min, but it holds "
                                         << "for sum only at " << generated.sumOnlyAt << "\n"
                                         << generated.text;
            consumeError(programs.takeError());
            const std::string first = firstError(out.str());
            EXPECT_EQ(first.rfind(source.bufferName + ":" + generated.sumOnlyAt + ": error: ", 0),
                      0u)
                << "seed " << seed << ": " << first;
            EXPECT_NE(first.find("op 'min'"), std::string::npos) << first;
            ++sumOnlyRefused;
            continue;
          }
          // Every other spec holds for every operator: barrier lowers it for min as for sum.
          ASSERT_TRUE(op == ReduceOp::Sum || bool(programs))
              << "seed " << seed << " (" << generated.shape << "): " << out.str() << "\n"
              << generated.text;
          if (!programs) { // a strategy this spec cannot use
            consumeError(programs.takeError());
            continue;
          }
          ++variants;
          reduces = collc::reduces(programs->spec->kind);
          if (op != ReduceOp::Sum)
            for (const ir::Buffer& buffer : programs->spec->buffers)
              if (buffer.role == ir::BufferRole::Aux) { // reduce(...) + aux, under min
                ++auxUnderMin;
                break;
              }
          const std::string failure = checkInterpreted(*programs, options, calls);
          ASSERT_TRUE(failure.empty())
              << "seed " << seed << " (" << generated.shape << "): " << failure << "\n"
              << generated.text;
        }
  }
  std::cout << "differential: " << specs << " generated specs (" << refused << " refused), "
            << variants << " variants, " << calls.calls << " calls interpreted and compared, "
            << calls.inPlace << " in place, " << calls.aliased << " with aliased aux buffers; "
            << sumOnlyRefused << " sum-only variants refused for min, " << auxUnderMin
            << " variants with aux data compiled for min; the proof's domain and the reference's "
            << "agreed on " << calls.agreed.summed << " elements' sources, "
            << calls.agreed.unwritten << " unwritten, " << calls.agreed.rowWise << " row-wise\n";
  EXPECT_GE(specs, int(seeds.size()) * 7 / 10);
  EXPECT_GT(variants, specs);
  EXPECT_GT(sumOnlyRefused, 0);
  EXPECT_GT(auxUnderMin, 0);
  EXPECT_GT(calls.agreed.summed, 0);
  RecordProperty("specs", specs);
  RecordProperty("variants", variants);
  RecordProperty("calls", calls.calls);
  RecordProperty("in_place_calls", calls.inPlace);
}

} // namespace
} // namespace collc::differential
