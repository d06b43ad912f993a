// Broadcast and reduce run a call for every root, so the proof across calls would start a sequence
// from every root's classes. Where every root's classes are root 0's with each rank r renamed
// (r + root) mod nranks, a sequence whose first call has root r0 is, with every rank renamed back
// by r0, a sequence whose first call has root 0, and the proof treats every rank and slot alike:
// the sequences from root 0 decide them all (dsl/README.md, "Across calls").
#ifndef COLLC_COMPILER_VERIFY_ROOTSYMMETRY_H
#define COLLC_COMPILER_VERIFY_ROOTSYMMETRY_H

#include "compiler/verify/CallTrace.h"

#include <vector>

namespace collc::calls {

/// Whether, for every root r, the events of `skeletons[r]` are those of `skeletons[0]` with each
/// rank x (its events of a step, in order, and the owner of every slot it names) renamed
/// (x + r) mod nranks, the slots of each buffer either kept or, for a buffer indexed by rank,
/// renamed alike, and whether root r's classes in `configurations` (which statements touch
/// elements, which writes each read may take) are exactly root 0's renamed so. False as soon as
/// anything differs: the proof then starts from every root.
bool rootsAreRotations(int nranks, const std::vector<std::vector<Event>>& skeletons,
                       const std::vector<Configuration>& configurations,
                       const std::vector<SlotKey>& slots);

} // namespace collc::calls

#endif // COLLC_COMPILER_VERIFY_ROOTSYMMETRY_H
