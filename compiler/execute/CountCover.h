// The runs with n symbolic that together decide every count n >= 1 for one rank count and root
// (dsl/README.md, "Why finitely many runs cover every n"). Both proofs (one call: Verifier.cpp's
// Sweep; across calls: the classes a call can fall in) walk the same cover:
//
// 1. Large q. Write n = M * q + s (M, the period, starts at 1). One run decides a range of
//    residues s, from its first on, for every q from the run's threshold on (Arith::residues): a
//    comparison q decides is decided for large q; one q does not (the same part in q), at the
//    first residue; a division that needs a longer period in q splits every class (SplitQ). The
//    range ends where a decision taken at its first residue changes; the next run starts there.
// 2. Small counts, those below each run's threshold: a stretch of counts n a run (Arith::residues
//    with n = s itself), each run deciding as at the stretch's first count; or, where stretches of
//    n turn out short (a packet's place that changes with every count), per residue a stretch of
//    q a run (Arith::from), as before the residues were run together.
#ifndef COLLC_COMPILER_EXECUTE_COUNTCOVER_H
#define COLLC_COMPILER_EXECUTE_COUNTCOVER_H

#include "compiler/execute/Affine.h"

#include <cstdint>
#include <functional>

namespace collc::execute {

/// What a run of a stretch decided.
enum class Covered {
  Stop,      // a run broke a rule or hit a limit: the cover ends (the caller reported it)
  Stretch,   // every count from the stretch's first to its Arith's limit
  FirstOnly, // its first count alone (it was run with numbers)
};

/// A run for every large q, with `count` = M * q + s over the residues of `arith`
/// (Arith::residues): false to stop the cover; may throw SplitQ.
using LargeRun = std::function<bool(const Affine& count, Arith& arith)>;
/// A run of a stretch of counts from `first` on: `count` with `arith` either n itself over a range
/// of n (Arith::residues), or M * q + s with q from a value on (Arith::from).
using StretchRun = std::function<Covered(const Affine& count, Arith& arith, int64_t first)>;

/// The smallest count a large run decides: at its threshold (at least 1 where its first residue
/// is 0) and its first residue.
int64_t firstCountOf(const Affine& count, const Arith& arith);

/// The largest period a class may be split to: far beyond what blocks, chunks and packets need
/// (8 * nranks * nranks, dsl/README.md), a bound on the runs.
inline constexpr int64_t kMaxPeriod = int64_t(1) << 20;

/// Runs the cover: false where a run stopped it. `period` is the classes' period, kept from one
/// root to the next (a split grows it). `smallCounts` false: the large runs alone, where the
/// caller has shown that they decide the smaller counts too (verify/ChunkGroups.h). Throws
/// AffineError where the period would pass kMaxPeriod.
bool coverCounts(int64_t& period, const LargeRun& large, const StretchRun& stretch,
                 bool smallCounts = true);

} // namespace collc::execute

#endif // COLLC_COMPILER_EXECUTE_COUNTCOVER_H
