// Prints the generated spec for a seed (argv[1]), with its shape as a comment, to debug the
// generator or a spec the differential tests found: `generate_spec 17 > s.coll; collc check
// s.coll`.
#include "tests/differential/SpecGenerator.h"

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SEED\n", argv[0]);
    return 2;
  }
  const auto spec = collc::differential::generateSpec(std::strtoull(argv[1], nullptr, 10));
  std::printf("# shape: %s\n%s", spec.shape.c_str(), spec.text.c_str());
  return 0;
}
