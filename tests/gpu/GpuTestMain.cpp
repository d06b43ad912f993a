// main() of gpu_tests: builds the shared LocalWorld once, as a global test environment, then runs
// the tests. Listing the tests (gtest_discover_tests) touches no GPU.
#include "tests/gpu/GpuTestMain.h"

#include "runtime/Devices.h"

#include <cstdio>
#include <llvm/Support/Error.h>
#include <memory>

namespace collc::gputest {

namespace {

// Enough for the largest test (16 Mi f32 elements: 256 MiB of one-shot scratch per rank); each
// instance gives its part back when it is destroyed.
constexpr size_t kHeapBytesPerRank = size_t(2) << 30;

std::unique_ptr<LocalWorld>& sharedWorld() {
  static std::unique_ptr<LocalWorld> instance;
  return instance;
}
std::string& skipReasonText() {
  static std::string text;
  return text;
}
std::string& setupErrorText() {
  static std::string text;
  return text;
}

class WorldEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
    llvm::Expected<int> count = gpuCount();
    if (!count) {
      skipReasonText() = llvm::toString(count.takeError());
      return;
    }
    if (*count < 2) {
      skipReasonText() = "needs 2 GPUs, found " + std::to_string(*count) + " (" + gpuName(0) + ")";
      return;
    }
    llvm::Expected<std::unique_ptr<LocalWorld>> created =
        LocalWorld::create({0, 1}, kHeapBytesPerRank);
    if (!created) {
      setupErrorText() = "could not build the 2-GPU world: " + llvm::toString(created.takeError());
      return;
    }
    sharedWorld() = std::move(*created);
    std::printf("gpu_tests: ranks on GPU 0 (%s, %s, %d SMs) and GPU 1 (%s)\n", gpuName(0).c_str(),
                gpuArch(0).c_str(), multiprocessorCount(0), gpuName(1).c_str());
  }
  void TearDown() override { sharedWorld().reset(); }
};

} // namespace

LocalWorld* world() {
  return sharedWorld().get();
}
const std::string& skipReason() {
  return skipReasonText();
}
const std::string& setupError() {
  return setupErrorText();
}

} // namespace collc::gputest

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new collc::gputest::WorldEnvironment());
  return RUN_ALL_TESTS();
}
