#include "runtime/SpeedOfLight.h"

#include "compiler/CudaCodeGen.h"
#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "runtime/LoadedKernel.h"
#include "runtime/LocalWorld.h"
#include "runtime/RankGraphs.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <limits>

namespace collc {
namespace {

const char* const kProbeKernels = R"cuda(
typedef unsigned long long u64;

__device__ __forceinline__ u64 sol_now() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// Flags are read and written past the caches: a peer's store must be seen when it lands.
__device__ __forceinline__ u64 sol_load(const u64 *p) {
  u64 v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void sol_store(u64 *p, u64 v) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/// Block b's flag from rank `from`, in rank `owner`'s heap: u64[blocks][nranks] at flags_offset.
__device__ __forceinline__ u64 *sol_flag(const collc_params &p, int owner, int block, int from) {
  return reinterpret_cast<u64 *>(p.heap[owner] + p.flags_offset) + block * p.nranks + from;
}
/// Waits until the flag reaches this call's epoch (a peer is at most one call ahead), bounded by
/// the watchdog's timeout: the first waiter to give up records where, and the host reports it.
__device__ bool sol_wait(const collc_params &p, const u64 *flag, u64 epoch, int peer) {
  if (sol_load(flag) >= epoch)
    return true;
  const u64 start = sol_now();
  while (sol_load(flag) < epoch)
    if (sol_now() - start > p.timeout_ns) {
      if (atomicCAS(&p.watchdog->tripped, 0u, 1u) == 0u) {
        p.watchdog->rank = p.rank;
        p.watchdog->block = blockIdx.x;
        p.watchdog->waiting_on_rank = peer;
        p.watchdog->expected = epoch;
        p.watchdog->observed = sol_load(flag);
      }
      return false;
    }
  return true;
}
/// Every block's thread 0: tell each peer's block b that this call (`epoch`) reached here, then
/// wait for theirs.
__device__ void sol_signal_and_wait(const collc_params &p, u64 epoch) {
  for (int q = 0; q < p.nranks; ++q)
    if (q != p.rank)
      sol_store(sol_flag(p, q, blockIdx.x, p.rank), epoch);
  for (int q = 0; q < p.nranks; ++q)
    if (q != p.rank && !sol_wait(p, sol_flag(p, p.rank, blockIdx.x, q), epoch, q))
      break;
}

// Launched as programmatic dependent launches, like collc's kernels: wait for the previous
// kernel, then let the next one be scheduled.
#define SOL_ENTRY                                                                                  \
  asm volatile("griddepcontrol.wait;" ::: "memory");                                               \
  asm volatile("griddepcontrol.launch_dependents;");

/// The head of collc's kernels (compiler/CudaCodeGen.cpp, printHead), for the probes that count
/// calls: the block's epoch is read before the wait and stored back at once, fenced before
/// thread 0 alone lets the next kernel be scheduled (which reads it early in turn).
__device__ __forceinline__ u64 sol_head(const collc_params &p) {
  u64 epoch;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(epoch) : "l"(p.epochs + blockIdx.x)
               : "memory");
  ++epoch;
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p.epochs + blockIdx.x), "l"(epoch)
                 : "memory");
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (threadIdx.x == 0)
    asm volatile("griddepcontrol.launch_dependents;");
  return epoch;
}

extern "C" __global__ void sol_empty(const __grid_constant__ collc_params p) { SOL_ENTRY }

extern "C" __global__ void sol_exchange(const __grid_constant__ collc_params p) {
  const u64 epoch = sol_head(p);
  if (threadIdx.x == 0)
    sol_signal_and_wait(p, epoch);
}

/// The exchange, but each flag carries a word of the input read after the wait, as any
/// collective's first data does (the previous kernel may have written it): the flag is the epoch
/// only if the word is the input's pattern, so the store waits for the load. A wrong word makes
/// the flag far from the epoch, which the waiting peer reports.
extern "C" __global__ void sol_exchange_read(const __grid_constant__ collc_params p) {
  const u64 epoch = sol_head(p);
  if (threadIdx.x == 0) {
    const u64 word = __ldcg(static_cast<const u64 *>(p.in));
    const u64 flag = epoch ^ (word ^ 0x3f3f3f3f3f3f3f3full);
    for (int q = 0; q < p.nranks; ++q)
      if (q != p.rank)
        sol_store(sol_flag(p, q, blockIdx.x, p.rank), flag);
    for (int q = 0; q < p.nranks; ++q) {
      if (q == p.rank)
        continue;
      const u64 *from = sol_flag(p, p.rank, blockIdx.x, q);
      if (!sol_wait(p, from, epoch, q))
        break;
      // The peer is at most one call ahead: a flag past that carried a wrong word.
      const u64 seen = sol_load(from);
      if (seen > epoch + 1 && atomicCAS(&p.watchdog->tripped, 0u, 2u) == 0u) {
        p.watchdog->rank = p.rank;
        p.watchdog->waiting_on_rank = q;
        p.watchdog->observed = seen ^ epoch;
      }
    }
  }
}

