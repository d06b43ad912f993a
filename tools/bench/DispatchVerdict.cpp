#include "tools/bench/DispatchVerdict.h"

#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace collc::driver {

namespace {

double sumOrInfinity(const std::vector<BenchTiming>& timings) {
  double sum = 0;
  for (const BenchTiming& t : timings)
    sum += t.ok() ? t.us : std::numeric_limits<double>::infinity();
  return sum;
}

} // namespace

void keepFaster(BenchTiming& kept, const BenchTiming& again) {
  if (!kept.ok())
    return;
  if (!again.ok() || again.us < kept.us)
    kept = again;
}

SizeVerdict judgeSize(const BenchTiming& dispatched, const std::vector<BenchTiming>& fixedAtSize) {
  SizeVerdict verdict;
  for (size_t v = 0; v < fixedAtSize.size(); ++v)
    if (fixedAtSize[v].ok() &&
        (verdict.best < 0 || fixedAtSize[v].us < fixedAtSize[size_t(verdict.best)].us))
      verdict.best = int(v);
  if (!dispatched.ok())
    verdict.outcome = SizeVerdict::Outcome::DispatchFailed;
  else if (verdict.best < 0)
    verdict.outcome = SizeVerdict::Outcome::Uncompared;
  else {
    verdict.ratio = dispatched.us / fixedAtSize[size_t(verdict.best)].us;
    verdict.outcome = verdict.ratio <= kDispatchTolerance ? SizeVerdict::Outcome::Within
                                                          : SizeVerdict::Outcome::Over;
  }
  return verdict;
}

DispatchVerdict judgeDispatch(const std::vector<BenchTiming>& dispatched,
                              const std::vector<std::vector<BenchTiming>>& fixed) {
  DispatchVerdict verdict;
  // Sizes are counted, each once, as within, over, dispatched failing, or with no fixed variant
  // to compare with; wrong fixed timings apart, per timing.
  for (size_t i = 0; i < dispatched.size(); ++i) {
    std::vector<BenchTiming> atSize;
    for (const auto& timings : fixed)
      atSize.push_back(timings[i]);
    verdict.sizes.push_back(judgeSize(dispatched[i], atSize));
    switch (verdict.sizes.back().outcome) {
    case SizeVerdict::Outcome::Within:
      ++verdict.within;
      break;
    case SizeVerdict::Outcome::Over:
      ++verdict.over;
      break;
    case SizeVerdict::Outcome::DispatchFailed:
      ++verdict.dispatchFailures;
      break;
    case SizeVerdict::Outcome::Uncompared:
      ++verdict.uncompared;
      break;
    }
  }
  for (const auto& timings : fixed)
    for (const BenchTiming& t : timings)
      verdict.wrongFixed += t.status == BenchTiming::Status::Wrong;
  // A fixed variant that failed at some size sums to infinity: it cannot beat dispatch.
  verdict.dispatchedSum = sumOrInfinity(dispatched);
  for (size_t v = 0; v < fixed.size(); ++v) {
    verdict.fixedSums.push_back(sumOrInfinity(fixed[v]));
    if (verdict.bestSum < 0 || verdict.fixedSums[v] < verdict.fixedSums[size_t(verdict.bestSum)])
      verdict.bestSum = int(v);
  }
  verdict.beatsEverySum =
      std::isfinite(verdict.dispatchedSum) &&
      (verdict.bestSum < 0 || verdict.dispatchedSum < verdict.fixedSums[size_t(verdict.bestSum)]);
  return verdict;
}

std::string withinText(const SizeVerdict& verdict, bool retimed, bool sameVariant) {
  const bool over = verdict.outcome == SizeVerdict::Outcome::Over;
  std::string text = over ? "NO" : "yes";
  if (retimed)
    text += fmt::format(" (both best of {})", 1 + kRetimeRounds);
  if (over && sameVariant)
    text += ": the same variant on two instances";
  return text;
}

} // namespace collc::driver
