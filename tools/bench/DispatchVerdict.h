// The judgement of `collc bench --dispatch`, apart from the measuring: per size, is the
// dispatched collective within 3% of the best fixed variant; over the sweep, is its sum below
// every fixed variant's. Pure, so that the verdicts the bar rests on are tested without
// a GPU.
#ifndef COLLC_TOOLS_BENCH_DISPATCHVERDICT_H
#define COLLC_TOOLS_BENCH_DISPATCHVERDICT_H

#include "tools/bench/BenchResults.h"

#include <string>
#include <vector>

namespace collc::driver {

/// Within this ratio of the best fixed variant, dispatch counts as choosing right.
constexpr double kDispatchTolerance = 1.03;

/// Where dispatch comes out slower than the best fixed variant at a size, both are timed this
/// many more times, alternately, and each keeps its fastest (keepFaster): one timing's noise is
/// the size of the tolerance itself.
constexpr int kRetimeRounds = 2;

/// Folds a re-timing into `kept`: a faster correct `again` replaces it. A wrong or failed timing
/// is a finding, not noise: it is kept once seen, whether it was first or came again.
void keepFaster(BenchTiming& kept, const BenchTiming& again);

struct SizeVerdict {
  enum class Outcome { Within, Over, DispatchFailed, Uncompared };
  Outcome outcome = Outcome::Uncompared;
  int best = -1;    // index of the fastest fixed variant that measured this size; -1: none
  double ratio = 0; // dispatched / best, when both measured
};

/// `fixedAtSize[v]`: fixed variant v's timing at this size.
SizeVerdict judgeSize(const BenchTiming& dispatched, const std::vector<BenchTiming>& fixedAtSize);

/// The "within 3%" column of a size that both sides measured (Within or Over): "yes" or "NO",
/// "(both best of 3)" when the close call was timed again, and, for a miss where dispatch ran
/// the best fixed variant itself (`sameVariant`), that what is left is the instance: one variant
/// on two instances can differ by a few percent at the smallest sizes. It stays a miss.
std::string withinText(const SizeVerdict& verdict, bool retimed, bool sameVariant);

struct DispatchVerdict {
  std::vector<SizeVerdict> sizes;
  int within = 0, over = 0, dispatchFailures = 0, uncompared = 0;
  int wrongFixed = 0;            // wrong fixed timings, counted per (variant, size)
  double dispatchedSum = 0;      // over the sizes; infinity if any size did not measure
  std::vector<double> fixedSums; // per fixed variant, the same way
  int bestSum = -1;              // the fixed variant with the lowest sum; -1: none
  bool beatsEverySum = false;    // dispatchedSum is finite and below every fixed sum

  /// Every size within tolerance, the sum below every fixed variant's, nothing wrong or failed.
  bool met() const {
    return over == 0 && dispatchFailures == 0 && wrongFixed == 0 && beatsEverySum;
  }
};

/// `dispatched[i]`: the dispatched timing at size i; `fixed[v][i]`: fixed variant v's at size i
/// (every variant has one per size).
DispatchVerdict judgeDispatch(const std::vector<BenchTiming>& dispatched,
                              const std::vector<std::vector<BenchTiming>>& fixed);

} // namespace collc::driver

#endif // COLLC_TOOLS_BENCH_DISPATCHVERDICT_H