/// params.count: bytes this rank sends each peer; params.in: those bytes; the peer's slot for
/// this rank is at scratch_offset[0] + rank * parity_stride in the peer's heap.
extern "C" __global__ void sol_copy_signal(const __grid_constant__ collc_params p) {
  const u64 epoch = sol_head(p);
  const u64 vectors = p.count / 16;
  const uint4 *in = static_cast<const uint4 *>(p.in);
  for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += u64(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(in + i);
    for (int q = 0; q < p.nranks; ++q)
      if (q != p.rank)
        reinterpret_cast<uint4 *>(p.heap[q] + p.scratch_offset[0] + p.rank * p.parity_stride)[i] =
            v;
  }
  // The block's stores are ordered before its signal, as a collective's data before its flag.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    sol_signal_and_wait(p, epoch);
  }
}

// ---- Sentinel copy: the data is its own signal, as in collc's sentinel strategy. A received word
// that still reads 0 has not arrived; every input word is kSolPattern (the host fills the input),
// so a word that arrived is never 0, and one that arrived with another value is an error.
#define kSolPattern 0x3f3f3f3fu
__device__ __forceinline__ uint4 sol_load_vector(const uint4 *p) {
  uint4 w;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
               : "l"(p)
               : "memory");
  return w;
}
__device__ __forceinline__ bool sol_arrived(uint4 w) { return w.x && w.y && w.z && w.w; }
/// Waits for the vector at p to arrive from `peer`, checks it and puts the sentinel back; false
/// once the watchdog's bound passed or the data is wrong (both recorded for the host).
__device__ bool sol_take_vector(const collc_params &p, uint4 *v, int peer) {
  uint4 w = sol_load_vector(v);
  if (!sol_arrived(w)) {
    const u64 start = sol_now();
    unsigned spins = 0;
    while (!sol_arrived(w = sol_load_vector(v)))
      if ((++spins & 1023u) == 0 && sol_now() - start > p.timeout_ns) {
        if (atomicCAS(&p.watchdog->tripped, 0u, 1u) == 0u) {
          p.watchdog->rank = p.rank;
          p.watchdog->block = blockIdx.x;
          p.watchdog->waiting_on_rank = peer;
        }
        return false;
      }
  }
  if (w.x != kSolPattern || w.y != kSolPattern || w.z != kSolPattern || w.w != kSolPattern) {
    if (atomicCAS(&p.watchdog->tripped, 0u, 2u) == 0u) { // 2: wrong data, not a timeout
      p.watchdog->rank = p.rank;
      p.watchdog->waiting_on_rank = peer;
      p.watchdog->observed = w.x;
    }
    return false;
  }
  *v = make_uint4(0, 0, 0, 0);
  return true;
}
/// One record of the trace: when block 0's thread 0 of a call passed each point (globaltimer ns).
struct SolTracePoint {
  u64 epoch, waited, pushed, arrived, ended;
};

/// Every rank stores params.count bytes into every peer; each thread then takes the vectors it
/// expects from every peer. Scratch rotates through three copies by epoch (a peer may be a call
/// ahead), each copy nranks slots of parity_stride bytes at scratch_offset[1]. With aux[0] set,
/// block 0's thread 0 records a SolTracePoint per call, at (epoch - 1) % capacity; the capacity is
/// aux[1], whose value (not a pointer) is the trace's capacity in records.
extern "C" __global__ void sol_copy_sentinel(const __grid_constant__ collc_params p) {
  const u64 epoch = sol_head(p);
  const bool tracing = p.aux[0] && blockIdx.x == 0 && threadIdx.x == 0;
  SolTracePoint point;
  if (tracing)
    point.waited = sol_now();
  const u64 copy = epoch % 3;
  const u64 vectors = p.count / 16;
  const uint4 *in = static_cast<const uint4 *>(p.in);
  const u64 first = u64(blockIdx.x) * blockDim.x + threadIdx.x;
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 i = first; i < vectors; i += stride) {
    const uint4 v = __ldcg(in + i);
    for (int q = 0; q < p.nranks; ++q)
      if (q != p.rank)
        reinterpret_cast<uint4 *>(p.heap[q] + p.scratch_offset[1] +
                                  (copy * p.nranks + p.rank) * p.parity_stride)[i] = v;
  }
  if (tracing)
    point.pushed = sol_now();
  bool ok = true;
  for (u64 i = first; ok && i < vectors; i += stride)
    for (int q = 0; ok && q < p.nranks; ++q)
      if (q != p.rank)
        ok = sol_take_vector(p,
                             reinterpret_cast<uint4 *>(p.heap[p.rank] + p.scratch_offset[1] +
                                                       (copy * p.nranks + q) * p.parity_stride) +
                                 i,
                             q);
  if (tracing)
    point.arrived = sol_now();
  if (tracing) {
    point.epoch = epoch;
    point.ended = sol_now();
    const u64 capacity = reinterpret_cast<u64>(p.aux[1]);
    static_cast<SolTracePoint *>(p.aux[0])[(epoch - 1) % capacity] = point;
  }
}
)cuda";

