#include "runtime/RunHarness.h"

#include "runtime/CudaCheck.h"
#include "runtime/HostData.h"

#include <algorithm>
#include <llvm/ADT/STLExtras.h>
#include <random>

namespace collc {

namespace {

// Mismatch lines kept in a report, over all ranks and calls.
constexpr unsigned kMaxReportedMismatches = 8;
// A generous bound on one operation's time, so that long graphs are not mistaken for hangs.
constexpr double kSecondsPerOpAllowance = 0.01;

llvm::Error harnessError(const llvm::Twine& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "run: " + message.str());
}

uint64_t alignUp(uint64_t value, uint64_t align) {
  return (value + align - 1) / align * align;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::vector<cudaStream_t> rankStreams(const LocalWorld& world) {
  std::vector<cudaStream_t> streams;
  streams.reserve(world.nranks());
  for (int r = 0; r < world.nranks(); ++r)
    streams.push_back(world.stream(r));
  return streams;
}

llvm::Error validate(const LocalWorld& world, const CollectiveInstance& instance,
                     const CompiledCollective& compiled, uint64_t count) {
  if (compiled.kind != CollectiveKind::AllReduce)
    return harnessError("no host reference for " + std::string(name(compiled.kind)) +
                        " yet; only allreduce can be checked");
  if (&instance.world() != &world)
    return harnessError("the instance was created for another world");
  if (compiled.nranks != world.nranks() || compiled.dtype != instance.compiled().dtype ||
      compiled.kernelName != instance.compiled().kernelName)
    return harnessError("the compiled collective is not the one the instance runs");
  if (count > instance.maxCount())
    return harnessError(llvm::Twine(count) + " elements asked for; the instance was made for " +
                        llvm::Twine(instance.maxCount()));
  return llvm::Error::success();
}

/// Every rank's user buffers: `slots` inputs and outputs of one call each, laid out at 256-byte
/// strides in one allocation per rank, with host copies of the same shape.
struct RankBuffers {
  uint64_t inStride = 0, outStride = 0;
  std::vector<DeviceBuffer> in, out;
  std::vector<std::vector<char>> hostIn, hostOut;

  char* deviceIn(int rank, int slot) const { return in[rank].as<char>() + slot * inStride; }
  char* deviceOut(int rank, int slot) const { return out[rank].as<char>() + slot * outStride; }
  const char* inputOf(int rank, int slot) const { return hostIn[rank].data() + slot * inStride; }
  const char* outputOf(int rank, int slot) const { return hostOut[rank].data() + slot * outStride; }
};

llvm::Expected<RankBuffers> allocateBuffers(const LocalWorld& world,
                                            const CompiledCollective& compiled, uint64_t count,
                                            int slots) {
  RankBuffers buffers;
  const uint64_t elementBytes = sizeOf(compiled.dtype);
  buffers.inStride = alignUp(compiled.inputCount(count) * elementBytes, 256);
  buffers.outStride = alignUp(compiled.outputCount(count) * elementBytes, 256);
  for (int r = 0; r < world.nranks(); ++r) {
    llvm::Expected<DeviceBuffer> in =
        DeviceBuffer::allocate(world.device(r), buffers.inStride * slots);
    if (!in)
      return in.takeError();
    llvm::Expected<DeviceBuffer> out =
        DeviceBuffer::allocate(world.device(r), buffers.outStride * slots);
    if (!out)
      return out.takeError();
    buffers.in.push_back(std::move(*in));
    buffers.out.push_back(std::move(*out));
    buffers.hostIn.emplace_back(buffers.inStride * slots);
    buffers.hostOut.emplace_back(buffers.outStride * slots);
  }
  return buffers;
}

/// Fresh random inputs for every slot of every rank.
void randomizeInputs(RankBuffers& buffers, const CompiledCollective& compiled, uint64_t count,
                     std::mt19937_64& rng) {
  const uint64_t elements = compiled.inputCount(count);
  const int slots = static_cast<int>(buffers.hostIn[0].size() / buffers.inStride);
  for (auto& host : buffers.hostIn)
    for (int slot = 0; slot < slots; ++slot)
      fillRandom(compiled.dtype, host.data() + slot * buffers.inStride, elements, rng);
}

/// Copies the host inputs to the devices and fills the outputs with 0xFF bytes, a NaN in every
/// type, so that an element the kernel never writes fails the comparison. Streams must be idle:
/// copies from pageable memory may wait for them. The caller synchronizes afterwards.
llvm::Error uploadInputsPoisonOutputs(const LocalWorld& world, const RankBuffers& buffers) {
  ScopedDevice restore;
  for (int r = 0; r < world.nranks(); ++r) {
    COLLC_CUDA_TRY(cudaSetDevice(world.device(r)));
    COLLC_CUDA_TRY(cudaMemcpyAsync(buffers.in[r].get(), buffers.hostIn[r].data(),
                                   buffers.hostIn[r].size(), cudaMemcpyHostToDevice,
                                   world.stream(r)));
    COLLC_CUDA_TRY(
        cudaMemsetAsync(buffers.out[r].get(), 0xFF, buffers.out[r].bytes(), world.stream(r)));
  }
  return llvm::Error::success();
}

/// Copies every rank's outputs back. Streams must be idle (see above).
llvm::Error downloadOutputs(const LocalWorld& world, RankBuffers& buffers) {
  ScopedDevice restore;
  for (int r = 0; r < world.nranks(); ++r) {
    COLLC_CUDA_TRY(cudaSetDevice(world.device(r)));
    COLLC_CUDA_TRY(cudaMemcpyAsync(buffers.hostOut[r].data(), buffers.out[r].get(),
                                   buffers.hostOut[r].size(), cudaMemcpyDeviceToHost,
                                   world.stream(r)));
  }
  return llvm::Error::success();
}

/// Compares slot `slot` of every rank's output with the reference built from slot `slot` of
/// every rank's input; adds to the report. Returns whether every rank got it right.
bool checkSlot(const RankBuffers& buffers, const CompiledCollective& compiled, uint64_t count,
               int slot, const std::string& what, RunReport& report) {
  std::vector<const void*> inputs;
  for (size_t r = 0; r < buffers.hostIn.size(); ++r)
    inputs.push_back(buffers.inputOf(static_cast<int>(r), slot));
  AllReduceReference reference = referenceAllReduce(compiled.dtype, compiled.op, inputs, count);
  bool correct = true;
  for (size_t r = 0; r < buffers.hostOut.size(); ++r) {
    std::string label = what + " rank " + std::to_string(r) + " out";
    Comparison comparison = compareAllReduce(compiled.dtype, reference, inputs,
                                             buffers.outputOf(static_cast<int>(r), slot), count,
                                             label, kMaxReportedMismatches);
    if (comparison.ok())
      continue;
    correct = report.correct = false;
    if (std::count(report.firstMismatches.begin(), report.firstMismatches.end(), '\n') <
        kMaxReportedMismatches)
      report.firstMismatches += label + ": " + std::to_string(comparison.mismatches) + " of " +
                                std::to_string(count) + " elements wrong\n" +
                                comparison.firstMismatches;
  }
  ++report.checkedCalls;
  return correct;
}

/// One instantiated graph per rank, destroyed with this object.
class RankGraphs {
public:
  explicit RankGraphs(const LocalWorld& world) : world_(world), execs_(world.nranks(), nullptr) {}
  ~RankGraphs() {
    for (cudaGraphExec_t exec : execs_)
      if (exec && cudaGraphExecDestroy(exec) != cudaSuccess)
        (void)cudaGetLastError();
  }
  RankGraphs(const RankGraphs&) = delete;
  RankGraphs& operator=(const RankGraphs&) = delete;

  /// Captures what `enqueue` launches on rank's stream into that rank's graph.
  llvm::Error capture(int rank, llvm::function_ref<llvm::Error()> enqueue) {
    ScopedDevice restore;
    cudaStream_t stream = world_.stream(rank);
    COLLC_CUDA_TRY(cudaSetDevice(world_.device(rank)));
    // Thread-local mode: only this thread's unsafe calls (cudaMalloc, ...) may break the capture.
    COLLC_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    llvm::Error enqueued = enqueue();
    cudaGraph_t graph = nullptr;
    cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (enqueued) {
      // The capture is over either way; its partial graph is of no use.
      if (graph)
        (void)cudaGraphDestroy(graph);
      (void)cudaGetLastError();
      return llvm::joinErrors(harnessError("capturing rank " + llvm::Twine(rank) + "'s graph"),
                              std::move(enqueued));
    }
    COLLC_CUDA_TRY(ended);
    llvm::Error instantiated = COLLC_CUDA_CHECK(cudaGraphInstantiate(&execs_[rank], graph, 0));
    if (cudaGraphDestroy(graph) != cudaSuccess)
      (void)cudaGetLastError();
    return instantiated;
  }

  llvm::Error launch(int rank) {
    ScopedDevice restore;
    COLLC_CUDA_TRY(cudaSetDevice(world_.device(rank)));
    COLLC_CUDA_TRY(cudaGraphLaunch(execs_[rank], world_.stream(rank)));
    return llvm::Error::success();
  }

private:
  const LocalWorld& world_;
  std::vector<cudaGraphExec_t> execs_;
};

/// A start and a stop event per rank, on that rank's GPU.
class RankTimers {
public:
  static llvm::Expected<std::unique_ptr<RankTimers>> create(const LocalWorld& world) {
    std::unique_ptr<RankTimers> timers(new RankTimers(world));
    ScopedDevice restore;
    for (int r = 0; r < world.nranks(); ++r) {
      COLLC_CUDA_TRY(cudaSetDevice(world.device(r)));
      cudaEvent_t start = nullptr, stop = nullptr;
      COLLC_CUDA_TRY(cudaEventCreate(&start));
      timers->starts_.push_back(start);
      COLLC_CUDA_TRY(cudaEventCreate(&stop));
      timers->stops_.push_back(stop);
    }
    return timers;
  }
  ~RankTimers() {
    for (const std::vector<cudaEvent_t>* events : {&starts_, &stops_})
      for (cudaEvent_t event : *events)
        if (cudaEventDestroy(event) != cudaSuccess)
          (void)cudaGetLastError();
  }
  RankTimers(const RankTimers&) = delete;
  RankTimers& operator=(const RankTimers&) = delete;

  llvm::Error start(int rank) { return record(rank, starts_[rank]); }
  llvm::Error stop(int rank) { return record(rank, stops_[rank]); }
  /// Microseconds between start and stop of rank; both must have completed.
  llvm::Expected<double> elapsedUs(int rank) {
    ScopedDevice restore;
    COLLC_CUDA_TRY(cudaSetDevice(world_.device(rank)));
    float ms = 0;
    COLLC_CUDA_TRY(cudaEventElapsedTime(&ms, starts_[rank], stops_[rank]));
    return ms * 1000.0;
  }

private:
  explicit RankTimers(const LocalWorld& world) : world_(world) {}
  llvm::Error record(int rank, cudaEvent_t event) {
    ScopedDevice restore;
    COLLC_CUDA_TRY(cudaSetDevice(world_.device(rank)));
    COLLC_CUDA_TRY(cudaEventRecord(event, world_.stream(rank)));
    return llvm::Error::success();
  }

  const LocalWorld& world_;
  std::vector<cudaEvent_t> starts_, stops_;
};

/// Launches every rank's graph, each between its rank's timer events, from this thread in rank
/// order; the ranks synchronize among themselves on the device. Waits (bounded) and returns the
/// per-rank replay times in microseconds.
llvm::Expected<std::vector<double>> replayTimed(LocalWorld& world, CollectiveInstance& instance,
                                                RankGraphs& graphs, RankTimers& timers,
                                                int opsPerGraph) {
  for (int r = 0; r < world.nranks(); ++r) {
    if (llvm::Error err = timers.start(r))
      return err;
    if (llvm::Error err = graphs.launch(r))
      return err;
    if (llvm::Error err = timers.stop(r))
      return err;
  }
  if (llvm::Error err =
          instance.synchronize(rankStreams(world), opsPerGraph * kSecondsPerOpAllowance))
    return err;
  std::vector<double> us;
  for (int r = 0; r < world.nranks(); ++r) {
    llvm::Expected<double> elapsed = timers.elapsedUs(r);
    if (!elapsed)
      return elapsed.takeError();
    us.push_back(*elapsed);
  }
  return us;
}

} // namespace

llvm::Expected<RunReport> runAndCheck(LocalWorld& world, CollectiveInstance& instance,
                                      const CompiledCollective& compiled,
                                      const RunOptions& options) {
  const uint64_t count = options.count;
  if (llvm::Error err = validate(world, instance, compiled, count))
    return err;
  if (options.time && (options.graphOps < 1 || options.replays < 1))
    return harnessError("timing needs at least one operation per graph and one replay");
  llvm::Expected<RankBuffers> allocated = allocateBuffers(world, compiled, count, 1);
  if (!allocated)
    return allocated.takeError();
  RankBuffers& buffers = *allocated;
  const std::vector<cudaStream_t> streams = rankStreams(world);
  std::mt19937_64 rng(options.seed);
  RunReport report;
  report.correct = true;

  // Fresh inputs on every rank, outputs poisoned, and all of it on the devices before anyone
  // launches: a peer reads this rank's data as soon as its own kernel starts.
  auto prepare = [&]() -> llvm::Error {
    randomizeInputs(buffers, compiled, count, rng);
    if (llvm::Error err = uploadInputsPoisonOutputs(world, buffers))
      return err;
    return instance.synchronize(streams);
  };
  auto fetchAndCheck = [&](const std::string& what) -> llvm::Error {
    if (llvm::Error err = downloadOutputs(world, buffers))
      return err;
    if (llvm::Error err = instance.synchronize(streams))
      return err;
    checkSlot(buffers, compiled, count, 0, what, report);
    return llvm::Error::success();
  };

  for (int call = 0; call < options.checks; ++call) {
    if (llvm::Error err = prepare())
      return err;
    for (int r = 0; r < world.nranks(); ++r)
      if (llvm::Error err = instance.launch(r, buffers.deviceIn(r, 0), buffers.deviceOut(r, 0),
                                            count, streams[r]))
        return err;
    if (llvm::Error err = instance.synchronize(streams, kSecondsPerOpAllowance))
      return err;
    if (llvm::Error err = fetchAndCheck("call " + std::to_string(call)))
      return err;
  }
  if (!options.time)
    return report;

  RankGraphs graphs(world);
  for (int r = 0; r < world.nranks(); ++r) {
    llvm::Error captured = graphs.capture(r, [&]() -> llvm::Error {
      for (int op = 0; op < options.graphOps; ++op)
        if (llvm::Error err = instance.launch(r, buffers.deviceIn(r, 0), buffers.deviceOut(r, 0),
                                              count, streams[r]))
          return err;
      return llvm::Error::success();
    });
    if (captured)
      return captured;
  }
  llvm::Expected<std::unique_ptr<RankTimers>> timers = RankTimers::create(world);
  if (!timers)
    return timers.takeError();
  // The first replay uploads the graphs and warms caches and clocks; it is not timed.
  if (llvm::Expected<std::vector<double>> warmup =
          replayTimed(world, instance, graphs, **timers, options.graphOps);
      !warmup)
    return warmup.takeError();

  std::vector<double> slowest;
  std::vector<std::vector<double>> perRank(world.nranks());
  for (int replay = 0; replay < options.replays; ++replay) {
    if (llvm::Error err = prepare())
      return err;
    llvm::Expected<std::vector<double>> us =
        replayTimed(world, instance, graphs, **timers, options.graphOps);
    if (!us)
      return us.takeError();
    for (int r = 0; r < world.nranks(); ++r)
      perRank[r].push_back((*us)[r] / options.graphOps);
    slowest.push_back(*std::max_element(us->begin(), us->end()) / options.graphOps);
  }
  report.usPerOp = median(slowest);
  for (const std::vector<double>& times : perRank)
    report.usPerOpPerRank.push_back(median(times));
  // The outputs now hold the last replay's last operation, computed from the last inputs.
  if (llvm::Error err = fetchAndCheck("graph replay " + std::to_string(options.replays) + " op " +
                                      std::to_string(options.graphOps)))
    return err;
  return report;
}

llvm::Expected<RunReport> runGraphStress(LocalWorld& world, CollectiveInstance& instance,
                                         const CompiledCollective& compiled, uint64_t count,
                                         int calls, uint64_t seed) {
  if (llvm::Error err = validate(world, instance, compiled, count))
    return err;
  if (calls < 1)
    return harnessError("a stress graph needs at least one call");
  llvm::Expected<RankBuffers> allocated = allocateBuffers(world, compiled, count, calls);
  if (!allocated)
    return allocated.takeError();
  RankBuffers& buffers = *allocated;
  const std::vector<cudaStream_t> streams = rankStreams(world);
  std::mt19937_64 rng(seed);
  randomizeInputs(buffers, compiled, count, rng);
  if (llvm::Error err = uploadInputsPoisonOutputs(world, buffers))
    return err;
  if (llvm::Error err = instance.synchronize(streams))
    return err;

  RankGraphs graphs(world);
  for (int r = 0; r < world.nranks(); ++r) {
    llvm::Error captured = graphs.capture(r, [&]() -> llvm::Error {
      for (int call = 0; call < calls; ++call)
        if (llvm::Error err = instance.launch(r, buffers.deviceIn(r, call),
                                              buffers.deviceOut(r, call), count, streams[r]))
          return err;
      return llvm::Error::success();
    });
    if (captured)
      return captured;
  }
  llvm::Expected<std::unique_ptr<RankTimers>> timers = RankTimers::create(world);
  if (!timers)
    return timers.takeError();
  llvm::Expected<std::vector<double>> us = replayTimed(world, instance, graphs, **timers, calls);
  if (!us)
    return us.takeError();

  if (llvm::Error err = downloadOutputs(world, buffers))
    return err;
  if (llvm::Error err = instance.synchronize(streams))
    return err;
  RunReport report;
  report.correct = true;
  int wrongCalls = 0;
  for (int call = 0; call < calls; ++call)
    wrongCalls +=
        !checkSlot(buffers, compiled, count, call, "call " + std::to_string(call), report);
  if (wrongCalls)
    report.firstMismatches = std::to_string(wrongCalls) + " of " + std::to_string(calls) +
                             " calls wrong; the first ones:\n" + report.firstMismatches;
  for (double rankUs : *us)
    report.usPerOpPerRank.push_back(rankUs / calls);
  report.usPerOp = *std::max_element(report.usPerOpPerRank.begin(), report.usPerOpPerRank.end());
  return report;
}

} // namespace collc
