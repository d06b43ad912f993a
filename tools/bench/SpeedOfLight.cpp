#include "tools/bench/SpeedOfLight.h"

#include "compiler/CudaCodeGen.h"
#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "runtime/LoadedKernel.h"
#include "runtime/LocalWorld.h"
#include "runtime/StreamPoll.h"
#include "tools/bench/SpeedOfLightKernels.h"
#include "tools/harness/HostData.h"
#include "tools/harness/RankGraphs.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <limits>

namespace collc {
namespace {

constexpr uint64_t kVectorBytes = 16;
/// Every byte of the probes' input (kSolPattern in the kernels): a received word is never 0.
constexpr int kInputByte = 0x3f;
/// The largest grid the trace has room for: every grid collc launches.
constexpr uint64_t kMaxTracedBlocks = COLLC_MAX_BLOCKS;
constexpr uint64_t kMaxTracedWarps = COLLC_MAX_BLOCKS * (1024 / 32);

/// The kernel's trace records, as the host reads them: block 0's thread 0 (SolTracePoint), then
/// the whole grid's, one per block (SolBlockPoint) and one per warp (SolWarpPoint; all 0: no
/// vectors in that warp).
struct TracePoint {
  uint64_t epoch, waited, pushed, arrived, ended;
};
struct BlockTracePoint {
  uint64_t waited, ended;
};
struct WarpTracePoint {
  uint64_t lastPushed, firstArrived, lastArrived;
};
/// The grid's extremes of one call, from its blocks' and warps' records.
struct GridExtremes {
  uint64_t firstWaited = ~0ull, lastWaited = 0, lastPushed = 0;
  uint64_t firstArrived = ~0ull, lastArrived = 0, lastEnded = 0;
};

/// Which probe a measurement runs: where its flags, epochs and scratch are.
enum class Probe { Empty, Exchange, ExchangeRead, CopySignal, CopySentinel };

Error probeError(const std::string& message) {
  return makeError("speed of light: " + message);
}

/// The heap regions of the probes, at the same offsets on every rank.
struct Layout {
  uint64_t in = 0, scratch = 0, slotBytes = 0;
  uint64_t exchangeFlags = 0, exchangeEpochs = 0;
  uint64_t exchangeReadFlags = 0, exchangeReadEpochs = 0, exchangeReadOut = 0;
  uint64_t copyFlags = 0, copyEpochs = 0;
  uint64_t sentinelScratch = 0, sentinelEpochs = 0; // three copies of nranks slots
  uint64_t sentinelOut = 0;                         // the hand-written AllReduce's output
  uint64_t trace = 0, traceCapacity = 0;            // TracePoint[traceCapacity]
  uint64_t traceBlocks = 0; // BlockTracePoint[traceCapacity][blocks], for any grid
  uint64_t traceWarps = 0;  // WarpTracePoint[traceCapacity][warps], for any grid
  uint64_t watchdog = 0;
  uint64_t end = 0;
};

Layout layoutFor(int nranks, uint64_t maxBytes, int graphOps) {
  auto align = [](uint64_t x) { return (x + 255) / 256 * 256; };
  const uint64_t flagBytes = uint64_t(COLLC_MAX_BLOCKS) * uint64_t(nranks) * 8;
  const uint64_t epochBytes = uint64_t(COLLC_MAX_BLOCKS) * 8;
  Layout l;
  l.slotBytes = align(maxBytes);
  l.in = 0;
  l.scratch = l.in + l.slotBytes;
  l.exchangeFlags = l.scratch + l.slotBytes * uint64_t(nranks);
  l.exchangeEpochs = align(l.exchangeFlags + flagBytes);
  l.exchangeReadFlags = align(l.exchangeEpochs + epochBytes);
  l.exchangeReadEpochs = align(l.exchangeReadFlags + flagBytes);
  l.exchangeReadOut = align(l.exchangeReadEpochs + epochBytes);
  l.copyFlags = align(l.exchangeReadOut + epochBytes); // a word per block, as the epochs
  l.copyEpochs = align(l.copyFlags + flagBytes);
  l.sentinelScratch = align(l.copyEpochs + epochBytes);
  l.sentinelEpochs = l.sentinelScratch + 3 * l.slotBytes * uint64_t(nranks);
  l.sentinelOut = align(l.sentinelEpochs + epochBytes);
  l.trace = align(l.sentinelOut + l.slotBytes);
  l.traceCapacity = uint64_t(std::max(graphOps, 1));
  l.traceBlocks = align(l.trace + l.traceCapacity * sizeof(TracePoint));
  l.traceWarps =
      align(l.traceBlocks + l.traceCapacity * kMaxTracedBlocks * sizeof(BlockTracePoint));
  l.watchdog = align(l.traceWarps + l.traceCapacity * kMaxTracedWarps * sizeof(WarpTracePoint));
  l.end = align(l.watchdog + sizeof(collc_watchdog));
  return l;
}

/// Times the probes on one world, as collc bench times collectives.
class Prober {
public:
  Prober(LocalWorld& world, const Layout& layout, const SpeedOfLightSettings& settings)
      : world_(world), layout_(layout), settings_(settings) {}