constexpr uint64_t kVectorBytes = 16;
/// Every byte of the probes' input (kSolPattern in the kernels): a received word is never 0.
constexpr int kInputByte = 0x3f;

/// The kernel's trace record (SolTracePoint), as the host reads it.
struct TracePoint {
  uint64_t epoch, waited, pushed, arrived, ended;
};

/// Which probe a measurement runs: where its flags, epochs and scratch are.
enum class Probe { Empty, Exchange, ExchangeRead, CopySignal, CopySentinel };

llvm::Error probeError(const llvm::Twine& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "speed of light: " + message);
}

/// The heap regions of the probes, at the same offsets on every rank.
struct Layout {
  uint64_t in = 0, scratch = 0, slotBytes = 0;
  uint64_t exchangeFlags = 0, exchangeEpochs = 0;
  uint64_t exchangeReadFlags = 0, exchangeReadEpochs = 0;
  uint64_t copyFlags = 0, copyEpochs = 0;
  uint64_t sentinelScratch = 0, sentinelEpochs = 0; // three copies of nranks slots
  uint64_t trace = 0, traceCapacity = 0;            // TracePoint[traceCapacity]
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
  l.copyFlags = align(l.exchangeReadEpochs + epochBytes);
  l.copyEpochs = align(l.copyFlags + flagBytes);
  l.sentinelScratch = align(l.copyEpochs + epochBytes);
  l.sentinelEpochs = l.sentinelScratch + 3 * l.slotBytes * uint64_t(nranks);
  l.trace = align(l.sentinelEpochs + epochBytes);
  l.traceCapacity = uint64_t(std::max(graphOps, 1));
  l.watchdog = align(l.trace + l.traceCapacity * sizeof(TracePoint));
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
  llvm::Expected<double> time(const LoadedKernel& kernel, Probe probe, SpeedOfLightGrid grid,
                              uint64_t bytes) {
    RankGraphs graphs(world_);
    if (llvm::Error err = capture(graphs, kernel, probe, grid, bytes, /*trace=*/false))
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
  llvm::Expected<double> timeCopyEngine(uint64_t bytes, const LoadedKernel* exchange) {
    RankGraphs graphs(world_);
    const int nranks = world_.nranks();
    auto slot = [&](int receiver, int sender) {
      return world_.heapBase(receiver) + layout_.scratch + uint64_t(sender) * layout_.slotBytes;
    };
    for (int r = 0; r < nranks; ++r) {
      COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
      COLLC_CUDA_TRY(cudaMemset(slot(r, 0), 0, layout_.slotBytes * uint64_t(nranks)));
      COLLC_CUDA_TRY(cudaDeviceSynchronize());
    }
    const std::vector<collc_params> params = probeParams(Probe::Exchange, bytes, false);
    // Plain launches: a copy between two kernels breaks the programmatic chain anyway.
    auto exchangeOn = [&](int r) -> llvm::Error {
      if (!exchange)
        return llvm::Error::success();
      return exchange->launch(r, dim3(1), dim3(32), params[size_t(r)], world_.stream(r),
                              /*programmatic=*/false);
    };
    for (int r = 0; r < nranks; ++r)
      if (llvm::Error err = graphs.capture(r, [&]() -> llvm::Error {
            const char* in = world_.heapBase(r) + layout_.in;
            for (int op = 0; op < settings_.graphOps; ++op) {
              if (llvm::Error err = exchangeOn(r))
                return err;
              for (int q = 0; q < nranks; ++q)
                if (q != r)
                  COLLC_CUDA_TRY(cudaMemcpyAsync(
                      world_.peerHeap(q, r) + layout_.scratch + uint64_t(r) * layout_.slotBytes, in,
                      bytes, cudaMemcpyDeviceToDevice, world_.stream(r)));
              if (llvm::Error err = exchangeOn(r))
                return err;
            }
            return llvm::Error::success();
          }))
        return err;
    auto us = medianSlowestReplayUs(world_, graphs, settings_.graphOps, settings_.replays,
                                    [&] { return synchronize(); });
    if (!us)
      return us.takeError();
    for (int r = 0; r < nranks; ++r)
      for (int q = 0; q < nranks; ++q) {
        if (q == r)
          continue;
        std::vector<unsigned char> landed(bytes);
        COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
        COLLC_CUDA_TRY(cudaMemcpy(landed.data(), slot(r, q), bytes, cudaMemcpyDeviceToHost));
        if (std::any_of(landed.begin(), landed.end(),
                        [](unsigned char b) { return b != kInputByte; }))
          return probeError(fmt::format("the copy engine's copy of {} bytes from rank {} to rank "
                                        "{} did not land whole",
                                        bytes, q, r));
      }
    return *us;
  }

  /// Replays the sentinel copy twice with block 0's trace on and returns, per rank, the mean
  /// time between its points over the second replay's calls.
  llvm::Expected<std::vector<CallBreakdown>> trace(const LoadedKernel& kernel,
                                                   SpeedOfLightGrid grid, uint64_t bytes) {
    RankGraphs graphs(world_);
    if (llvm::Error err = capture(graphs, kernel, Probe::CopySentinel, grid, bytes, true))
      return err;
    std::vector<CallBreakdown> breakdown;
    for (int replay = 0; replay < 2; ++replay) {
      for (int r : world_.localRanks())
        if (llvm::Error err = graphs.launch(r))
          return err;
      if (llvm::Error err = synchronize())
        return err;
    }
    for (int r : world_.localRanks()) {
      std::vector<TracePoint> points(layout_.traceCapacity);
      COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
      COLLC_CUDA_TRY(cudaMemcpy(points.data(), world_.heapBase(r) + layout_.trace,
                                points.size() * sizeof(TracePoint), cudaMemcpyDeviceToHost));
      breakdown.push_back(breakdownOf(std::move(points)));
    }
    return breakdown;
  }

  /// Waits for every rank's stream, bounded (a probe's waits give up after the timeout, so the
  /// streams end unless a launch hangs outside them), then reports a probe that gave up.
  llvm::Error synchronize() {
    std::vector<cudaStream_t> streams;
    for (int r : world_.localRanks())
      streams.push_back(world_.stream(r));
    std::vector<bool> done(streams.size(), false);
    if (llvm::Error err = pollStreams(streams, world_.localRanks(), done,
                                      std::chrono::steady_clock::now() +
                                          std::chrono::nanoseconds(settings_.timeoutNs) * 2 +
                                          std::chrono::seconds(10)))
      return probeError(llvm::toString(std::move(err)));
    for (int r : world_.localRanks()) {
      if (!done[size_t(r)])
        return probeError(llvm::Twine("rank ") + llvm::Twine(r) +
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
    return llvm::Error::success();
  }

private:
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
      p.watchdog = reinterpret_cast<collc_watchdog*>(base + layout_.watchdog);
      p.timeout_ns = settings_.timeoutNs;
      if (trace) {
        p.aux[0] = base + layout_.trace;
        p.aux[1] = reinterpret_cast<void*>(uintptr_t(layout_.traceCapacity));
      }
    }
    return params;
  }

  llvm::Error capture(RankGraphs& graphs, const LoadedKernel& kernel, Probe probe,
                      SpeedOfLightGrid grid, uint64_t bytes, bool trace) {
    const int nranks = world_.nranks();
    const std::vector<collc_params> params = probeParams(probe, bytes, trace);
    for (int r = 0; r < nranks; ++r)
      if (llvm::Error err = graphs.capture(r, [&]() -> llvm::Error {
            for (int op = 0; op < settings_.graphOps; ++op)
              if (llvm::Error err =
                      kernel.launch(r, dim3(unsigned(grid.blocks)), dim3(unsigned(grid.threads)),
                                    params[size_t(r)], world_.stream(r), /*programmatic=*/true))
                return err;
            return llvm::Error::success();
          }))
        return err;
    return llvm::Error::success();
  }

  /// Means over consecutive calls of one rank's trace (the records of the last replay: the
  /// highest epochs), in µs. A call's gap is from the previous call's end to its own wait's end.
  static CallBreakdown breakdownOf(std::vector<TracePoint> points) {
    std::sort(points.begin(), points.end(),
              [](const TracePoint& a, const TracePoint& b) { return a.epoch < b.epoch; });
    CallBreakdown b;
    double pushed = 0, arrived = 0, ended = 0, gap = 0;
    for (size_t k = 1; k < points.size(); ++k) {
      const TracePoint &prev = points[k - 1], &call = points[k];
      if (prev.epoch == 0 || call.epoch != prev.epoch + 1)
        continue;
      pushed += double(call.pushed - call.waited);
      arrived += double(call.arrived - call.pushed);
      ended += double(call.ended - call.arrived);
      gap += double(call.waited - prev.ended);
      ++b.calls;
    }
    if (b.calls == 0)
      return b;
    const double perCallUs = 1e-3 / b.calls;
    b.waitedToPushedUs = pushed * perCallUs;
    b.pushedToArrivedUs = arrived * perCallUs;
    b.arrivedToEndedUs = ended * perCallUs;
    b.endedToNextWaitedUs = gap * perCallUs;
    return b;
  }

  LocalWorld& world_;
  Layout layout_;
  const SpeedOfLightSettings& settings_;
};

} // namespace

