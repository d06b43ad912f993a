// One compiled collective made ready to run in a SymmetricWorld: its kernel loaded on the GPU of
// every rank this process drives, its symmetric scratch and flags carved out of the world's heap,
// and per-rank epoch counters and watchdogs in device memory. Launching does no host-side
// bookkeeping, so launches captured into a CUDA graph replay correctly any number of times.
//
// The same class serves both backends: in a LocalWorld this process drives every rank; in a
// ProcessWorld it drives one, and create() is collective (every process creates the same
// instances in the same order; they check that they agree on the heap layout). Where the world
// hands collectives to NCCL (it spans nodes), the instance launches NCCL's own version of the
// collective (ncclAllReduce, ncclAllGather, ...) instead of the kernel: engine() says which.
#ifndef COLLC_RUNTIME_COLLECTIVEINSTANCE_H
#define COLLC_RUNTIME_COLLECTIVEINSTANCE_H

#include "abi/CompiledCollective.h"
#include "runtime/LoadedKernel.h"
#include "runtime/LocalWorld.h"
#include "runtime/Span.h"
#include "runtime/Status.h"
#include "runtime/SymmetricWorld.h"
#include "runtime/Watchdog.h"

#include <cstdint>
#include <cuda_runtime_api.h>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace collc {

struct NcclLibrary;
class RankCallGather; // runtime/RankLaunch.h
class StreamOrder;    // runtime/StreamOrder.h

class CollectiveInstance {
public:
  /// What a launch runs: collc's generated kernel, or NCCL's same collective on the world's
  /// communicator (a world that spans nodes, or one made for a baseline with createNccl).
  enum class Engine { CollcKernel, Nccl };

  /// Checks that `compiled` fits `world` and the ABI limits (ranks, blocks, scratch buffers; all
  /// blocks must be resident at once because they wait on each other: those of every rank that
  /// shares a GPU together, runtime/CoResidency.h), loads `cubin`, and
  /// allocates scratch for calls of up to `maxCount` elements. A poll in the kernel gives up after
  /// `timeoutNs` (0: never) and records why in the rank's watchdog.
  static Expected<std::unique_ptr<CollectiveInstance>>
  create(SymmetricWorld& world, const CompiledCollective& compiled, const std::string& cubin,
         uint64_t maxCount, uint64_t timeoutNs = defaultWatchdogTimeoutNs());
  /// The same collective run by NCCL (its kind's NCCL call, runtime/NcclCollective.h, with
  /// compiled.dtype, op and root; alltoall as grouped ncclSend/ncclRecv) on the
  /// world's communicator: the NCCL path of a world that spans nodes, and NCCL measured in the
  /// same harness as collc's kernel. Needs a world with a communicator (a ProcessWorld).
  static Expected<std::unique_ptr<CollectiveInstance>>
  createNccl(SymmetricWorld& world, const CompiledCollective& compiled, uint64_t maxCount);
  /// Nothing launched from this instance may still be running, nor be replayed later from a
  /// graph. If this instance's heap region is the world's newest, it is given back to the world.
  ~CollectiveInstance();
  CollectiveInstance(const CollectiveInstance&) = delete;
  CollectiveInstance& operator=(const CollectiveInstance&) = delete;

  /// Enqueues rank's part (a rank this process drives) of one call on `stream` (a stream of that
  /// rank's GPU). In a world that launches its ranks as one (SymmetricWorld::launchesRanksAsOne)
  /// it enqueues the call of every rank once the last rank makes it, and nothing before
  /// (runtime/RankLaunch.h): every rank's call must be on the world's one stream.
  /// One instance's calls are ordered on one stream per rank (runtime/StreamOrder.h): an eager
  /// call on another stream than the rank's last eager call first waits for that call; a call
  /// made while its stream is captured is not seen (the graph orders it). `count`
  /// elements (<= maxCount) from `in` to `out`, both device memory of that GPU sized by the
  /// compiled collective's inputCount/outputCount. Every rank must make the same sequence of
  /// calls; the ranks wait for each other on the device. Safe inside stream capture.
  Error launch(int rank, const void* in, void* out, uint64_t count, cudaStream_t stream);
  /// The same for a spec with user buffers besides the input and the output (a fused epilogue's
  /// residual, residual out, weight): `aux` holds one device pointer per CompiledCollective::aux,
  /// in that order, each sized by its `elements(count)`. With rows, `count` is whole rows.
  Error launch(int rank, const void* in, void* out, Span<void* const> aux, uint64_t count,
               cudaStream_t stream);

  /// The checking mode's comparison of this call across ranks (where world().checksCalls();
  /// otherwise success at once): `refusedHere` says this rank refused the call itself, which
  /// fails it on every rank. launch() does it; a caller that refuses a call before launch() must
  /// still make it, or the other ranks wait for this one. Its failures say kCallCheckMarker.
  Error agreeOnCall(int rank, uint64_t count, bool refusedHere);

