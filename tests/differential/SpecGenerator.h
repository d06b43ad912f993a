// Random collc specs for differential testing: each seed gives one spec built from a template of a
// known-correct algorithm (one-shot, two-shot, ring, direct, chain, hub...) with random choices of
// names, staging, chunking, loop spellings, epilogues, rank ranges, sync and launch defaults, so
// that most of them are correct and together they cover most of the language: among them a
// rank's own threads rewriting what others of its threads wrote or read (ordered by a wait),
// '+' that holds for sum only, and large constants in rank arithmetic.
//
// A planted bug is the same templates with one defect put in on purpose (a wait left out, a
// write racing a read, '+' compiled for max) and where the compiler must report it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace collc::differential {

struct GeneratedSpec {
  std::string name;  // the collective's name, also usable as a file name
  std::string text;  // the spec
  std::string shape; // a few words: the kind, the pattern and the choices made
  /// "line:col" of the first statement that makes the spec hold for op 'sum' only ('+' of two
  /// input-carrying values, atomic_add), where compiling for max or min must be refused; empty
  /// where every operator must compile.
  std::string sumOnlyAt;
};

/// The same seed gives the same spec on every platform and standard library.
GeneratedSpec generateSpec(uint64_t seed);

/// Words of GeneratedSpec::shape that name the templates of a rank's own threads ordered by waits,
/// '+' that holds for sum only, and large constants in rank arithmetic.
std::vector<std::string> featuredShapes();

/// Seeds 0 .. seeds - 1, then for each of `parts` that none of their shapes has, the first later
/// seed below `limit` whose shape has it: few seeds, and still every template.
std::vector<uint64_t> seedsCovering(uint64_t seeds, const std::vector<std::string>& parts,
                                    uint64_t limit = 1000);

struct PlantedBug {
  GeneratedSpec spec;
  /// "local-waw": a write over what another thread of the rank wrote, without the wait that
  /// orders them; "local-war": the same after another thread's read; "in-step-overwrite": a write
  /// in the step in which another thread of the rank reads it; "owner-over-put": the rank's own
  /// write over a peer's put without a wait; "plus-under-max": '+' of two inputs, compiled for
  /// max or min; "int-width": a rank expression right in 64 bits and past the kernel's int.
  std::string family;
  std::string at;   // "line:col" the first error must point at
  std::string rule; // words the first error must contain
  /// Correct for sum: refused when compiled for op max or min (not by collc check).
  bool underMaxMin = false;
};

/// The same seed gives the same planted bug everywhere; every family comes up within a few seeds.
PlantedBug generatePlantedBug(uint64_t seed);

} // namespace collc::differential