const std::vector<SpeedOfLightGrid>& speedOfLightGrids() {
  // 64 x 64 and 132 x 32: many blocks of few threads, about one vector per thread at 16-64 KiB,
  // the shapes that collc's AllReduce ran fastest at there.
  static const std::vector<SpeedOfLightGrid> grids = {
      {1, 128}, {4, 256}, {64, 64}, {COLLC_MAX_BLOCKS, 32}, {32, 512}, {COLLC_MAX_BLOCKS, 512}};
  return grids;
}

std::string speedOfLightSource() {
  return std::string(kernelAbiHeader()) + "\n" + kProbeKernels;
}

llvm::Expected<SpeedOfLightReport> measureSpeedOfLight(const std::vector<int>& devices,
                                                       const SpeedOfLightSettings& settings) {
  if (devices.size() < 2)
    return probeError("needs 2 or more GPUs");
  if (settings.graphOps < 1 || settings.replays < 1)
    return probeError("timing needs at least one launch per graph and one replay");
  for (uint64_t bytes : settings.sizes)
    if (bytes == 0 || bytes % kVectorBytes != 0)
      return probeError(llvm::Twine(bytes) + " bytes is not a whole number of 16-byte vectors");
  const uint64_t maxBytes = settings.sizes.empty()
                                ? kVectorBytes
                                : *std::max_element(settings.sizes.begin(), settings.sizes.end());
  const Layout layout = layoutFor(int(devices.size()), maxBytes, settings.graphOps);

  JitOptions jit;
  jit.arch = gpuArch(devices[0]);
  auto image = compileCuda(speedOfLightSource(), "collc_speed_of_light", JitOutput::Cubin, jit);
  if (!image)
    return probeError("NVRTC: " + llvm::toString(image.takeError()));
  auto empty = LoadedKernel::load(devices, image->image, "sol_empty");
  if (!empty)
    return empty.takeError();
  auto exchange = LoadedKernel::load(devices, image->image, "sol_exchange");
  if (!exchange)
    return exchange.takeError();
  auto exchangeRead = LoadedKernel::load(devices, image->image, "sol_exchange_read");
  if (!exchangeRead)
    return exchangeRead.takeError();
  auto copy = LoadedKernel::load(devices, image->image, "sol_copy_signal");
  if (!copy)
    return copy.takeError();
  auto sentinel = LoadedKernel::load(devices, image->image, "sol_copy_sentinel");
  if (!sentinel)
    return sentinel.takeError();
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
  // The copy probe `probe` of `bytes` at every grid: the fastest time and its grid.
  auto bestGrid = [&](const LoadedKernel& kernel, Probe probe, const char* what, uint64_t bytes,
                      double& bestUs, SpeedOfLightGrid& best) -> llvm::Error {
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
    return llvm::Error::success();
  };
  for (uint64_t bytes : settings.sizes) {
    CopyFloor floor;
    floor.bytes = bytes;
    if (llvm::Error err =
            bestGrid(**copy, Probe::CopySignal, "copy + signal", bytes, floor.us, floor.grid))
      return err;
    if (llvm::Error err = bestGrid(**sentinel, Probe::CopySentinel, "sentinel copy", bytes,
                                   floor.sentinelUs, floor.sentinelGrid))
      return err;
    say(fmt::format("sentinel copy {} B traced", bytes));
    auto breakdown = prober.trace(**sentinel, floor.sentinelGrid, bytes);
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
    report.copies.push_back(floor);
  }
  return report;
}

} // namespace collc
