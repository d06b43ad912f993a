#include "tests/gpu/DispatchCalls.h"

#include "tools/harness/HostData.h"

#include <cstdio>
#include <gtest/gtest.h>
#include <random>

namespace collc::gputest {

namespace {

/// Each rank's graph exec, destroyed with it (on every way out of a test, failures included).
struct RankGraphs {
  std::vector<cudaGraphExec_t> execs;
  ~RankGraphs() {
    for (cudaGraphExec_t exec : execs)
      if (exec)
        cudaGraphExecDestroy(exec);
  }
};

} // namespace

std::unique_ptr<Dispatcher> makeDispatcher(SymmetricWorld& world, DispatchProgram program) {
  std::printf("%s", program.description().c_str());
  auto dispatcher = Dispatcher::create(world, std::move(program));
  EXPECT_TRUE(bool(dispatcher)) << toString(dispatcher.takeError());
  return dispatcher ? std::move(*dispatcher) : nullptr;
}

CallBuffers allocateCall(const SymmetricWorld& world, DType dtype, uint64_t count) {
  CallBuffers call;
  call.count = count;
  for (int r = 0; r < world.nranks(); ++r) {
    auto in = DeviceBuffer::allocate(world.device(r), count * sizeOf(dtype));
    auto out = DeviceBuffer::allocate(world.device(r), count * sizeOf(dtype));
    EXPECT_TRUE(in && out);
    if (!in || !out) {
      if (!in)
        consumeError(in.takeError());
      if (!out)
        consumeError(out.takeError());
      return call;
    }
    call.in.push_back(std::move(*in));
    call.out.push_back(std::move(*out));
    call.hostIn.emplace_back(count * sizeOf(dtype));
  }
  return call;
}

void refillCall(const SymmetricWorld& world, CallBuffers& call, DType dtype, uint64_t seed) {
  for (size_t r = 0; r < call.in.size(); ++r) {
    std::mt19937_64 rng(seed * 131 + r);
    fillRandom(dtype, call.hostIn[r].data(), call.count, rng);
    ASSERT_EQ(cudaMemcpy(call.in[r].get(), call.hostIn[r].data(), call.hostIn[r].size(),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cudaMemset(call.out[r].get(), 0xff, call.hostIn[r].size()), cudaSuccess);
  }
  // cudaMemset may return before it is done, on the legacy stream, which does not order the
  // world's non-blocking streams: finish it before any launch, or it may poison an output late.
  for (int r = 0; r < world.nranks(); ++r) {
    ASSERT_EQ(cudaSetDevice(world.device(r)), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
}

void checkCall(const CallBuffers& call, DType dtype, ReduceOp op, const std::string& what) {
  std::vector<const void*> inputs;
  for (const auto& host : call.hostIn)
    inputs.push_back(host.data());
  AllReduceReference reference = referenceAllReduce(dtype, op, inputs, call.count);
  for (size_t r = 0; r < call.out.size(); ++r) {
    std::vector<char> got(call.count * sizeOf(dtype));
    ASSERT_EQ(cudaMemcpy(got.data(), call.out[r].get(), got.size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    Comparison result = compareAllReduce(dtype, reference, inputs, got.data(), call.count,
                                         "rank " + std::to_string(r));
    EXPECT_TRUE(result.ok()) << what << ": " << result.mismatches << " mismatches\n"
                             << result.firstMismatches;
  }
}

void launchCall(const SymmetricWorld& world, const Dispatcher& dispatcher,
                const CallBuffers& call) {
  for (int r = 0; r < world.nranks(); ++r)
    ASSERT_FALSE(bool(
        dispatcher.launch(r, call.in[r].get(), call.out[r].get(), call.count, world.stream(r))));
}

void synchronizeCalls(const SymmetricWorld& world, const Dispatcher& dispatcher) {
  std::vector<cudaStream_t> streams;
  for (int r = 0; r < world.nranks(); ++r)
    streams.push_back(world.stream(r));
  Error err = dispatcher.synchronize(streams);
  ASSERT_FALSE(bool(err)) << toString(std::move(err));
}

void captureAndReplayChecked(const SymmetricWorld& world, const Dispatcher& dispatcher,
                             std::vector<CallBuffers>& calls, int replays, uint64_t seed) {
  const DispatchRequest& request = dispatcher.program().request();
  RankGraphs graphs;
  graphs.execs.assign(size_t(world.nranks()), nullptr);
  for (int r = 0; r < world.nranks(); ++r) {
    cudaStream_t stream = world.stream(r);
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    for (const CallBuffers& call : calls)
      ASSERT_FALSE(
          bool(dispatcher.launch(r, call.in[r].get(), call.out[r].get(), call.count, stream)));
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&graphs.execs[size_t(r)], graph, 0), cudaSuccess);
    cudaGraphDestroy(graph);
  }
  for (int replay = 0; replay < replays; ++replay) {
    for (size_t c = 0; c < calls.size(); ++c)
      refillCall(world, calls[c], request.dtype, seed + uint64_t(replay) * 10 + c);
    for (int r = 0; r < world.nranks(); ++r)
      ASSERT_EQ(cudaGraphLaunch(graphs.execs[size_t(r)], world.stream(r)), cudaSuccess);
    synchronizeCalls(world, dispatcher);
    for (size_t c = 0; c < calls.size(); ++c)
      checkCall(calls[c], request.dtype, request.op,
                "replay " + std::to_string(replay) + " call " + std::to_string(c));
  }
}

} // namespace collc::gputest