  /// Per-operation µs of `kernel` launched `graphOps` times per rank in a graph, as collc bench
  /// times collectives; `bytes` is the copy probe's size (0 for the others).
  Expected<double> time(const LoadedKernel& kernel, Probe probe, SpeedOfLightGrid grid,
                        uint64_t bytes) {
    RankGraphs graphs(world_);
    if (Error err = capture(graphs, kernel, probe, grid, bytes, /*trace=*/false))
      return err;
    return medianSlowestReplayUs(world_, graphs, settings_.graphOps, settings_.replays,
                                 [&] { return synchronize(); });
  }

  /// Per-operation µs of `bytes` copied by cudaMemcpyAsync from each rank's input into its slot
  /// in every peer's scratch, `graphOps` times per rank in a graph: the copy-engine probe. With
  /// `exchange`, each copy sits between two launches of it, as a collective that moved its data
  /// with the copy engines would need: one before (every rank's input is ready) and one after
  /// (every rank knows its peers' bytes landed, for the reduction that would follow).
  /// The copies are checked: each slot is cleared first and must hold the input after.
  Expected<double> timeCopyEngine(uint64_t bytes, const LoadedKernel* exchange) {
    if (Error err = clearSlots())
      return err;
    RankGraphs graphs(world_);
    const std::vector<collc_params> params = probeParams(Probe::Exchange, bytes, false);
    for (int r = 0; r < world_.nranks(); ++r)
      if (Error err = graphs.capture(r, [&]() -> Error {
            for (int op = 0; op < settings_.graphOps; ++op) {
              if (Error err = launchExchange(exchange, r, params))
                return err;
              if (Error err = copyWithEngine(r, bytes, world_.stream(r)))
                return err;
              if (Error err = launchExchange(exchange, r, params))
                return err;
            }
            return Error::success();
          }))
        return err;
    return timeCheckedCopy(graphs, bytes, "the copy engine's copy");
  }

  /// Per-operation µs of `bytes` moved into every peer by the copy engines and the SMs at once:
  /// the first `engineBytes` by cudaMemcpyAsync on a branch of each rank's graph, the rest by
  /// `smCopy` (sol_copy at `grid`) on the other branch. Without `exchange`, each engine's copies
  /// run back to back on its own branch and the branches meet only at the graph's end: how fast
  /// both engines together move bytes over the link, nothing ordered. With it, every operation is
  /// an exchange, the two copies side by side, and an exchange after both: the least a
  /// collective costs that splits its bytes between the engines and whose kernels must know they
  /// landed. Checked as the copy engines' probe is.
  Expected<double> timeSplit(uint64_t bytes, uint64_t engineBytes, const LoadedKernel& smCopy,
                             SpeedOfLightGrid grid, const LoadedKernel* exchange) {
    if (Error err = clearSlots())
      return err;
    // The second branch's streams and events, made once for every split measured.
    if (!side_) {
      auto side = SideBranches::create(world_);
      if (!side)
        return side.takeError();
      side_ = std::move(*side);
    }
    SideBranches& side = *side_;
    const std::vector<collc_params> exchangeParams = probeParams(Probe::Exchange, bytes, false);
    std::vector<collc_params> smParams = probeParams(Probe::CopySignal, bytes - engineBytes, false);
    for (collc_params& p : smParams) {
      p.in = static_cast<const char*>(p.in) + engineBytes;
      p.scratch_offset[0] += engineBytes;
    }
    const bool ordered = exchange != nullptr;
    RankGraphs graphs(world_);
    for (int r = 0; r < world_.nranks(); ++r)
      if (Error err = graphs.capture(r, [&]() -> Error {
            cudaStream_t main = world_.stream(r), branch = side.stream(r);
            auto smPart = [&]() {
              return smCopy.launch(r, dim3(unsigned(grid.blocks)), dim3(unsigned(grid.threads)),
                                   smParams[size_t(r)], main, /*programmatic=*/!ordered);
            };
            if (!ordered) {
              if (Error err = side.fork(r))
                return err;
              for (int op = 0; op < settings_.graphOps; ++op) {
                if (Error err = copyWithEngine(r, engineBytes, branch))
                  return err;
                if (Error err = smPart())
                  return err;
              }
              return side.join(r);
            }
            for (int op = 0; op < settings_.graphOps; ++op) {
              if (Error err = launchExchange(exchange, r, exchangeParams))
                return err;
              if (Error err = side.fork(r))
                return err;
              if (Error err = copyWithEngine(r, engineBytes, branch))
                return err;
              if (Error err = smPart())
                return err;
              if (Error err = side.join(r))
                return err;
              if (Error err = launchExchange(exchange, r, exchangeParams))
                return err;
            }
            return Error::success();
          }))
        return err;
    return timeCheckedCopy(graphs, bytes, "the split copy");
  }

