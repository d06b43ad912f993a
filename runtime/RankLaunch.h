// Every rank of a one-GPU world in ONE kernel launch: the way past 32 co-resident ranks.
//
// A SharedGpuWorld that gives each rank its own stream stops at 32 ranks: each stream needs a
// hardware work queue of its own, and CUDA has 32 (SharedGpuWorld.h). A world made with
// SharedGpuLaunch::OneLaunch instead has one stream, and CollectiveInstance launches the kernel's
// second entry point <kernel>_ranks once per call, with a grid of blocks x nranks: blockIdx.y is
// the rank, and each block builds its rank's collc_params from one collc_rank_launch argument
// (abi/collc_rank_launch.h). The launch is cooperative, so CUDA refuses a grid whose blocks could
// not all be resident at once instead of running part of it; rankLaunchProblem refuses it earlier
// with the numbers.
//
// The ranks' calls still come one rank at a time (CollectiveInstance::launch, as for every other
// world): RankCallGather keeps each rank's calls in order, and the j-th call of every rank is
// launched as one when the last of them arrives, on the world's one stream. So a rank's call may
// enqueue nothing, and a graph captured for one rank holds the calls that its rank completed.
// Pure host logic: tested without a GPU (tests/runtime/RankLaunchTest.cpp).
#ifndef COLLC_RUNTIME_RANKLAUNCH_H
#define COLLC_RUNTIME_RANKLAUNCH_H

#include "abi/collc_abi.h"
// The kernel's argument, with collc_abi.h before it as the generated source has it.
#include "abi/collc_rank_launch.h"
#include "runtime/Span.h"
#include "runtime/Status.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace collc {

/// The kernel parameters CUDA 12.1 and later accept on sm_70 and later GPUs.
inline constexpr size_t kLargeKernelParamBytes = 32764;
static_assert(sizeof(collc_rank_launch) <= kLargeKernelParamBytes,
              "collc_rank_launch no longer fits the kernel parameters of a large launch");
/// The first GPUs that take kernel parameters past 4 KB (compute capability 7.0).
inline constexpr int kLargeParamsComputeMajor = 7;

/// The grid of one launch of every rank: `blocksPerRank` x `ranks` blocks of `threads`.
struct RankLaunchGrid {
  unsigned blocksPerRank = 0; // gridDim.x
  unsigned ranks = 0;         // gridDim.y
  unsigned threads = 0;       // blockDim.x
  unsigned blocks() const { return blocksPerRank * ranks; }
};

/// Why `ranks` ranks of `blocksPerRank` blocks cannot run as one co-resident launch on GPU
/// `device` (compute capability `computeMajor`.x, `multiprocessors` SMs, each holding at most
/// `blocksPerMultiprocessor` of this kernel's blocks at once); "" when they can.
std::string rankLaunchProblem(int blocksPerRank, int ranks, int device, int computeMajor,
                              int multiprocessors, int blocksPerMultiprocessor);

/// One rank's part of one call, as CollectiveInstance::launch received it.
struct RankCall {
  const void* in = nullptr;
  void* out = nullptr;
  std::array<void*, COLLC_MAX_AUX> aux{};
  uint64_t count = 0;
  cudaStream_t stream = nullptr;
};

/// Keeps each rank's calls in order until every rank has made the same call.
class RankCallGather {
public:
  /// A rank may be this many calls ahead of the slowest: past it, a rank that never calls is
  /// reported instead of calls piling up.
  static constexpr size_t kMostCallsAhead = 4096;

  explicit RankCallGather(int nranks) : pending_(size_t(nranks)) {}
  /// Adds `rank`'s next call. Returns every rank's part of one call (index: rank) when this was
  /// the last rank to make it, std::nullopt while some rank has not. An error, with nothing
  /// added, for a rank out of range, a count or stream that differs from another rank's same
  /// call, or a rank kMostCallsAhead calls ahead of another.
  Expected<std::optional<std::vector<RankCall>>> add(int rank, const RankCall& call);
  /// Calls of `rank` waiting for other ranks.
  size_t waiting(int rank) const { return pending_[size_t(rank)].size(); }

private:
  std::vector<std::deque<RankCall>> pending_; // per rank, oldest first
};

/// The argument of <kernel>_ranks for one call: `common` (a rank's collc_params: the heaps, the
/// scratch and flags, the count, the timeout) with each rank's buffers from `calls`, and its
/// epochs and watchdog. Every span has one entry per rank, at most COLLC_MAX_RANKS.
collc_rank_launch buildRankLaunch(const collc_params& common, Span<const RankCall> calls,
                                  Span<unsigned long long* const> epochs,
                                  Span<collc_watchdog* const> watchdogs);

} // namespace collc

#endif // COLLC_RUNTIME_RANKLAUNCH_H
