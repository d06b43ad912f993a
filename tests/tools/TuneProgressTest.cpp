// The progress line of `collc tune`: the bar, the count and the time left, cut to the width.
#include "tools/tune/TuneProgressBar.h"

#include <gtest/gtest.h>

namespace collc::driver {
namespace {

TEST(TuneProgress, ShowsTheBarTheCountAndTheTimeLeft) {
  TuneProgress p{50, 200, "stage 2: blocks", "allreduce_oneshot/ll 8x512 v16 u1 at 4K"};
  // 50 done in 100 s: 150 left take 300 s.
  std::string line = formatTuneProgress(p, 100, 500);
  EXPECT_EQ(line, "[#####---------------]  25%  50/200  about 5m00s left  stage 2: blocks  "
                  "allreduce_oneshot/ll 8x512 v16 u1 at 4K");
  EXPECT_EQ(formatTuneProgress(p, 100, 20).size(), 20u);
  TuneProgress none{0, 10, "stage 1", ""};
  EXPECT_NE(formatTuneProgress(none, 0, 200).find("about ? left"), std::string::npos);
  TuneProgress over{12, 10, "s", ""}; // an estimate passed: never above 100%
  EXPECT_NE(formatTuneProgress(over, 5, 200).find("100%  12/12"), std::string::npos);
}

TEST(TuneProgress, DurationsReadLikeAPerson) {
  EXPECT_EQ(formatDuration(0), "0s");
  EXPECT_EQ(formatDuration(59.4), "59s");
  EXPECT_EQ(formatDuration(61), "1m01s");
  EXPECT_EQ(formatDuration(3725), "1h02m");
  EXPECT_EQ(formatDuration(-3), "0s");
}

} // namespace
} // namespace collc::driver
