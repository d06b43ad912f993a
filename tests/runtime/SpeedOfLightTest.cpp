// The speed-of-light probes (runtime/SpeedOfLight.h) without a GPU: their source compiles with
// NVRTC to a cubin holding the four kernels, and measuring refuses what it cannot measure; where
// two GPUs are, the probes run and their figures hold together.
// `collc bench --speed-of-light` runs them on GPUs.
#include "runtime/SpeedOfLight.h"

#include "runtime/Devices.h"
#include "runtime/Jit.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

TEST(SpeedOfLight, ProbesCompileToACubinWithEveryKernel) {
  JitOptions options;
  options.useCache = false;
  auto image = compileCuda(speedOfLightSource(), "speed_of_light.cu", JitOutput::Cubin, options);
  ASSERT_TRUE(bool(image)) << llvm::toString(image.takeError());
  EXPECT_FALSE(image->image.empty());
  // extern "C" entry points keep their names in the cubin's symbol table.
  for (const char* kernel :
       {"sol_empty", "sol_exchange", "sol_exchange_read", "sol_copy_signal", "sol_copy_sentinel"})
    EXPECT_NE(image->image.find(kernel), std::string::npos) << kernel;
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
  EXPECT_NE(llvm::toString(report.takeError()).find("needs 2 or more GPUs"), std::string::npos);
}

TEST(SpeedOfLight, SizeThatIsNotWholeVectorsIsRefusedBeforeAnyGpuIsTouched) {
  SpeedOfLightSettings settings;
  settings.sizes = {1000};
  auto report = measureSpeedOfLight({0, 1}, settings);
  ASSERT_FALSE(bool(report));
  EXPECT_NE(llvm::toString(report.takeError()).find("1000 bytes is not a whole number"),
            std::string::npos);
}

TEST(SpeedOfLightGpu, ProbesRunAndTheTraceAddsUpToTheMeasuredPeriod) {
  auto gpus = gpuCount();
  if (!gpus)
    GTEST_SKIP() << llvm::toString(gpus.takeError());
  if (*gpus < 2)
    GTEST_SKIP() << "no GPU pair: the probes need 2 GPUs, " << *gpus << " visible";
  SpeedOfLightSettings settings;
  settings.sizes = {1024, 65536};
  settings.graphOps = 20;
  settings.replays = 3;
  auto report = measureSpeedOfLight({0, 1}, settings);
  ASSERT_TRUE(bool(report)) << llvm::toString(report.takeError());
  EXPECT_GT(report->emptyUs, 0);
  EXPECT_GT(report->exchangeUs, report->emptyUs) << "an exchange is a kernel and a round trip";
  // Reading a word before sending it cannot make the exchange faster (0.8: timing spread).
  EXPECT_GT(report->exchangeReadUs, 0.8 * report->exchangeUs);
  ASSERT_EQ(report->copies.size(), 2u);
  for (const CopyFloor& floor : report->copies) {
    SCOPED_TRACE(floor.bytes);
    EXPECT_GT(floor.sentinelUs, report->emptyUs);
    // The copy engines' copy was checked whole by the probe; its time is a real one: no link
    // here carries 1 TB/s in one direction.
    EXPECT_GT(floor.copyEngineUs, 0);
    EXPECT_LT(double(floor.bytes) / floor.copyEngineUs / 1e3, 1000.0);
    // Between two exchanges the same copies (checked whole too) cost at least the exchanges.
    EXPECT_GT(floor.copyEngineOrderedUs, floor.copyEngineUs);
    EXPECT_GT(floor.copyEngineOrderedUs, report->exchangeUs);
    ASSERT_EQ(floor.breakdown.size(), 2u) << "one per rank";
    for (const CallBreakdown& b : floor.breakdown) {
      // The second replay's calls, each with the one before it.
      EXPECT_EQ(b.calls, settings.graphOps - 1);
      const double period =
          b.waitedToPushedUs + b.pushedToArrivedUs + b.arrivedToEndedUs + b.endedToNextWaitedUs;
      // One rank's mean period against the slowest rank's median per operation: the same
      // quantity measured two ways, so they agree to well within a factor of two.
      EXPECT_GT(period, 0.5 * floor.sentinelUs);
      EXPECT_LT(period, 2.0 * floor.sentinelUs);
      EXPECT_GE(b.pushedToArrivedUs, 0) << "a vector from the peer cannot land before it is sent";
    }
  }
}

} // namespace
} // namespace collc
