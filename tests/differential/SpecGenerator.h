// Random collc specs for differential testing: each seed gives one spec built from a template of a
// known-correct algorithm (one-shot, two-shot, ring, direct, chain, hub...) with random choices of
// names, staging, chunking, loop spellings, epilogues, rank ranges, sync and launch defaults, so
// that most of them are correct and together they cover most of the language.
#pragma once

#include <cstdint>
#include <string>

namespace collc::differential {

struct GeneratedSpec {
  std::string name;  // the collective's name, also usable as a file name
  std::string text;  // the spec
  std::string shape; // a few words: the kind, the pattern and the choices made
};

/// The same seed gives the same spec on every platform and standard library.
GeneratedSpec generateSpec(uint64_t seed);

} // namespace collc::differential
