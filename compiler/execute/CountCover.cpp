#include "compiler/execute/CountCover.h"

#include <algorithm>
#include <string>
#include <vector>

namespace collc::execute {
namespace {

/// Residues first..last of one period, both included.
struct Residues {
  int64_t first, last;
};

/// What a large run decided: n = period * q + s for every q >= threshold and s in residues.
struct Decided {
  int64_t period;
  Residues residues;
  int64_t threshold;
};

/// The ranges still to run (the next last) of period `period`, each replaced by the `factor`
/// ranges of period * factor that hold the same counts, in the same order, and those that meet
/// joined.
void splitRanges(std::vector<Residues>& pending, int64_t& period, int64_t factor) {
  std::vector<Residues> finer; // in the order they run; ranges that meet are one
  for (auto r = pending.rbegin(); r != pending.rend(); ++r)
    for (int64_t t = 0; t < factor; ++t) {
      const Residues next{r->first + period * t, r->last + period * t};
      if (!finer.empty() && finer.back().last + 1 == next.first)
        finer.back().last = next.last;
      else
        finer.push_back(next);
    }
  pending.assign(finer.rbegin(), finer.rend());
  period *= factor;
}

int64_t ceilDivide(int64_t a, int64_t b) {
  return a <= 0 ? 0 : (a + b - 1) / b;
}

/// The counts below each large run's threshold, per residue a stretch of q a run, from `from` on
/// (the smaller ones are decided already).
bool smallByResidue(const std::vector<Decided>& decided, int64_t from, const StretchRun& stretch) {
  for (const Decided& d : decided)
    for (int64_t s = d.residues.first; s <= d.residues.last; ++s) {
      int64_t q = std::max<int64_t>(s == 0 ? 1 : 0, ceilDivide(from - s, d.period));
      while (q < d.threshold) {
        Arith arith = Arith::from(q);
        const Covered covered = stretch(Affine{d.period, s}, arith, d.period * q + s);
        if (covered == Covered::Stop)
          return false;
        q = covered == Covered::FirstOnly ? q + 1 : std::min(arith.limit(), d.threshold - 1) + 1;
      }
    }
  return true;
}

} // namespace

int64_t firstCountOf(const Affine& count, const Arith& arith) {
  const int64_t first = arith.residueStart().value_or(0);
  const int64_t q = std::max(arith.threshold(), first == 0 ? int64_t(1) : int64_t(0));
  return count.u * q + count.w * first + count.v;
}

bool coverCounts(int64_t& period, const LargeRun& large, const StretchRun& stretch,
                 bool smallCounts) {
  // 1. Every large q, a range of residues a run.
  std::vector<Residues> pending{{0, period - 1}};
  std::vector<Decided> decided;
  while (!pending.empty()) {
    const Residues range = pending.back();
    Arith arith = Arith::residues(range.first, range.last);
    // One residue is a number: values free of s compare as plainly as they did per residue.
    const Affine count =
        range.first == range.last ? Affine{period, range.first, 0} : Affine{period, 0, 1};
    try {
      if (!large(count, arith))
        return false;
    } catch (const SplitQ& split) {
      // The classes not yet run meet the same division (n decides nothing but sizes): all of
      // them are split, and later roots start from the longer period.
      if (period > kMaxPeriod / split.factor)
        throw AffineError{"n would have to be taken modulo more than " +
                          std::to_string(kMaxPeriod)};
      splitRanges(pending, period, split.factor);
      continue;
    }
    pending.pop_back();
    const int64_t last = std::min(arith.residueLimit(), range.last);
    if (last < range.last)
      pending.push_back({last + 1, range.last});
    decided.push_back({period, {range.first, last}, arith.threshold()});
  }
  if (!smallCounts)
    return true;
  // 2. The counts below the thresholds. Stretches of n are tried first; where they come out
  // shorter than runs per residue would be, the rest is run per residue.
  int64_t largestSmall = 0, residueRuns = 0;
  for (const Decided& d : decided) {
    if (d.threshold == 0)
      continue;
    largestSmall = std::max(largestSmall, d.period * (d.threshold - 1) + d.residues.last);
    residueRuns += d.residues.last - d.residues.first + 1;
  }
  int64_t n = 1;
  for (int64_t runs = 0; n <= largestSmall && runs < 2 * residueRuns; ++runs) {
    Arith arith = Arith::residues(n, largestSmall);
    const Covered covered = stretch(Affine{0, 0, 1}, arith, n);
    if (covered == Covered::Stop)
      return false;
    n = covered == Covered::FirstOnly ? n + 1 : std::min(arith.residueLimit(), largestSmall) + 1;
  }
  return n > largestSmall || smallByResidue(decided, n, stretch);
}

} // namespace collc::execute