  /// Per-operation µs of the hand-written AllReduce (sol_allreduce_sentinel) of `bytes` at
  /// `grid`; then every rank's output must hold the sum of every rank's input, each bf16 element
  /// as the kernel adds it (its own, then each peer's, rounding each add).
  Expected<double> timeHandWrittenAllReduce(const LoadedKernel& kernel, SpeedOfLightGrid grid,
                                            uint64_t bytes) {
    ScopedDevice restore;
    for (int r : world_.localRanks()) {
      COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
      COLLC_CUDA_TRY(cudaMemset(world_.heapBase(r) + layout_.sentinelOut, 0, bytes));
      COLLC_CUDA_TRY(cudaDeviceSynchronize());
    }
    auto us = time(kernel, Probe::CopySentinel, grid, bytes);
    if (!us)
      return us.takeError();
    const uint16_t element = uint16_t(kInputByte << 8 | kInputByte);
    float sum = bf16ToFloat(element);
    for (int peer = 1; peer < world_.nranks(); ++peer)
      sum = bf16ToFloat(floatToBf16(sum + bf16ToFloat(element)));
    const uint16_t expected = floatToBf16(sum);
    for (int r : world_.localRanks()) {
      std::vector<uint16_t> out(bytes / 2);
      COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
      COLLC_CUDA_TRY(cudaMemcpy(out.data(), world_.heapBase(r) + layout_.sentinelOut, bytes,
                                cudaMemcpyDeviceToHost));
      auto wrong = std::find_if(out.begin(), out.end(), [&](uint16_t e) { return e != expected; });
      if (wrong != out.end())
        return probeError(fmt::format(
            "the hand-written AllReduce of {} bytes: rank {} element {} is {:#06x}, not {:#06x}",
            bytes, r, wrong - out.begin(), *wrong, expected));
    }
    return *us;
  }

  /// Replays the sentinel copy twice with its trace on and returns, per rank, the mean time
  /// between its points over the second replay's calls.
  Expected<std::vector<CallBreakdown>> trace(const LoadedKernel& kernel, SpeedOfLightGrid grid,
                                             uint64_t bytes) {
    if (uint64_t(grid.blocks) > kMaxTracedBlocks || grid.threads % 32 != 0 ||
        uint64_t(grid.blocks) * uint64_t(grid.threads / 32) > kMaxTracedWarps)
      return probeError(
          fmt::format("the trace has no room for a {}x{} grid", grid.blocks, grid.threads));
    RankGraphs graphs(world_);
    if (Error err = capture(graphs, kernel, Probe::CopySentinel, grid, bytes, true))
      return err;
    std::vector<CallBreakdown> breakdown;
    for (int replay = 0; replay < 2; ++replay) {
      for (int r : world_.localRanks())
        if (Error err = graphs.launch(r))
          return err;
      if (Error err = synchronize())
        return err;
    }
    const size_t capacity = layout_.traceCapacity;
    const size_t blocks = size_t(grid.blocks), warps = blocks * size_t(grid.threads / 32);
    for (int r : world_.localRanks()) {
      std::vector<TracePoint> points(capacity);
      std::vector<BlockTracePoint> blockPoints(capacity * blocks);
      std::vector<WarpTracePoint> warpPoints(capacity * warps);
      COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
      const char* base = world_.heapBase(r);
      COLLC_CUDA_TRY(cudaMemcpy(points.data(), base + layout_.trace,
                                points.size() * sizeof(TracePoint), cudaMemcpyDeviceToHost));
      COLLC_CUDA_TRY(cudaMemcpy(blockPoints.data(), base + layout_.traceBlocks,
                                blockPoints.size() * sizeof(BlockTracePoint),
                                cudaMemcpyDeviceToHost));
      COLLC_CUDA_TRY(cudaMemcpy(warpPoints.data(), base + layout_.traceWarps,
                                warpPoints.size() * sizeof(WarpTracePoint),
                                cudaMemcpyDeviceToHost));
      breakdown.push_back(
          breakdownOf(std::move(points), gridExtremesOf(blockPoints, blocks, warpPoints, warps)));
    }
    return breakdown;
  }

