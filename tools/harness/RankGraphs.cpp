#include "tools/harness/RankGraphs.h"

#include "runtime/CudaCheck.h"

#include <algorithm>
#include <thread>

namespace collc {

namespace {

Error graphError(const std::string& message) {
  return makeError("run: " + message);
}

} // namespace

RankGraphs::~RankGraphs() {
  for (cudaGraphExec_t exec : execs_)
    if (exec && cudaGraphExecDestroy(exec) != cudaSuccess)
      (void)cudaGetLastError();
}

Error RankGraphs::capture(int rank, llvm::function_ref<Error()> enqueue) {
  const int slot = world_.localIndex(rank);
  if (slot < 0)
    return graphError("rank " + std::to_string(rank) + " is not driven by this process");
  ScopedDevice restore;
  cudaStream_t stream = world_.stream(rank);
  COLLC_CUDA_TRY(cudaSetDevice(world_.device(rank)));
  COLLC_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  Error enqueued = enqueue();
  cudaGraph_t graph = nullptr;
  cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (enqueued) {
    // The capture is over either way; its partial graph is of no use.
    if (graph)
      (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return joinErrors(graphError("capturing rank " + std::to_string(rank) + "'s graph"),
                      std::move(enqueued));
  }
  COLLC_CUDA_TRY(ended);
  if (execs_[slot] && cudaGraphExecDestroy(execs_[slot]) != cudaSuccess)
    (void)cudaGetLastError();
  execs_[slot] = nullptr;
  // In a world that launches its ranks as one, only the rank that completes a call enqueues it
  // (runtime/RankLaunch.h): the other ranks' graphs are empty, and replaying them does nothing.
  size_t nodes = 0;
  if (Error err = COLLC_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes))) {
    (void)cudaGraphDestroy(graph);
    return err;
  }
  empty_[slot] = nodes == 0;
  if (empty_[slot]) {
    if (cudaGraphDestroy(graph) != cudaSuccess)
      (void)cudaGetLastError();
    return Error::success();
  }
  Error instantiated = COLLC_CUDA_CHECK(cudaGraphInstantiate(&execs_[slot], graph, 0));
  if (cudaGraphDestroy(graph) != cudaSuccess)
    (void)cudaGetLastError();
  return instantiated;
}

Error RankGraphs::launch(int rank) {
  const int slot = world_.localIndex(rank);
  if (slot >= 0 && empty_[slot])
    return Error::success();
  if (slot < 0 || !execs_[slot])
    return graphError("no graph captured for rank " + std::to_string(rank));
  ScopedDevice restore;
  COLLC_CUDA_TRY(cudaSetDevice(world_.device(rank)));
  COLLC_CUDA_TRY(cudaGraphLaunch(execs_[slot], world_.stream(rank)));
  return Error::success();
}

Expected<std::unique_ptr<RankTimers>> RankTimers::create(const SymmetricWorld& world) {
  std::unique_ptr<RankTimers> timers(new RankTimers(world));
  ScopedDevice restore;
  for (int r : world.localRanks()) {
    COLLC_CUDA_TRY(cudaSetDevice(world.device(r)));
    cudaEvent_t start = nullptr, stop = nullptr;
    COLLC_CUDA_TRY(cudaEventCreate(&start));
    timers->starts_.push_back(start);
    COLLC_CUDA_TRY(cudaEventCreate(&stop));
    timers->stops_.push_back(stop);
  }
  return timers;
}

RankTimers::~RankTimers() {
  for (const std::vector<cudaEvent_t>* events : {&starts_, &stops_})
    for (cudaEvent_t event : *events)
      if (cudaEventDestroy(event) != cudaSuccess)
        (void)cudaGetLastError();
}

Expected<double> RankTimers::elapsedUs(int rank) {
  const int slot = world_.localIndex(rank);
  if (slot < 0)
    return graphError("rank " + std::to_string(rank) + " is not driven by this process");
  ScopedDevice restore;
  COLLC_CUDA_TRY(cudaSetDevice(world_.device(rank)));
  float ms = 0;
  COLLC_CUDA_TRY(cudaEventElapsedTime(&ms, starts_[slot], stops_[slot]));
  return ms * 1000.0;
}

Error RankTimers::record(int rank, bool start) {
  const int slot = world_.localIndex(rank);
  if (slot < 0)
    return graphError("rank " + std::to_string(rank) + " is not driven by this process");
  ScopedDevice restore;
  COLLC_CUDA_TRY(cudaSetDevice(world_.device(rank)));
  COLLC_CUDA_TRY(cudaEventRecord(start ? starts_[slot] : stops_[slot], world_.stream(rank)));
  return Error::success();
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

Expected<double> medianSlowestReplayUs(const SymmetricWorld& world, RankGraphs& graphs,
                                       int opsPerGraph, int replays,
                                       llvm::function_ref<Error()> wait,
                                       llvm::function_ref<Error()> beforeReplay) {
  auto timers = RankTimers::create(world);
  if (!timers)
    return timers.takeError();
  std::vector<double> slowest;
  for (int replay = 0; replay <= replays; ++replay) { // replay 0 warms up, untimed
    if (beforeReplay)
      if (Error err = beforeReplay())
        return err;
    for (int r : world.localRanks()) {
      if (Error err = (*timers)->start(r))
        return err;
      if (Error err = graphs.launch(r))
        return err;
      if (Error err = (*timers)->stop(r))
        return err;
    }
    if (Error err = wait())
      return err;
    double worst = 0;
    for (int r : world.localRanks()) {
      auto us = (*timers)->elapsedUs(r);
      if (!us)
        return us.takeError();
      worst = std::max(worst, *us / opsPerGraph);
    }
    if (replay > 0)
      slowest.push_back(worst);
  }
  return median(std::move(slowest));
}

} // namespace collc
