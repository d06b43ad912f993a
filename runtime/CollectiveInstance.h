// One compiled collective made ready to run in a LocalWorld: its kernel loaded on every GPU, its
// symmetric scratch and flags carved out of the world's heap, and per-rank epoch counters and
// watchdogs in device memory. Launching does no host-side bookkeeping, so launches captured into a
// CUDA graph replay correctly any number of times.
#ifndef COLLC_RUNTIME_COLLECTIVEINSTANCE_H
#define COLLC_RUNTIME_COLLECTIVEINSTANCE_H

#include "compiler/CompiledCollective.h"
#include "runtime/LoadedKernel.h"
#include "runtime/LocalWorld.h"

#include <cstdint>
#include <cuda_runtime_api.h>
#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>
#include <memory>
#include <string>
#include <vector>

namespace collc {

class CollectiveInstance {
public:
  /// Checks that `compiled` fits `world` and the ABI limits (ranks, blocks, scratch buffers; all
  /// blocks must be resident at once because they wait on each other), loads `cubin`, and
  /// allocates scratch for calls of up to `maxCount` elements. A poll in the kernel gives up after
  /// `timeoutNs` (0: never) and records why in the rank's watchdog.
  static llvm::Expected<std::unique_ptr<CollectiveInstance>>
  create(LocalWorld& world, const CompiledCollective& compiled, const std::string& cubin,
         uint64_t maxCount, uint64_t timeoutNs = 5'000'000'000);
  /// Nothing launched from this instance may still be running, nor be replayed later from a
  /// graph. If this instance's heap region is the world's newest, it is given back to the world.
  ~CollectiveInstance();
  CollectiveInstance(const CollectiveInstance&) = delete;
  CollectiveInstance& operator=(const CollectiveInstance&) = delete;

  /// Enqueues rank's part of one call on `stream` (a stream of that rank's GPU): `count`
  /// elements (<= maxCount) from `in` to `out`, both device memory of that GPU sized by the
  /// compiled collective's inputCount/outputCount. Every rank must make the same sequence of
  /// calls; the ranks wait for each other on the device. Safe inside stream capture.
  llvm::Error launch(int rank, const void* in, void* out, uint64_t count, cudaStream_t stream);

  /// Reads every rank's watchdog back (on a private stream, so it works while kernels still run).
  /// An error describes each tripped rank, e.g. "watchdog: rank 1 block 3 waited more than 5.0 s
  /// at step 'reduce' (sync point 0, call epoch 17) for rank 0: flag is 16, needed 17". A tripped
  /// watchdog stays tripped: the ranks' epochs have diverged, so the instance must be recreated.
  llvm::Error checkWatchdogs();

  /// Waits until the work on streams[r] (rank r's stream, one per rank) is done, but never
  /// longer than timeout + 2 s + `extraSeconds`; then checks the watchdogs. Past the deadline it
  /// reports which ranks still run, and why if a watchdog knows, instead of hanging.
  llvm::Error synchronize(llvm::ArrayRef<cudaStream_t> streams, double extraSeconds = 0);

  /// Applies to launches made from now on; graphs already captured keep the value they captured.
  void setTimeoutNs(uint64_t timeoutNs) { timeoutNs_ = timeoutNs; }
  uint64_t timeoutNs() const { return timeoutNs_; }
  uint64_t maxCount() const { return maxCount_; }
  const CompiledCollective& compiled() const { return compiled_; }
  LocalWorld& world() const { return world_; }
  const LoadedKernel& kernel() const { return *kernel_; }
  /// The heap layout, for diagnostics: parity-0 offsets of the scratch buffers, the distance to
  /// their parity-1 copies, and the flags region.
  const std::vector<uint64_t>& scratchOffsets() const { return scratchOffsets_; }
  uint64_t parityStride() const { return parityStride_; }
  uint64_t flagsOffset() const { return flagsOffset_; }

private:
  CollectiveInstance(LocalWorld& world, const CompiledCollective& compiled)
      : world_(world), compiled_(compiled) {}
  llvm::Error allocateSymmetric();
  llvm::Error allocatePerRank();

  LocalWorld& world_;
  CompiledCollective compiled_;
  uint64_t maxCount_ = 0;
  uint64_t timeoutNs_ = 0;
  std::unique_ptr<LoadedKernel> kernel_;
  std::vector<uint64_t> scratchOffsets_;
  uint64_t parityStride_ = 0;
  uint64_t flagsOffset_ = 0;
  uint64_t heapBegin_ = 0, heapEnd_ = 0;    // this instance's part of the world's heap
  std::vector<DeviceBuffer> epochs_;        // per rank: unsigned long long[blocks]
  std::vector<DeviceBuffer> watchdogs_;     // per rank: one collc_watchdog
  std::vector<cudaStream_t> sideStreams_;   // per rank: for zeroing and reading watchdogs
  collc_watchdog* hostWatchdogs_ = nullptr; // pinned, one per rank
};

} // namespace collc

#endif // COLLC_RUNTIME_COLLECTIVEINSTANCE_H