  /// Waits for every rank's stream, bounded (a probe's waits give up after the timeout, so the
  /// streams end unless a launch hangs outside them), then reports a probe that gave up.
  Error synchronize() {
    std::vector<cudaStream_t> streams;
    for (int r : world_.localRanks())
      streams.push_back(world_.stream(r));
    std::vector<bool> done(streams.size(), false);
    if (Error err = pollStreams(streams, world_.localRanks(), done,
                                std::chrono::steady_clock::now() +
                                    std::chrono::nanoseconds(settings_.timeoutNs) * 2 +
                                    std::chrono::seconds(10)))
      return probeError(toString(std::move(err)));
    for (int r : world_.localRanks()) {
      if (!done[size_t(r)])
        return probeError(std::string("rank ") + std::to_string(r) +
                          "'s stream did not finish: a probe hangs");
      collc_watchdog watchdog{};
      COLLC_CUDA_TRY(cudaMemcpy(&watchdog, world_.heapBase(r) + layout_.watchdog, sizeof watchdog,
                                cudaMemcpyDeviceToHost));
      if (watchdog.tripped == 2)
        return probeError(fmt::format("rank {} received a wrong word from rank {} ({:#x}): a "
                                      "probe is broken",
                                      watchdog.rank, watchdog.waiting_on_rank, watchdog.observed));
      if (watchdog.tripped)
        return probeError(fmt::format("rank {} block {} waited more than {} ms for rank {} "
                                      "(flag {} of {})",
                                      watchdog.rank, watchdog.block, settings_.timeoutNs / 1000000,
                                      watchdog.waiting_on_rank, watchdog.observed,
                                      watchdog.expected));
    }
    return Error::success();
  }

private:
  /// A second stream per rank and the events that fork it from the rank's stream and join it
  /// back, inside a capture: a graph's second branch.
  class SideBranches {
  public:
    static Expected<std::unique_ptr<SideBranches>> create(const LocalWorld& world) {
      std::unique_ptr<SideBranches> side(new SideBranches(world));
      ScopedDevice restore;
      for (int r = 0; r < world.nranks(); ++r) {
        COLLC_CUDA_TRY(cudaSetDevice(world.device(r)));
        side->streams_.push_back(nullptr);
        COLLC_CUDA_TRY(cudaStreamCreateWithFlags(&side->streams_.back(), cudaStreamNonBlocking));
        for (std::vector<cudaEvent_t>* events : {&side->forks_, &side->joins_}) {
          events->push_back(nullptr);
          COLLC_CUDA_TRY(cudaEventCreateWithFlags(&events->back(), cudaEventDisableTiming));
        }
      }
      return side;
    }
    ~SideBranches() {
      for (cudaStream_t stream : streams_)
        if (stream && cudaStreamDestroy(stream) != cudaSuccess)
          (void)cudaGetLastError();
      for (const std::vector<cudaEvent_t>* events : {&forks_, &joins_})
        for (cudaEvent_t event : *events)
          if (event && cudaEventDestroy(event) != cudaSuccess)
            (void)cudaGetLastError();
    }
    SideBranches(const SideBranches&) = delete;
    SideBranches& operator=(const SideBranches&) = delete;

    cudaStream_t stream(int rank) const { return streams_[size_t(rank)]; }
    /// What is enqueued on the side stream from here on runs beside the rank's stream.
    Error fork(int rank) {
      COLLC_CUDA_TRY(cudaEventRecord(forks_[size_t(rank)], world_.stream(rank)));
      COLLC_CUDA_TRY(cudaStreamWaitEvent(streams_[size_t(rank)], forks_[size_t(rank)], 0));
      return Error::success();
    }
    /// What is enqueued on the rank's stream from here on waits for the side stream too.
    Error join(int rank) {
      COLLC_CUDA_TRY(cudaEventRecord(joins_[size_t(rank)], streams_[size_t(rank)]));
      COLLC_CUDA_TRY(cudaStreamWaitEvent(world_.stream(rank), joins_[size_t(rank)], 0));
      return Error::success();
    }

  private:
    explicit SideBranches(const LocalWorld& world) : world_(world) {}
    const LocalWorld& world_;
    std::vector<cudaStream_t> streams_;
    std::vector<cudaEvent_t> forks_, joins_;
  };

  /// Rank `receiver`'s slot for `sender`'s bytes in the copy probes' scratch.
  char* slot(int receiver, int sender) const {
    return world_.heapBase(receiver) + layout_.scratch + uint64_t(sender) * layout_.slotBytes;
  }

  /// Zeroes every rank's slots, so that a copy that did not land shows.
  Error clearSlots() {
    ScopedDevice restore;
    for (int r = 0; r < world_.nranks(); ++r) {
      COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
      COLLC_CUDA_TRY(cudaMemset(slot(r, 0), 0, layout_.slotBytes * uint64_t(world_.nranks())));
      COLLC_CUDA_TRY(cudaDeviceSynchronize());
    }
    return Error::success();
  }

