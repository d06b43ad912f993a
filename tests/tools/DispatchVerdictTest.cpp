// The verdicts of `collc bench --dispatch` (tools/bench/DispatchVerdict.h) on hand-made
// timings: within 3% per size, the sum against every fixed variant, and failures that must not
// count as wins.
#include "tools/bench/DispatchVerdict.h"

#include <cmath>
#include <gtest/gtest.h>

namespace collc::driver {
namespace {

BenchTiming ok(double us) {
  return BenchTiming::measured(us);
}

TEST(DispatchVerdict, ThreePercentIsTheEdge) {
  EXPECT_EQ(judgeSize(ok(10.3), {ok(10.0), ok(12.0)}).outcome, SizeVerdict::Outcome::Within);
  const SizeVerdict over = judgeSize(ok(10.31), {ok(12.0), ok(10.0)});
  EXPECT_EQ(over.outcome, SizeVerdict::Outcome::Over);
  EXPECT_EQ(over.best, 1);
  EXPECT_NEAR(over.ratio, 1.031, 1e-12);
  // Faster than every fixed variant is within, of course.
  EXPECT_EQ(judgeSize(ok(9.0), {ok(10.0)}).outcome, SizeVerdict::Outcome::Within);
}

TEST(DispatchVerdict, FailuresAreNotComparedAsTimes) {
  // A wrong or failed fixed timing is never the best, however small its (unset) time.
  const SizeVerdict verdict =
      judgeSize(ok(5.0), {BenchTiming::wrong("x"), BenchTiming::failed("y"), ok(6.0)});
  EXPECT_EQ(verdict.best, 2);
  EXPECT_EQ(verdict.outcome, SizeVerdict::Outcome::Within);
  EXPECT_EQ(judgeSize(BenchTiming::wrong("z"), {ok(1.0)}).outcome,
            SizeVerdict::Outcome::DispatchFailed);
  EXPECT_EQ(judgeSize(ok(1.0), {BenchTiming::failed("y")}).outcome,
            SizeVerdict::Outcome::Uncompared);
}

TEST(DispatchVerdict, ARetimingKeepsTheFasterTimeAndEveryFailure) {
  BenchTiming kept = ok(10.0);
  keepFaster(kept, ok(11.0));
  EXPECT_DOUBLE_EQ(kept.us, 10.0);
  keepFaster(kept, ok(9.5));
  EXPECT_DOUBLE_EQ(kept.us, 9.5);
  // A wrong result on a re-timing is not noise: it replaces the good time and stays.
  keepFaster(kept, BenchTiming::wrong("rank 1 out[3]"));
  EXPECT_EQ(kept.status, BenchTiming::Status::Wrong);
  keepFaster(kept, ok(1.0));
  EXPECT_EQ(kept.status, BenchTiming::Status::Wrong);
  EXPECT_EQ(kept.note, "rank 1 out[3]");
}

TEST(DispatchVerdict, MetWhenEverySizeIsWithinAndTheSumIsBelowEveryVariant) {
  // Two sizes; each fixed variant wins one of them, dispatch takes the winner at each.
  const DispatchVerdict verdict =
      judgeDispatch({ok(2.0), ok(10.1)}, {{ok(2.0), ok(20.0)}, {ok(4.0), ok(10.0)}});
  EXPECT_EQ(verdict.within, 2);
  EXPECT_EQ(verdict.over, 0);
  EXPECT_DOUBLE_EQ(verdict.dispatchedSum, 12.1);
  ASSERT_EQ(verdict.fixedSums.size(), 2u);
  EXPECT_EQ(verdict.bestSum, 1); // 14.0 against 22.0
  EXPECT_TRUE(verdict.beatsEverySum);
  EXPECT_TRUE(verdict.met());
}

TEST(DispatchVerdict, WithinAtEverySizeButNotBelowTheBestSumIsNotMet) {
  // Dispatch is 2% slower than the one variant that is best everywhere: within 3% at each size,
  // but a fixed variant beats it over the sweep.
  const DispatchVerdict verdict = judgeDispatch({ok(10.2), ok(20.4)}, {{ok(10.0), ok(20.0)}});
  EXPECT_EQ(verdict.within, 2);
  EXPECT_FALSE(verdict.beatsEverySum);
  EXPECT_FALSE(verdict.met());
}

TEST(DispatchVerdict, AFixedVariantThatFailedSomewhereCannotWinTheSum) {
  // Variant 0 ties dispatch at the small size and hangs at the large one: its sum is infinite,
  // and the sum is judged against variant 1.
  const DispatchVerdict verdict = judgeDispatch(
      {ok(5.0), ok(50.0)}, {{ok(5.0), BenchTiming::failed("hang")}, {ok(5.1), ok(50.0)}});
  EXPECT_TRUE(std::isinf(verdict.fixedSums[0]));
  EXPECT_EQ(verdict.bestSum, 1);
  EXPECT_TRUE(verdict.beatsEverySum); // 55.0 against 55.1
  EXPECT_EQ(verdict.within, 2);
  EXPECT_TRUE(verdict.met());
}

TEST(DispatchVerdict, WrongResultsCountAndFailTheBar) {
  const DispatchVerdict verdict =
      judgeDispatch({ok(1.0), BenchTiming::wrong("bad")},
                    {{BenchTiming::wrong("a"), BenchTiming::wrong("b")}, {ok(2.0), ok(3.0)}});
  EXPECT_EQ(verdict.dispatchFailures, 1);
  EXPECT_EQ(verdict.wrongFixed, 2);
  EXPECT_TRUE(std::isinf(verdict.dispatchedSum));
  EXPECT_FALSE(verdict.beatsEverySum);
  EXPECT_EQ(verdict.within + verdict.over + verdict.dispatchFailures + verdict.uncompared, 2);
  EXPECT_FALSE(verdict.met());
}

TEST(DispatchVerdict, TheWithinColumnSaysWhatAMissIs) {
  SizeVerdict within{SizeVerdict::Outcome::Within, 0, 1.01};
  SizeVerdict over{SizeVerdict::Outcome::Over, 0, 1.04};
  EXPECT_EQ(withinText(within, false, false), "yes");
  EXPECT_EQ(withinText(within, true, true), "yes (both best of 3)"); // a pass needs no excuse
  EXPECT_EQ(withinText(over, false, false), "NO");
  EXPECT_EQ(withinText(over, true, false), "NO (both best of 3)");
  EXPECT_EQ(withinText(over, true, true), "NO (both best of 3): the same variant on two instances");
}

} // namespace
} // namespace collc::driver