  /// Reads every rank's watchdog back (on a private stream, so it works while kernels still run).
  /// An error describes each tripped rank, e.g. "watchdog: rank 1 block 3 waited more than 5.0 s
  /// at step 'reduce' (sync point 0, call epoch 17) for rank 0: flag is 16, needed 17". A tripped
  /// watchdog stays tripped: the ranks' epochs have diverged, so the instance must be recreated.
  /// A kernel with LL packets that refused a call past COLLC_LAST_PACKET_EPOCH says so instead:
  /// "rank 0 refused call 4294967296: this instance has run its 4294967295 calls, ...".
  Error checkWatchdogs();

  /// Waits until the work on streams[i] (the stream of world.localRanks()[i]) is done, but never
  /// longer than timeout + 2 s + `extraSeconds`; then checks the watchdogs. Past the deadline it
  /// reports which ranks still run, and why if a watchdog knows, instead of hanging. Every error
  /// carries what the world knows of its peers (world.diagnosePeers(): a process that exited).
  Error synchronize(Span<const cudaStream_t> streams, double extraSeconds = 0);

  /// For tests only: sets every per-block epoch counter of every rank this process drives to
  /// `lastEpoch`, as if the instance had made that many calls, so that the next call is call
  /// lastEpoch + 1 (to run the calls near COLLC_LAST_PACKET_EPOCH). Nothing launched from this
  /// instance may be running; every process must seed the same value.
  Error seedEpochsForTests(uint64_t lastEpoch);

  /// Applies to launches made from now on; graphs already captured keep the value they captured.
  void setTimeoutNs(uint64_t timeoutNs) { timeoutNs_ = timeoutNs; }
  uint64_t timeoutNs() const { return timeoutNs_; }
  uint64_t maxCount() const { return maxCount_; }
  const CompiledCollective& compiled() const { return compiled_; }
  SymmetricWorld& world() const { return world_; }
  Engine engine() const { return engine_; }
  /// "collc kernel <name> (barrier sync)" or "NCCL (ncclAllGather bf16 sum)", for logs.
  std::string engineDescription() const;
  const LoadedKernel& kernel() const { return *kernel_; }
  /// The heap layout, for diagnostics: parity-0 offsets of the scratch buffers, the distance to
  /// their parity-1 copies, and the flags region.
  const std::vector<uint64_t>& scratchOffsets() const { return scratchOffsets_; }
  uint64_t parityStride() const { return parityStride_; }
  uint64_t flagsOffset() const { return flagsOffset_; }

private:
  // Out of line, as is the destructor: RankCallGather and StreamOrder are complete only there.
  CollectiveInstance(SymmetricWorld& world, const CompiledCollective& compiled);
  Error allocateSymmetric();
  Error allocatePerRank();
  /// Collective: every rank's process must have made the same layout (and be done initialising
  /// its heap region) before any returns.
  Error agreeOnLayout();
  Error launchNccl(const void* in, void* out, uint64_t count, cudaStream_t stream);
  /// Why launch() must refuse this call (a wrong rank, count, buffer or aux list), or success.
  Error checkLaunch(int rank, const void* in, void* out, Span<void* const> aux,
                    uint64_t count) const;
  /// A world that launches its ranks as one: loads <kernel>_ranks from `cubin` and checks that
  /// every rank's blocks fit one cooperative launch.
  Error prepareRankLaunch(const std::string& cubin);
  /// The parameters every rank's kernel gets for this call, but for the rank's own buffers.
  collc_params paramsFor(int rank, const void* in, void* out, Span<void* const> aux,
                         uint64_t count) const;
  /// Gathers rank's call and launches every rank's once the last has made it.
  Error launchRanksAsOne(int rank, const void* in, void* out, Span<void* const> aux, uint64_t count,
                         cudaStream_t stream);

  SymmetricWorld& world_;
  CompiledCollective compiled_;
  uint64_t maxCount_ = 0;
  uint64_t timeoutNs_ = 0;
  std::unique_ptr<LoadedKernel> kernel_;
  // A world that launches its ranks as one: the <kernel>_ranks entry point and the ranks' calls
  // waiting for the last rank's.
  std::unique_ptr<LoadedKernel> rankKernel_;
  std::unique_ptr<RankCallGather> rankCalls_;
  std::mutex rankCallsMutex_; // ranks may launch from threads of their own
  std::vector<uint64_t> scratchOffsets_;
  uint64_t parityStride_ = 0;
  uint64_t flagsOffset_ = 0;
  uint64_t heapBegin_ = 0, heapEnd_ = 0; // this instance's part of the world's heap
  Engine engine_ = Engine::CollcKernel;
  bool programmaticLaunch_ = false;   // the compiled kernel's, on sm_90+ GPUs no two ranks share
  const NcclLibrary* nccl_ = nullptr; // the NCCL engine's library
  // Per local rank (index i is world.localRanks()[i]), as is the kernel's slot i:
  std::vector<DeviceBuffer> epochs_;        // unsigned long long[blocks]
  std::vector<DeviceBuffer> watchdogs_;     // one collc_watchdog
  std::vector<cudaStream_t> sideStreams_;   // for zeroing and reading watchdogs
  std::vector<StreamOrder> streamOrders_;   // the last eager call's stream and event
  collc_watchdog* hostWatchdogs_ = nullptr; // pinned, one per local rank
};

} // namespace collc

#endif // COLLC_RUNTIME_COLLECTIVEINSTANCE_H