  /// Every rank's slot for every peer must hold the first `bytes` of the input, whole.
  Error checkSlots(uint64_t bytes, const char* what) {
    ScopedDevice restore;
    for (int r = 0; r < world_.nranks(); ++r)
      for (int q = 0; q < world_.nranks(); ++q) {
        if (q == r)
          continue;
        std::vector<unsigned char> landed(bytes);
        COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
        COLLC_CUDA_TRY(cudaMemcpy(landed.data(), slot(r, q), bytes, cudaMemcpyDeviceToHost));
        if (std::any_of(landed.begin(), landed.end(),
                        [](unsigned char b) { return b != kInputByte; }))
          return probeError(fmt::format("{} of {} bytes from rank {} to rank {} did not land whole",
                                        what, bytes, q, r));
      }
    return Error::success();
  }

  /// Per-operation µs of `graphs`, timed as collc bench times collectives; then every slot must
  /// hold the input's first `bytes` (`what` copied them).
  Expected<double> timeCheckedCopy(RankGraphs& graphs, uint64_t bytes, const char* what) {
    auto us = medianSlowestReplayUs(world_, graphs, settings_.graphOps, settings_.replays,
                                    [&] { return synchronize(); });
    if (!us)
      return us.takeError();
    if (Error err = checkSlots(bytes, what))
      return err;
    return *us;
  }

  /// Enqueues on `stream` rank r's copy-engine copy of its input's first `bytes` into its slot in
  /// every peer.
  Error copyWithEngine(int r, uint64_t bytes, cudaStream_t stream) {
    const char* in = world_.heapBase(r) + layout_.in;
    for (int q = 0; q < world_.nranks(); ++q)
      if (q != r)
        COLLC_CUDA_TRY(cudaMemcpyAsync(world_.peerHeap(q, r) + layout_.scratch +
                                           uint64_t(r) * layout_.slotBytes,
                                       in, bytes, cudaMemcpyDeviceToDevice, stream));
    return Error::success();
  }

  /// The flag exchange on rank r's stream, if there is one; plain launches: a copy between two
  /// kernels breaks the programmatic chain anyway.
  Error launchExchange(const LoadedKernel* exchange, int r,
                       const std::vector<collc_params>& params) {
    if (!exchange)
      return Error::success();
    return exchange->launch(r, dim3(1), dim3(32), params[size_t(r)], world_.stream(r),
                            /*programmatic=*/false);
  }

  /// Each rank's parameters for `probe`: where its flags, epochs and scratch are.
  std::vector<collc_params> probeParams(Probe probe, uint64_t bytes, bool trace) {
    const int nranks = world_.nranks();
    const bool copyProbe = probe == Probe::CopySignal;
    std::vector<collc_params> params(static_cast<size_t>(nranks));
    for (int r = 0; r < nranks; ++r) {
      collc_params& p = params[size_t(r)];
      p = collc_params{};
      char* base = world_.heapBase(r);
      p.in = base + layout_.in;
      p.count = bytes;
      p.rank = r;
      p.nranks = nranks;
      for (int q = 0; q < nranks; ++q)
        p.heap[q] = world_.peerHeap(q, r);
      p.scratch_offset[0] = layout_.scratch;
      p.scratch_offset[1] = layout_.sentinelScratch;
      p.parity_stride = layout_.slotBytes; // here: the bytes of one sender's slot
      p.flags_offset = copyProbe                      ? layout_.copyFlags
                       : probe == Probe::ExchangeRead ? layout_.exchangeReadFlags
                                                      : layout_.exchangeFlags;
      p.epochs = reinterpret_cast<unsigned long long*>(
          base + (probe == Probe::CopySentinel   ? layout_.sentinelEpochs
                  : copyProbe                    ? layout_.copyEpochs
                  : probe == Probe::ExchangeRead ? layout_.exchangeReadEpochs
                                                 : layout_.exchangeEpochs));
      if (probe == Probe::ExchangeRead)
        p.out = base + layout_.exchangeReadOut; // what sol_exchange_read_write received
      if (probe == Probe::CopySentinel)
        p.out = base + layout_.sentinelOut; // sol_allreduce_sentinel's sums
      p.watchdog = reinterpret_cast<collc_watchdog*>(base + layout_.watchdog);
      p.timeout_ns = settings_.timeoutNs;
      if (trace) {
        p.aux[0] = base + layout_.trace;
        p.aux[1] = reinterpret_cast<void*>(uintptr_t(layout_.traceCapacity));
        p.aux[2] = base + layout_.traceBlocks;
        p.aux[3] = base + layout_.traceWarps;
      }
    }
    return params;
  }

