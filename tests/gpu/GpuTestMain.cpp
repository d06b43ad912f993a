// main() of gpu_tests: builds the shared LocalWorld once, as a global test environment, then runs
// the tests; and the compiled variants the test files share. Listing the tests
// (gtest_discover_tests) touches no GPU.
#include "tests/gpu/GpuTestMain.h"

#include "compiler/Compile.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "tools/launch/NvlinkMulticast.h"
#include "tools/launch/WorkQueues.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>
#include <map>
#include <memory>
#include <tuple>

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

// Enough for every case of the many-ranks matrix (its largest scratch is a few MiB per rank),
// small enough that 8 heaps on GPU 0 leave room for the LocalWorld's.
constexpr size_t kSharedHeapBytesPerRank = size_t(128) << 20;

std::unique_ptr<SharedGpuWorld>& sharedGpuWorldInstance() {
  static std::unique_ptr<SharedGpuWorld> instance;
  return instance;
}

class WorldEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
    Expected<int> count = gpuCount();
    if (!count) {
      skipReasonText() = toString(count.takeError());
      return;
    }
    if (*count < 2) {
      skipReasonText() = "needs 2 GPUs, found " + std::to_string(*count) + " (" + gpuName(0) + ")";
      return;
    }
    Expected<std::unique_ptr<LocalWorld>> created = LocalWorld::create({0, 1}, kHeapBytesPerRank);
    if (!created) {
      setupErrorText() = "could not build the 2-GPU world: " + toString(created.takeError());
      return;
    }
    sharedWorld() = std::move(*created);
    std::printf("gpu_tests: ranks on GPU 0 (%s, %s, %d SMs) and GPU 1 (%s)\n", gpuName(0).c_str(),
                gpuArch(0).c_str(), multiprocessorCount(0), gpuName(1).c_str());
  }
  void TearDown() override {
    sharedGpuWorldInstance().reset();
    sharedWorld().reset();
  }
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

SharedGpuWorld* sharedGpuWorld(int nranks, std::string& skip, std::string& error,
                               uint64_t leastHeapBytesPerRank) {
  const uint64_t heapBytesPerRank =
      std::max<uint64_t>(kSharedHeapBytesPerRank, leastHeapBytesPerRank);
  std::unique_ptr<SharedGpuWorld>& world = sharedGpuWorldInstance();
  if (world && world->nranks() == nranks && world->heapLayout().regionBytes >= heapBytesPerRank)
    return world.get();
  world.reset(); // one at a time: its heaps go before the next one's are allocated
  Expected<int> count = gpuCount();
  if (!count) {
    skip = toString(count.takeError());
    return nullptr;
  }
  Expected<std::unique_ptr<SharedGpuWorld>> created =
      SharedGpuWorld::create(nranks, 0, heapBytesPerRank, sharedGpuLaunchFor(nranks));
  if (!created) {
    error = "could not build the world of " + std::to_string(nranks) +
            " ranks on GPU 0: " + toString(created.takeError());
    return nullptr;
  }
  world = std::move(*created);
  std::printf("gpu_tests: %s\n", world->pathDescription().c_str());
  return world.get();
}

const Variant& variantFor(const std::string& specName, DType dtype, ReduceOp op, SyncKind sync,
                          int root, int64_t rowLength, int threads, int unroll, int wholeStores) {
  static std::map<std::tuple<std::string, DType, ReduceOp, SyncKind, int, int64_t, int, int, int>,
                  Variant>
      cache;
  auto [it, inserted] =
      cache.try_emplace({specName, dtype, op, sync, root, rowLength, threads, unroll, wholeStores});
  Variant& variant = it->second;
  if (!inserted)
    return variant;
  Expected<SpecSource> spec = loadSpec(specName);
  if (!spec) {
    variant.error = toString(spec.takeError());
    return variant;
  }
  CompileOptions options;
  options.dtype = dtype;
  options.op = op;
  options.nranks = 2;
  options.root = root;
  options.rowLength = rowLength;
  options.sync = sync;
  if (threads > 0)
    options.threads = threads;
  options.unroll = unroll;
  options.wholeStores = wholeStores;
  options.specProgram = &variant.spec;
  Expected<CompiledCollective> compiled = compileCollective(*spec, options, std::cerr);
  if (!compiled) {
    variant.error = "compile: " + toString(compiled.takeError());
    return variant;
  }
  variant.compiled = std::move(*compiled);
  JitOptions jit;
  jit.arch = gpuArch(world()->device(0));
  Expected<JitResult> cubin =
      compileCuda(variant.compiled.cudaSource, variant.compiled.kernelName, JitOutput::Cubin, jit);
  if (!cubin) {
    variant.error = "NVRTC: " + toString(cubin.takeError());
    return variant;
  }
  variant.cubin = std::move(cubin->image);
  return variant;
}

} // namespace collc::gputest

int main(int argc, char** argv) {
  collc::keepNvlinkMulticastOff(); // the GPU machine's rule, before anything loads NCCL
  // Before anything starts CUDA: the many-ranks tests give every rank's stream a queue of its own.
  collc::giveEachStreamAWorkQueue();
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new collc::gputest::WorldEnvironment());
  return RUN_ALL_TESTS();
}
