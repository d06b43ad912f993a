// A backend of symmetric memory (see SymmetricWorld.h) for correctness only: one process runs
// ranks 0..R-1 as R co-resident kernels on ONE GPU. Every rank's heap is a region of one
// allocation on that GPU, so a peer's heap is addressed by the same pointer from every rank (one
// address space, no peer access), each rank has its own stream, and the generated kernels run
// unchanged: collc_params::heap[] simply points at the regions. It lets 3- to 32-rank collectives
// be checked on any single GPU; made with SharedGpuLaunch::OneLaunch, every call of every rank is
// one launch on one stream instead (runtime/RankLaunch.h), which takes it to COLLC_MAX_RANKS = 72
// ranks, and most of what follows, being about separate launches, does not apply to it: its
// co-residency is the cooperative launch's. Its timings mean nothing: the ranks divide one GPU's
// multiprocessors and memory bandwidth between them, and no byte crosses a link.
//
// Why the ranks' launches cannot serialize into a deadlock. Each rank's kernel polls for its
// peers' data, so a kernel that waits for a peer whose kernel cannot start never finishes (the
// watchdog then reports it). What can keep a kernel on one stream from running while kernels on
// the device's other streams run, and how it is ruled out:
//  - Multiprocessors. Every block of every rank must be resident at once. CollectiveInstance
//    checks that the blocks of all ranks sharing a GPU number at most its multiprocessors, and
//    that one block fits on an empty one: while a block waits to start, every SM must hold
//    another already, more blocks than the check lets there be. Other work on the GPU (another
//    process, MPS) takes SMs this count relies on.
//  - Programmatic dependent launch. With it the next kernel on a stream becomes resident while
//    the previous one still runs, and holds SMs that a peer's current kernel may need.
//    CollectiveInstance launches without it wherever ranks share a GPU (the kernels'
//    griddepcontrol.wait is then a no-op), in eager calls and in captured graphs alike.
//  - Launch order and CUDA graphs. Ranks are launched one after another from the host, each on
//    its own non-blocking stream (never the legacy default stream, which would order them); a
//    rank that starts first waits on the device, holding only its own SMs. Each rank's graph is
//    its own graph exec on its own stream, so replays of different ranks do not order each other.
//  - Hardware work queues. CUDA multiplexes streams onto CUDA_DEVICE_MAX_CONNECTIONS queues (8 by
//    default, at most 32). In a queue shared by two ranks' streams, a kernel that waits for its
//    own stream's previous kernel (the second call of a graph) would hold back the other rank's
//    kernel that the previous one waits for. To keep each rank's stream on a queue of its own,
//    create() makes the R streams one after another, and refuses R ranks where the variable gives
//    fewer than R queues (workQueueProblem); CUDA gives at most 32 (kMostWorkQueues), so at most 32
//    ranks share one GPU, though collc_params holds COLLC_MAX_RANKS = 72. The library never sets
//    it: the environment is the host program's, and CUDA reads it once, before the program's first
//    CUDA call. collc's own programs (the tool, the tests) set it to 32 first thing
//    (tools/launch/WorkQueues.h). The GPU tests replay graphs of several calls per rank: a shared
//    queue would show there, as a watchdog report.
//  - Epochs and watchdogs. Each rank has its own per-block epoch counters and its own watchdog
//    (CollectiveInstance allocates them per local rank), exactly as on separate GPUs: nothing a
//    rank counts is shared with another.
//  - Calls that wait for the whole device (cudaFree, cudaDeviceSynchronize, a synchronous
//    cudaMemcpy) between the launches of one call would wait for ranks that wait for the ranks
//    not launched yet. RunHarness and CollectiveInstance make none there; a program of its own
//    launches every rank's part of a call before any such call. A launch that needs more local
//    memory than the GPU has set aside may wait for the device to drain; every rank runs the same
//    kernel, so only the first rank's launch of a call can, before any of its peers runs.
#ifndef COLLC_RUNTIME_SHAREDGPUWORLD_H
#define COLLC_RUNTIME_SHAREDGPUWORLD_H

#include "runtime/Status.h"
#include "runtime/SymmetricWorld.h"

#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>
#include <memory>
#include <string>
#include <vector>