  Error capture(RankGraphs& graphs, const LoadedKernel& kernel, Probe probe, SpeedOfLightGrid grid,
                uint64_t bytes, bool trace) {
    const int nranks = world_.nranks();
    const std::vector<collc_params> params = probeParams(probe, bytes, trace);
    for (int r = 0; r < nranks; ++r)
      if (Error err = graphs.capture(r, [&]() -> Error {
            for (int op = 0; op < settings_.graphOps; ++op)
              if (Error err =
                      kernel.launch(r, dim3(unsigned(grid.blocks)), dim3(unsigned(grid.threads)),
                                    params[size_t(r)], world_.stream(r), /*programmatic=*/true))
                return err;
            return Error::success();
          }))
        return err;
    return Error::success();
  }

  /// Each trace slot's extremes over the grid's `blocks` block records and `warps` warp records
  /// (slot-major). Slot k holds the call whose epoch is k + 1 modulo the capacity, as block 0's
  /// record does.
  static std::vector<GridExtremes> gridExtremesOf(const std::vector<BlockTracePoint>& blockPoints,
                                                  size_t blocks,
                                                  const std::vector<WarpTracePoint>& warpPoints,
                                                  size_t warps) {
    std::vector<GridExtremes> extremes(blockPoints.size() / blocks);
    for (size_t slot = 0; slot < extremes.size(); ++slot) {
      GridExtremes& e = extremes[slot];
      for (size_t b = 0; b < blocks; ++b) {
        const BlockTracePoint& point = blockPoints[slot * blocks + b];
        e.firstWaited = std::min(e.firstWaited, point.waited);
        e.lastWaited = std::max(e.lastWaited, point.waited);
        e.lastEnded = std::max(e.lastEnded, point.ended);
      }
      for (size_t w = 0; w < warps; ++w) {
        const WarpTracePoint& point = warpPoints[slot * warps + w];
        if (point.lastArrived == 0)
          continue; // no vectors in that warp
        e.lastPushed = std::max(e.lastPushed, point.lastPushed);
        e.firstArrived = std::min(e.firstArrived, point.firstArrived);
        e.lastArrived = std::max(e.lastArrived, point.lastArrived);
      }
    }
    return extremes;
  }

  /// Means over consecutive calls of one rank's trace (the records of the last replay: the
  /// highest epochs), in µs. A call's gap is from the previous call's end to its own wait's end.
  /// The replay's first call is left out of both chains: it also waits for the other GPUs'
  /// graphs to start, and the grid's chain runs through its inside.
  static CallBreakdown breakdownOf(std::vector<TracePoint> points,
                                   const std::vector<GridExtremes>& extremes) {
    std::sort(points.begin(), points.end(),
              [](const TracePoint& a, const TracePoint& b) { return a.epoch < b.epoch; });
    auto gridOf = [&](const TracePoint& point) -> const GridExtremes& {
      return extremes[(point.epoch - 1) % extremes.size()];
    };
    CallBreakdown b;
    double pushed = 0, arrived = 0, ended = 0, gap = 0;
    // The whole grid's chain runs over the earlier call of each pair, to the later one's start.
    double release = 0, lastPush = 0, firstArrival = 0, arrivals = 0, blockEnds = 0, gridGap = 0;
    // Signed, so that a difference that comes out negative shows in the mean and does not wrap.
    auto ns = [](uint64_t later, uint64_t earlier) { return double(int64_t(later - earlier)); };
    for (size_t k = 2; k < points.size(); ++k) {
      const TracePoint &prev = points[k - 1], &call = points[k];
      if (prev.epoch == 0 || call.epoch != prev.epoch + 1)
        continue;
      pushed += ns(call.pushed, call.waited);
      arrived += ns(call.arrived, call.pushed);
      ended += ns(call.ended, call.arrived);
      gap += ns(call.waited, prev.ended);
      const GridExtremes &before = gridOf(prev), &after = gridOf(call);
      release += ns(before.lastWaited, before.firstWaited);
      lastPush += ns(before.lastPushed, before.firstWaited);
      firstArrival += ns(before.firstArrived, before.firstWaited);
      arrivals += ns(before.lastArrived, before.firstArrived);
      blockEnds += ns(before.lastEnded, before.lastArrived);
      gridGap += ns(after.firstWaited, before.lastEnded);
      ++b.calls;
    }
    if (b.calls == 0)
      return b;
    const double perCallUs = 1e-3 / b.calls;
    b.waitedToPushedUs = pushed * perCallUs;
    b.pushedToArrivedUs = arrived * perCallUs;
    b.arrivedToEndedUs = ended * perCallUs;
    b.endedToNextWaitedUs = gap * perCallUs;
    b.grid.releaseSpreadUs = release * perCallUs;
    b.grid.firstWaitedToLastPushedUs = lastPush * perCallUs;
    b.grid.firstWaitedToFirstArrivedUs = firstArrival * perCallUs;
    b.grid.arrivalSpreadUs = arrivals * perCallUs;
    b.grid.lastArrivedToLastEndedUs = blockEnds * perCallUs;
    b.grid.lastEndedToNextWaitedUs = gridGap * perCallUs;
    return b;
  }

