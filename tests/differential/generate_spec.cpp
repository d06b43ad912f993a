// Prints the generated spec for a seed (argv[1]), with its shape as a comment, to debug the
// generator or a spec the differential tests found: `generate_spec 17 > s.coll; collc check
// s.coll`. With --planted, the seed's planted bug and what the compiler must say of it.
#include "tests/differential/SpecGenerator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  const bool planted = argc == 3 && std::strcmp(argv[1], "--planted") == 0;
  if (argc != 2 && !planted) {
    std::fprintf(stderr, "usage: %s [--planted] SEED\n", argv[0]);
    return 2;
  }
  const uint64_t seed = std::strtoull(argv[argc - 1], nullptr, 10);
  if (planted) {
    const auto bug = collc::differential::generatePlantedBug(seed);
    std::printf("# shape: %s\n# planted: %s at %s: %s%s\n%s", bug.spec.shape.c_str(),
                bug.family.c_str(), bug.at.c_str(), bug.rule.c_str(),
                bug.underMaxMin ? " (op max or min)" : "", bug.spec.text.c_str());
    return 0;
  }
  const auto spec = collc::differential::generateSpec(seed);
  std::printf("# shape: %s\n", spec.shape.c_str());
  if (!spec.sumOnlyAt.empty())
    std::printf("# sum only at %s\n", spec.sumOnlyAt.c_str());
  std::printf("%s", spec.text.c_str());
  return 0;
}
