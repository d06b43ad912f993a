// The speed-of-light probes (tools/bench/SpeedOfLight.h) without a GPU: their source compiles with
// NVRTC to a cubin holding the four kernels, and measuring refuses what it cannot measure; where
// two GPUs are, the probes run and their figures hold together.
// `collc bench --speed-of-light` runs them on GPUs.
#include "tools/bench/SpeedOfLight.h"

#include "runtime/Devices.h"
#include "runtime/Jit.h"

#include <algorithm>
#include <gtest/gtest.h>

namespace collc {
namespace {

TEST(SpeedOfLight, ProbesCompileToACubinWithEveryKernel) {
  JitOptions options;
  options.useCache = false;
  auto image = compileCuda(speedOfLightSource(), "speed_of_light.cu", JitOutput::Cubin, options);
  ASSERT_TRUE(bool(image)) << toString(image.takeError());
  EXPECT_FALSE(image->image.empty());
  // extern "C" entry points keep their names in the cubin's string table, each ended by a NUL
  // (so that "sol_copy" is not found inside "sol_copy_signal").
  for (const char* kernel :
       {"sol_empty", "sol_exchange", "sol_exchange_read", "sol_exchange_read_write", "sol_copy",
        "sol_copy_signal", "sol_copy_sentinel", "sol_copy_sentinel_traced",
        "sol_allreduce_sentinel"})
    EXPECT_NE(image->image.find(std::string(kernel) + '\0'), std::string::npos) << kernel;
}

TEST(SpeedOfLight, SplitSharesGiveEachEngineWholeVectors) {
  const auto& shares = splitEngineShares();
  ASSERT_FALSE(shares.empty());
  for (size_t i = 0; i < shares.size(); ++i) {
    EXPECT_GT(shares[i], 0.0);
    EXPECT_LT(shares[i], 1.0);
    if (i > 0) {
      EXPECT_GT(shares[i], shares[i - 1]) << "ascending";
    }
  }
  EXPECT_EQ(splitEngineBytes(4096, 0.25), 1024u);
  EXPECT_EQ(splitEngineBytes(64ull << 20, 0.125), 8ull << 20);
  // 1K is 64 vectors: an eighth is 8 of them.
  EXPECT_EQ(splitEngineBytes(1024, 0.125), 128u);
  // Rounded down to whole vectors: 3 vectors at a quarter is 0.75 of one, and each engine keeps
  // at least one.
  EXPECT_EQ(splitEngineBytes(48, 0.25), 16u);
  EXPECT_EQ(splitEngineBytes(48, 0.75), 32u);
  EXPECT_EQ(splitEngineBytes(32, 0.75), 16u);
  // One vector cannot be split.
  EXPECT_EQ(splitEngineBytes(16, 0.5), 0u);
}

TEST(SpeedOfLight, GridsGoFromOneBlockToOnePerMultiprocessor) {
  const auto& grids = speedOfLightGrids();
  ASSERT_FALSE(grids.empty());
  EXPECT_EQ(grids.front().blocks, 1);
  EXPECT_EQ(grids.back().blocks, 132);
  for (const auto& grid : grids)
    EXPECT_EQ(grid.threads % 32, 0) << "whole warps";
}

TEST(SpeedOfLight, OneGpuIsRefused) {
  SpeedOfLightSettings settings;
  settings.sizes = {1024};
  auto report = measureSpeedOfLight({0}, settings);
  ASSERT_FALSE(bool(report));
  EXPECT_NE(toString(report.takeError()).find("needs 2 or more GPUs"), std::string::npos);
}

TEST(SpeedOfLight, SizeThatIsNotWholeVectorsIsRefusedBeforeAnyGpuIsTouched) {
  SpeedOfLightSettings settings;
  settings.sizes = {1000};
  auto report = measureSpeedOfLight({0, 1}, settings);
  ASSERT_FALSE(bool(report));
  EXPECT_NE(toString(report.takeError()).find("1000 bytes is not a whole number"),
            std::string::npos);
}

TEST(SpeedOfLightGpu, ProbesRunAndTheTraceAddsUpToTheMeasuredPeriod) {
  auto gpus = gpuCount();
  if (!gpus)
    GTEST_SKIP() << toString(gpus.takeError());
  if (*gpus < 2)
    GTEST_SKIP() << "no GPU pair: the probes need 2 GPUs, " << *gpus << " visible";
  SpeedOfLightSettings settings;
  settings.sizes = {1024, 65536};
  settings.graphOps = 20;
  settings.replays = 3;
  auto report = measureSpeedOfLight({0, 1}, settings);
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_GT(report->emptyUs, 0);
  EXPECT_GT(report->exchangeUs, report->emptyUs) << "an exchange is a kernel and a round trip";
  // Reading a word before sending it cannot make the exchange faster (0.8: timing spread).
  EXPECT_GT(report->exchangeReadUs, 0.8 * report->exchangeUs);
  EXPECT_GT(report->exchangeReadWriteUs, 0.8 * report->exchangeReadUs);
  ASSERT_EQ(report->copies.size(), 2u);
  for (const CopyFloor& floor : report->copies) {
    SCOPED_TRACE(floor.bytes);
    EXPECT_GT(floor.sentinelUs, report->emptyUs);
    // The hand-written AllReduce ran and its sums were checked (a wrong one is an error).
    EXPECT_GT(floor.handWrittenAllReduceUs, report->emptyUs);
    // The copy engines' copy was checked whole by the probe; its time is a real one: no link
    // here carries 1 TB/s in one direction.
    EXPECT_GT(floor.copyEngineUs, 0);
    EXPECT_LT(double(floor.bytes) / floor.copyEngineUs / 1e3, 1000.0);
    // Between two exchanges the same copies (checked whole too) cost at least the exchanges.
    EXPECT_GT(floor.copyEngineOrderedUs, floor.copyEngineUs);
    EXPECT_GT(floor.copyEngineOrderedUs, report->exchangeUs);
    // Both engines at once, checked whole by the probe: a real time at one of the shares, and
    // between two exchanges no cheaper than they are.
    EXPECT_GT(floor.split.us, 0);
    EXPECT_LT(double(floor.bytes) / floor.split.us / 1e3, 1000.0);
    EXPECT_GT(floor.splitOrdered.us, report->exchangeUs);
    // Every share was measured both ways, and the best of each way is the least of them.
    ASSERT_EQ(floor.splits.size(), splitEngineShares().size());
    double leastUs = floor.splits[0].us, leastOrderedUs = floor.splits[0].orderedUs;
    for (size_t i = 0; i < floor.splits.size(); ++i) {
      EXPECT_EQ(floor.splits[i].share, splitEngineShares()[i]);
      EXPECT_GT(floor.splits[i].us, 0);
      EXPECT_GT(floor.splits[i].orderedUs, 0);
      leastUs = std::min(leastUs, floor.splits[i].us);
      leastOrderedUs = std::min(leastOrderedUs, floor.splits[i].orderedUs);
    }
    EXPECT_EQ(floor.split.us, leastUs);
    EXPECT_EQ(floor.splitOrdered.us, leastOrderedUs);
    ASSERT_EQ(floor.breakdown.size(), 2u) << "one per rank";
    for (const CallBreakdown& b : floor.breakdown) {
      // The second replay's calls but its first, each with the one before it.
      EXPECT_EQ(b.calls, settings.graphOps - 2);
      const double period =
          b.waitedToPushedUs + b.pushedToArrivedUs + b.arrivedToEndedUs + b.endedToNextWaitedUs;
      // One rank's mean period against the slowest rank's median per operation: the same
      // quantity measured two ways, so they agree to well within a factor of two.
      EXPECT_GT(period, 0.5 * floor.sentinelUs);
      EXPECT_LT(period, 2.0 * floor.sentinelUs);
      EXPECT_GE(b.pushedToArrivedUs, 0) << "a vector from the peer cannot land before it is sent";
      // The whole grid's chain measures the same period on the same clock, through other points.
      const GridBreakdown& g = b.grid;
      EXPECT_GT(gridPeriodUs(g), 0.5 * floor.sentinelUs);
      EXPECT_LT(gridPeriodUs(g), 2.0 * floor.sentinelUs);
      // The extremes are ordered: a first is no later than its last (exactly: one min and one
      // max of the same times); a thread takes its vectors after its own wait; a block ends after
      // its threads took theirs. Those compare times that different warps read, which on this
      // machine disagree by up to a few hundredths of a µs, hence the margin.
      const double timerSkewUs = 0.1;
      EXPECT_GE(g.releaseSpreadUs, 0);
      EXPECT_GE(g.arrivalSpreadUs, 0);
      EXPECT_GE(g.firstWaitedToLastPushedUs, -timerSkewUs);
      EXPECT_GE(g.firstWaitedToFirstArrivedUs, -timerSkewUs);
      EXPECT_GE(g.lastArrivedToLastEndedUs, -timerSkewUs);
      // The next call's wait returns only once the last block has ended: a whole kernel boundary.
      EXPECT_GT(g.lastEndedToNextWaitedUs, 0);
    }
  }
}

} // namespace
} // namespace collc