  LocalWorld& world_;
  Layout layout_;
  const SpeedOfLightSettings& settings_;
  std::unique_ptr<SideBranches> side_; // made by the first split measured
};

} // namespace

const std::vector<SpeedOfLightGrid>& speedOfLightGrids() {
  // 64 x 64 and 132 x 32: many blocks of few threads, about one vector per thread at 16-64 KiB,
  // the shapes that collc's AllReduce ran fastest at there; 132 x 1024, its shape at 16-64 MiB.
  static const std::vector<SpeedOfLightGrid> grids = {{1, 128},
                                                      {4, 256},
                                                      {64, 64},
                                                      {COLLC_MAX_BLOCKS, 32},
                                                      {32, 512},
                                                      {COLLC_MAX_BLOCKS, 512},
                                                      {COLLC_MAX_BLOCKS, 1024}};
  return grids;
}

const std::vector<double>& splitEngineShares() {
  // From a little to most: the copy engines move bytes faster, but a kernel-to-copy edge in a
  // graph costs far more than a kernel boundary, so the best share is not known in advance.
  static const std::vector<double> shares = {0.125, 0.25, 0.5, 0.625, 0.75, 0.875};
  return shares;
}

uint64_t splitEngineBytes(uint64_t bytes, double share) {
  if (bytes < 2 * kVectorBytes)
    return 0;
  const uint64_t vectors = bytes / kVectorBytes;
  const uint64_t engine = std::clamp<uint64_t>(uint64_t(double(vectors) * share), 1, vectors - 1);
  return engine * kVectorBytes;
}

std::string speedOfLightSource() {
  return std::string(kernelAbiHeader()) + "\n" + std::string(speedOfLightKernelText());
}

Expected<SpeedOfLightReport> measureSpeedOfLight(const std::vector<int>& devices,
                                                 const SpeedOfLightSettings& settings) {
  if (devices.size() < 2)
    return probeError("needs 2 or more GPUs");
  if (settings.graphOps < 1 || settings.replays < 1)
    return probeError("timing needs at least one launch per graph and one replay");
  for (uint64_t bytes : settings.sizes)
    if (bytes == 0 || bytes % kVectorBytes != 0)
      return probeError(std::to_string(bytes) + " bytes is not a whole number of 16-byte vectors");
  const uint64_t maxBytes = settings.sizes.empty()
                                ? kVectorBytes
                                : *std::max_element(settings.sizes.begin(), settings.sizes.end());
  const Layout layout = layoutFor(int(devices.size()), maxBytes, settings.graphOps);

  JitOptions jit;
  jit.arch = gpuArch(devices[0]);
  auto image = compileCuda(speedOfLightSource(), "collc_speed_of_light", JitOutput::Cubin, jit);
  if (!image)
    return probeError("NVRTC: " + toString(image.takeError()));
  auto empty = LoadedKernel::load(devices, image->image, "sol_empty");
  if (!empty)
    return empty.takeError();
  auto exchange = LoadedKernel::load(devices, image->image, "sol_exchange");
  if (!exchange)
    return exchange.takeError();
  auto exchangeRead = LoadedKernel::load(devices, image->image, "sol_exchange_read");
  if (!exchangeRead)
    return exchangeRead.takeError();
  auto exchangeReadWrite = LoadedKernel::load(devices, image->image, "sol_exchange_read_write");
  if (!exchangeReadWrite)
    return exchangeReadWrite.takeError();
  auto copy = LoadedKernel::load(devices, image->image, "sol_copy_signal");
  if (!copy)
    return copy.takeError();
  auto smCopy = LoadedKernel::load(devices, image->image, "sol_copy");
  if (!smCopy)
    return smCopy.takeError();
  auto sentinel = LoadedKernel::load(devices, image->image, "sol_copy_sentinel");
  if (!sentinel)
    return sentinel.takeError();
  auto sentinelTraced = LoadedKernel::load(devices, image->image, "sol_copy_sentinel_traced");
  if (!sentinelTraced)
    return sentinelTraced.takeError();
  auto handWritten = LoadedKernel::load(devices, image->image, "sol_allreduce_sentinel");
  if (!handWritten)
    return handWritten.takeError();
  // The heap comes zeroed: flags and epochs start at 0, and the sentinel copy's scratch holds its
  // sentinel (0). The input is the pattern the sentinel copy checks.
  auto world = LocalWorld::create(devices, layout.end);
  if (!world)
    return world.takeError();
  for (int r : (*world)->localRanks()) {
    COLLC_CUDA_TRY(cudaSetDevice((*world)->device(r)));
    COLLC_CUDA_TRY(cudaMemset((*world)->heapBase(r) + layout.in, kInputByte, layout.slotBytes));
    COLLC_CUDA_TRY(cudaDeviceSynchronize());
  }
  Prober prober(**world, layout, settings);
  auto say = [&](const std::string& what) {
    if (settings.progress)
      settings.progress(what);
  };

  SpeedOfLightReport report;
  say("empty kernel");
  auto emptyUs = prober.time(**empty, Probe::Empty, {1, 32}, 0);
  if (!emptyUs)
    return emptyUs.takeError();
  report.emptyUs = *emptyUs;
  say("flag exchange");
  auto exchangeUs = prober.time(**exchange, Probe::Exchange, {1, 32}, 0);
  if (!exchangeUs)
    return exchangeUs.takeError();
  report.exchangeUs = *exchangeUs;
  say("flag exchange after an input read");
  auto exchangeReadUs = prober.time(**exchangeRead, Probe::ExchangeRead, {1, 32}, 0);
  if (!exchangeReadUs)
    return exchangeReadUs.takeError();
  report.exchangeReadUs = *exchangeReadUs;
  say("flag exchange after an input read, writing what it received");
  auto exchangeReadWriteUs = prober.time(**exchangeReadWrite, Probe::ExchangeRead, {1, 32}, 0);
  if (!exchangeReadWriteUs)
    return exchangeReadWriteUs.takeError();
  report.exchangeReadWriteUs = *exchangeReadWriteUs;
  // The copy probe `probe` of `bytes` at every grid: the fastest time and its grid.
  auto bestGrid = [&](const LoadedKernel& kernel, Probe probe, const char* what, uint64_t bytes,
                      double& bestUs, SpeedOfLightGrid& best) -> Error {
    bestUs = std::numeric_limits<double>::infinity();
    for (const SpeedOfLightGrid& grid : speedOfLightGrids()) {
      say(fmt::format("{} {} B, {}x{}", what, bytes, grid.blocks, grid.threads));
      auto us = prober.time(kernel, probe, grid, bytes);
      if (!us)
        return us.takeError();
      if (*us < bestUs) {
        bestUs = *us;
        best = grid;
      }
    }
    return Error::success();
  };
  for (uint64_t bytes : settings.sizes) {
    CopyFloor floor;
    floor.bytes = bytes;
    if (Error err =
            bestGrid(**copy, Probe::CopySignal, "copy + signal", bytes, floor.us, floor.grid))
      return err;
    if (Error err = bestGrid(**sentinel, Probe::CopySentinel, "sentinel copy", bytes,
                             floor.sentinelUs, floor.sentinelGrid))
      return err;
    say(fmt::format("hand-written one-shot sentinel AllReduce {} B", bytes));
    auto handWrittenUs = prober.timeHandWrittenAllReduce(**handWritten, floor.sentinelGrid, bytes);
    if (!handWrittenUs)
      return handWrittenUs.takeError();
    floor.handWrittenAllReduceUs = *handWrittenUs;
    say(fmt::format("sentinel copy {} B traced", bytes));
    auto breakdown = prober.trace(**sentinelTraced, floor.sentinelGrid, bytes);
    if (!breakdown)
      return breakdown.takeError();
    floor.breakdown = std::move(*breakdown);
    say(fmt::format("copy engine {} B", bytes));
    auto copyEngineUs = prober.timeCopyEngine(bytes, nullptr);
    if (!copyEngineUs)
      return copyEngineUs.takeError();
    floor.copyEngineUs = *copyEngineUs;
    say(fmt::format("copy engine {} B between two exchanges", bytes));
    auto orderedUs = prober.timeCopyEngine(bytes, exchange->get());
    if (!orderedUs)
      return orderedUs.takeError();
    floor.copyEngineOrderedUs = *orderedUs;
    for (double share : splitEngineShares()) {
      const uint64_t engineBytes = splitEngineBytes(bytes, share);
      if (engineBytes == 0)
        break;
      SplitTiming timing{share, 0, 0};
      for (bool ordered : {false, true}) {
        say(fmt::format("copy engines ({:.1f}%) and SMs at once, {} B{}", share * 100, bytes,
                        ordered ? ", between two exchanges" : ""));
        auto us = prober.timeSplit(bytes, engineBytes, **smCopy, floor.grid,
                                   ordered ? exchange->get() : nullptr);
        if (!us)
          return us.takeError();
        (ordered ? timing.orderedUs : timing.us) = *us;
        SplitFloor& best = ordered ? floor.splitOrdered : floor.split;
        if (best.us == 0 || *us < best.us)
          best = SplitFloor{*us, share};
      }
      floor.splits.push_back(timing);
    }
    report.copies.push_back(floor);
  }
  return report;
}

} // namespace collc
