// The spec generator: deterministic per seed, and most of what it produces is proved correct by
// the verifier, for every collective kind. A refused spec is printed with its seed and
// diagnostics, since it is either a generator bug or a verifier false refusal.
#include "compiler/Compile.h"
#include "tests/differential/SpecGenerator.h"

#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <set>

namespace collc::differential {
namespace {

// Enough seeds for every pattern to come up several times, few enough to stay fast.
constexpr uint64_t kSeeds = 200;

std::string kindOf(const GeneratedSpec& spec) {
  return spec.shape.substr(0, spec.shape.find(' '));
}

TEST(Generator, SameSeedSameSpec) {
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    const GeneratedSpec a = generateSpec(seed), b = generateSpec(seed);
    EXPECT_EQ(a.text, b.text) << "seed " << seed;
    EXPECT_EQ(a.shape, b.shape) << "seed " << seed;
  }
  // Different seeds explore: most specs differ.
  std::set<std::string> texts;
  for (uint64_t seed = 0; seed < kSeeds; ++seed)
    texts.insert(generateSpec(seed).text);
  EXPECT_GT(texts.size(), kSeeds * 9 / 10);
}

TEST(Generator, MostSpecsAreAcceptedForEveryKind) {
  std::map<std::string, int> accepted, generated;
  std::string refusals;
  int total = 0, passed = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    const GeneratedSpec spec = generateSpec(seed);
    std::string diagnostics;
    llvm::raw_string_ostream out(diagnostics);
    llvm::Error error = checkSpec({spec.name + ".coll", spec.text}, out);
    const bool ok = !error;
    llvm::consumeError(std::move(error));
    ++total;
    ++generated[kindOf(spec)];
    if (ok) {
      ++passed;
      ++accepted[kindOf(spec)];
      continue;
    }
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
  if (!refusals.empty())
    std::cout << summary;
}

} // namespace
} // namespace collc::differential
