// The speed-of-light probes (runtime/SpeedOfLight.h) without a GPU: their source compiles with
// NVRTC to a cubin holding the three kernels, and measuring refuses what it cannot measure.
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
  for (const char* kernel : {"sol_empty", "sol_exchange", "sol_copy_signal"})
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

} // namespace
} // namespace collc