namespace collc {

/// Where each rank's heap lies in the one allocation that holds them all: rank r's region starts
/// r * regionStride bytes in, and regionStride is the heap per rank rounded up to the 2 MiB page
/// that instances align their scratch to (kScratchAlign), so scratch lies against pages in every
/// region as it does in a heap of its own.
struct SharedHeapLayout {
  uint64_t regionBytes = 0;     // usable per rank: the heap size asked for
  uint64_t regionStride = 0;    // from one rank's region to the next
  uint64_t totalBytes = 0;      // every region
  uint64_t allocationBytes = 0; // totalBytes and a page, to align the regions' base by hand
  uint64_t offset(int rank) const { return uint64_t(rank) * regionStride; }
};

/// The layout of `nranks` regions of `heapBytesPerRank`; an error for no ranks, more than
/// COLLC_MAX_RANKS, an empty heap, or a total that does not fit 64 bits.
Expected<SharedHeapLayout> sharedHeapLayout(int nranks, uint64_t heapBytesPerRank);

/// CUDA's hardware work queues per GPU where CUDA_DEVICE_MAX_CONNECTIONS is not set: enough for
/// 8 ranks to have one each.
inline constexpr int kDefaultWorkQueues = 8;
/// The most CUDA gives, whatever CUDA_DEVICE_MAX_CONNECTIONS says: so at most 32 co-resident ranks
/// have a queue each, and a world of more (up to COLLC_MAX_RANKS) is refused.
inline constexpr int kMostWorkQueues = 32;

/// Why `nranks` ranks on one GPU could not each have a work queue of their own, given the value of
/// CUDA_DEVICE_MAX_CONNECTIONS (null: not set); "" if they can. Reads nothing itself.
std::string workQueueProblem(const char* maxConnections, int nranks);

/// How the ranks of a SharedGpuWorld are launched.
enum class SharedGpuLaunch {
  /// One stream and one launch per rank: at most kMostWorkQueues ranks (above).
  StreamPerRank,
  /// One stream, and every call of every rank in one cooperative launch of the kernel's
  /// <kernel>_ranks entry point (runtime/RankLaunch.h): up to COLLC_MAX_RANKS ranks, and no work
  /// queue per rank needed. stream(r) is that one stream for every rank.
  OneLaunch,
};

/// The launch a one-GPU world of `nranks` ranks needs: a stream per rank while every rank can
/// have a work queue (kMostWorkQueues), one launch past that.
inline SharedGpuLaunch sharedGpuLaunchFor(int nranks) {
  return nranks <= kMostWorkQueues ? SharedGpuLaunch::StreamPerRank : SharedGpuLaunch::OneLaunch;
}

class SharedGpuWorld final : public SymmetricWorld {
public:
  /// `nranks` ranks (1 to COLLC_MAX_RANKS) on GPU `device`: allocates and zeroes one heap of
  /// `heapBytesPerRank` per rank, as regions of one allocation, and creates one non-blocking
  /// stream per rank (with `launch` OneLaunch: one stream for all). Errors: no GPU, an invalid
  /// device or rank count, out of memory, and for StreamPerRank fewer work queues than ranks
  /// (workQueueProblem of the process's CUDA_DEVICE_MAX_CONNECTIONS).
  static Expected<std::unique_ptr<SharedGpuWorld>>
  create(int nranks, int device, size_t heapBytesPerRank,
         SharedGpuLaunch launch = SharedGpuLaunch::StreamPerRank);
  /// Frees the heap and the streams. Nothing may still run on them.
  ~SharedGpuWorld() override;

  int nranks() const override { return static_cast<int>(ranks_.size()); }
  const std::vector<int>& localRanks() const override { return ranks_; }
  int device(int /*rank*/) const override { return device_; }
  cudaStream_t stream(int rank) const override { return streams_[oneLaunch_ ? 0 : rank]; }
  char* heapBase(int rank) const override { return heap_ + layout_.offset(rank); }
  /// One GPU, one address space: every rank reaches a region by its owner's pointer.
  char* peerHeap(int rank, int /*viewer*/) const override { return heapBase(rank); }
  bool launchesRanksAsOne() const override { return oneLaunch_; }
  /// Says that the ranks share one GPU and that timings mean nothing.
  std::string pathDescription() const override;
  const SharedHeapLayout& heapLayout() const { return layout_; }

private:
  SharedGpuWorld(int device, const SharedHeapLayout& layout)
      : SymmetricWorld(layout.regionBytes), device_(device), layout_(layout) {}

  int device_ = 0;
  bool oneLaunch_ = false; // SharedGpuLaunch::OneLaunch: streams_ holds the one stream
  SharedHeapLayout layout_;
  char* allocation_ = nullptr; // what cudaMalloc returned
  char* heap_ = nullptr;       // the regions' base: allocation_ rounded up to a page
  std::vector<int> ranks_;     // 0..R-1: this process drives them all
  std::vector<cudaStream_t> streams_;
};

} // namespace collc

#endif // COLLC_RUNTIME_SHAREDGPUWORLD_H
