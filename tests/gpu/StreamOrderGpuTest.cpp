// The rule for streams on a GPU (runtime/StreamOrder.h), with two co-resident ranks on GPU 0: an
// eager call on another stream than the rank's last call runs after that call, whatever the
// program did; and a call captured on a side stream (as torch captures) leaves the capture whole.
#include "compiler/Compile.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "tests/gpu/GpuTestMain.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>
#include <vector>

namespace collc {
namespace {

constexpr int kRanks = 2;
constexpr uint64_t kCount = 4096;

/// Holds a stream until released: a host function that waits for the flag.
std::atomic<bool> gateOpen{false};
void CUDART_CB waitForGate(void*) {
  while (!gateOpen.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

class StreamOrderOneGpu : public ::testing::Test {
protected:
  void SetUp() override {
    COLLC_REQUIRE_SHARED_GPU_WORLD(world_, kRanks);
    Expected<SpecSource> spec = loadSpec("allreduce_oneshot");
    ASSERT_TRUE(bool(spec)) << toString(spec.takeError());
    CompileOptions options;
    options.nranks = kRanks;
    options.sync = SyncKind::LL;
    Expected<CompiledCollective> compiled = compileCollective(*spec, options, std::cerr);
    ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError());
    compiled_ = std::move(*compiled);
    JitOptions jit;
    jit.arch = gpuArch(0);
    Expected<JitResult> cubin =
        compileCuda(compiled_.cudaSource, compiled_.kernelName, JitOutput::Cubin, jit);
    ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
    Expected<std::unique_ptr<CollectiveInstance>> instance =
        CollectiveInstance::create(*world_, compiled_, cubin->image, kCount);
    ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
    instance_ = std::move(*instance);
    for (int r = 0; r < kRanks; ++r)
      for (int call = 0; call < 3; ++call) {
        // Call c of rank r adds (r + 1) * 10^c: every element of its sum is 3 * 10^c.
        const std::vector<float> input(kCount, float((r + 1) * std::pow(10.0, call)));
        Expected<DeviceBuffer> in = DeviceBuffer::allocate(0, kCount * sizeof(float));
        Expected<DeviceBuffer> out = DeviceBuffer::allocate(0, kCount * sizeof(float));
        ASSERT_TRUE(in && out);
        ASSERT_EQ(
            cudaMemcpy(in->get(), input.data(), kCount * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
        ASSERT_EQ(cudaMemset(out->get(), 0, kCount * sizeof(float)), cudaSuccess);
        ins_.push_back(std::move(*in));
        outs_.push_back(std::move(*out));
      }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess); // the memsets ran on the legacy stream
    for (int r = 0; r < kRanks; ++r)
      for (std::vector<cudaStream_t>* streams : {&second_, &third_}) {
        cudaStream_t stream = nullptr;
        ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
        streams->push_back(stream);
      }
  }
  void TearDown() override {
    gateOpen = true;
    if (world_)
      (void)cudaDeviceSynchronize();
    instance_.reset();
    for (cudaStream_t stream : second_)
      (void)cudaStreamDestroy(stream);
    for (cudaStream_t stream : third_)
      (void)cudaStreamDestroy(stream);
  }

  Error launch(int rank, int call, cudaStream_t stream) {
    const size_t i = size_t(rank) * 3 + size_t(call);
    return instance_->launch(rank, ins_[i].get(), outs_[i].get(), kCount, stream);
  }
  /// Every element of every rank's output of `call` is 3 * 10^call.
  void expectSum(int call) {
    for (int r = 0; r < kRanks; ++r) {
      std::vector<float> got(kCount);
      ASSERT_EQ(cudaMemcpy(got.data(), outs_[size_t(r) * 3 + size_t(call)].get(),
                           kCount * sizeof(float), cudaMemcpyDeviceToHost),
                cudaSuccess);
      const float want = float(3 * std::pow(10.0, call));
      size_t wrong = 0;
      for (float x : got)
        wrong += x != want;
      EXPECT_EQ(wrong, 0u) << "rank " << r << " call " << call << ": first " << got[0]
                           << ", expected " << want;
    }
  }

  SharedGpuWorld* world_ = nullptr;
  CompiledCollective compiled_;
  std::unique_ptr<CollectiveInstance> instance_;
  std::vector<DeviceBuffer> ins_, outs_; // [rank * 3 + call]
  std::vector<cudaStream_t> second_, third_;
};

TEST_F(StreamOrderOneGpu, ACallOnAnotherStreamRunsAfterTheLast) {
  gateOpen = false;
  // Call 0 on each rank's own stream, held there behind the gate; call 1 on a second stream.
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(cudaLaunchHostFunc(world_->stream(r), waitForGate, nullptr), cudaSuccess);
    ASSERT_FALSE(bool(launch(r, 0, world_->stream(r))));
  }
  for (int r = 0; r < kRanks; ++r)
    ASSERT_FALSE(bool(launch(r, 1, second_[size_t(r)])));
  // Unordered, call 1 would run now on its idle streams and finish within milliseconds.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(cudaStreamQuery(second_[size_t(r)]), cudaErrorNotReady)
        << "rank " << r << "'s call on its second stream ran before its last call";
  gateOpen = true;
  Error done = instance_->synchronize(second_);
  ASSERT_FALSE(bool(done)) << toString(std::move(done));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expectSum(0);
  expectSum(1);
}

TEST_F(StreamOrderOneGpu, ACaptureOnASideStreamStaysWhole) {
  for (int r = 0; r < kRanks; ++r)
    ASSERT_FALSE(bool(launch(r, 0, world_->stream(r))));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // The last eager call was on each rank's own stream; capture call 1 on a third stream, in the
  // global mode torch uses, one rank after another.
  std::vector<cudaGraphExec_t> execs;
  for (int r = 0; r < kRanks; ++r) {
    cudaStream_t side = third_[size_t(r)];
    ASSERT_EQ(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal), cudaSuccess);
    Error launched = launch(r, 1, side);
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(side, &graph), cudaSuccess) << "the capture was broken";
    ASSERT_FALSE(bool(launched)) << toString(std::move(launched));
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    (void)cudaGraphDestroy(graph);
    execs.push_back(exec);
  }
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(cudaGraphLaunch(execs[size_t(r)], third_[size_t(r)]), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expectSum(1);
  // An eager call after the replays, back on each rank's own stream.
  for (int r = 0; r < kRanks; ++r)
    ASSERT_FALSE(bool(launch(r, 2, world_->stream(r))));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expectSum(2);
  for (cudaGraphExec_t exec : execs)
    (void)cudaGraphExecDestroy(exec);
}

} // namespace
} // namespace collc
