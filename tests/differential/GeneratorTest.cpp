// The spec generator: deterministic per seed, and most of what it produces is proved correct by
// the verifier, for every collective kind; what it says holds for sum only is what the verifier
// says. A refused spec is printed with its seed and diagnostics, since it is either a generator
// bug or a verifier false refusal. Its planted bugs are refused, each where it is and by its rule.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "tests/differential/FirstError.h"
#include "tests/differential/SpecGenerator.h"

#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <set>

namespace collc::differential {
namespace {

// Enough seeds for every pattern to come up several times, few enough to stay fast.
constexpr uint64_t kSeeds = 200;
// Planted bugs: every family comes up once in each run of six seeds.
constexpr uint64_t kPlantedSeeds = 36;

std::string kindOf(const GeneratedSpec& spec) {
  return spec.shape.substr(0, spec.shape.find(' '));
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Templates and choices that are correct by construction: the verifier must accept all of them.
const char* const kMustBeAccepted[] = {" rewrite ", " restage ", " plus", " large-constant"};

bool mustBeAccepted(const GeneratedSpec& spec) {
  for (const char* part : kMustBeAccepted)
    if (has(spec.shape, part))
      return true;
  return false;
}

TEST(Generator, SameSeedSameSpec) {
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    const GeneratedSpec a = generateSpec(seed), b = generateSpec(seed);
    EXPECT_EQ(a.text, b.text) << "seed " << seed;
    EXPECT_EQ(a.shape, b.shape) << "seed " << seed;
    EXPECT_EQ(generatePlantedBug(seed).spec.text, generatePlantedBug(seed).spec.text) << seed;
  }
  // Different seeds explore: most specs differ.
  std::set<std::string> texts;
  for (uint64_t seed = 0; seed < kSeeds; ++seed)
    texts.insert(generateSpec(seed).text);
  EXPECT_GT(texts.size(), kSeeds * 9 / 10);
}

TEST(Generator, MostSpecsAreAcceptedForEveryKind) {
  std::map<std::string, int> accepted, generated, tagged;
  std::string refusals;
  int total = 0, passed = 0, sumOnly = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    const GeneratedSpec spec = generateSpec(seed);
    std::string diagnostics;
    DiagnosticText out(diagnostics);
    CheckReport report;
    Error error = checkSpec({spec.name + ".coll", spec.text}, out, &report);
    const bool ok = !error;
    consumeError(std::move(error));
    ++total;
    ++generated[kindOf(spec)];
    for (const char* part : kMustBeAccepted)
      tagged[part] += has(spec.shape, part);
    if (ok) {
      ++passed;
      ++accepted[kindOf(spec)];
      // The statement the generator wrote '+' of inputs (or atomic_add) in is the one the
      // verifier names; a spec without one holds for every operator.
      if (spec.sumOnlyAt.empty())
        EXPECT_EQ(report.sumOnly, "") << "seed " << seed << "\n" << spec.text;
      else
        EXPECT_EQ(report.sumOnly.rfind(spec.sumOnlyAt + ": ", 0), 0u)
            << "seed " << seed << ": sum only at " << spec.sumOnlyAt << ", the verifier says '"
            << report.sumOnly << "'\n"
            << spec.text;
      sumOnly += !spec.sumOnlyAt.empty();
      continue;
    }
    EXPECT_FALSE(mustBeAccepted(spec)) << "seed " << seed << " (" << spec.shape << ") refused:\n"
                                       << spec.text << out.str();
    refusals +=
        "seed " + std::to_string(seed) + " (" + spec.shape + "):\n" + spec.text + out.str() + "\n";
  }
  const std::string summary =
      std::to_string(passed) + " of " + std::to_string(total) + " accepted; refused:\n" + refusals;
  for (const char* kind :
       {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall"})
    EXPECT_GT(accepted[kind], 0) << "no accepted " << kind << " of " << generated[kind] << "\n"
                                 << summary;
  EXPECT_GE(passed * 10, total * 7) << summary;
  EXPECT_GT(sumOnly, 0);
  std::cout << "generator: " << passed << " of " << total << " specs accepted, " << sumOnly
            << " of them for sum only; specs with";
  for (const auto& [part, count] : tagged)
    std::cout << " '" << part.substr(1) << "' " << count;
  std::cout << "\n";
  if (!refusals.empty())
    std::cout << summary;
}

struct FamilyCounts {
  int generated = 0, refused = 0;
};

TEST(Generator, PlantedBugsAreRefusedWhereTheyAre) {
  std::map<std::string, FamilyCounts> families;
  for (uint64_t seed = 0; seed < kPlantedSeeds; ++seed) {
    const PlantedBug bug = generatePlantedBug(seed);
    FamilyCounts& counts = families[bug.family];
    ++counts.generated;
    const SpecSource source{bug.spec.name + ".coll", bug.spec.text};
    const std::string expected = source.bufferName + ":" + bug.at + ": error: ";
    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + bug.family + " at " + bug.at + " (" +
                 bug.rule + "):\n" + bug.spec.text);
    ASSERT_FALSE(bug.at.empty());
    std::string diagnostics;
    DiagnosticText out(diagnostics);
    CheckReport report;
    Error error = checkSpec(source, out, &report);
    const bool refused = bool(error);
    consumeError(std::move(error));
    if (bug.underMaxMin) {
      // Right for sum, so collc check accepts it and says where it holds for sum only; the
      // variant for max or min is refused at that statement.
      ASSERT_FALSE(refused) << out.str();
      EXPECT_EQ(report.sumOnly.rfind(bug.at + ": ", 0), 0u) << report.sumOnly;
      const ReduceOp op = seed % 4 < 2 ? ReduceOp::Max : ReduceOp::Min;
      CompileOptions options;
      options.op = op;
      options.nranks = report.minRanks;
      options.formatSource = false;
      std::string compileDiagnostics;
      DiagnosticText compileOut(compileDiagnostics);
      auto compiled = compileCollective(source, options, compileOut);
      ASSERT_FALSE(bool(compiled)) << "compiled for op " << name(op);
      consumeError(compiled.takeError());
      const std::string first = firstError(compileOut.str());
      EXPECT_EQ(first.rfind(expected, 0), 0u) << first;
      EXPECT_TRUE(has(first, bug.rule)) << first;
      EXPECT_TRUE(has(first, "op '" + std::string(name(op)) + "'")) << first;
      ++counts.refused;
      continue;
    }
    ASSERT_TRUE(refused) << "accepted";
    const std::string first = firstError(out.str());
    EXPECT_EQ(first.rfind(expected, 0), 0u) << first;
    EXPECT_TRUE(has(first, bug.rule)) << first;
    ++counts.refused;
  }
  std::cout << "planted bugs:";
  for (const auto& [family, counts] : families) {
    std::cout << " " << family << " " << counts.refused << "/" << counts.generated << " refused";
    EXPECT_GE(counts.generated, 2) << family;
    EXPECT_EQ(counts.refused, counts.generated) << family;
  }
  std::cout << "\n";
  EXPECT_EQ(families.size(), 6u);
}

} // namespace
} // namespace collc::differential
