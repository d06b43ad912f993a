// What a collective needs of the GPUs it runs on, whichever way they are driven: the ranks this
// process drives, their devices and streams, and a symmetric heap (the same offsets on every rank)
// with each rank's heap base as a given local GPU addresses it. Two backends implement it:
//  - LocalWorld: one process drives every rank (cudaMalloc + peer access; UVA pointers);
//  - ProcessWorld: one process per GPU, bootstrapped through NCCL (CUDA IPC peer mappings).
// CollectiveInstance and RunHarness see only this interface and drive only the local ranks, so
// the generated kernels and collc_params are the same in both.
//
// Calls that involve every process (allGatherRanks, and so CollectiveInstance::create) are
// collective: every process makes them in the same order. In a LocalWorld there is one process.
#ifndef COLLC_RUNTIME_SYMMETRICWORLD_H
#define COLLC_RUNTIME_SYMMETRICWORLD_H

#include "runtime/Span.h"
#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>
#include <string>
#include <string_view>
#include <vector>

// The one NCCL type this interface names, declared as <nccl.h> declares it, so that users of the
// interface need not have NCCL's headers.
typedef struct ncclComm* ncclComm_t;

namespace collc {

class SymmetricWorld {
public:
  virtual ~SymmetricWorld();
  SymmetricWorld(const SymmetricWorld&) = delete;
  SymmetricWorld& operator=(const SymmetricWorld&) = delete;

  virtual int nranks() const = 0;
  /// The ranks this process drives, ascending: all of them in a LocalWorld, one in a
  /// ProcessWorld.
  virtual const std::vector<int>& localRanks() const = 0;
  /// Position of `rank` in localRanks(), or -1 if another process drives it.
  int localIndex(int rank) const;
  bool isLocal(int rank) const { return localIndex(rank) >= 0; }

  /// Device ordinal (in this process) and stream of a local rank.
  virtual int device(int rank) const = 0;
  virtual cudaStream_t stream(int rank) const = 0;
  /// A local rank's own heap.
  virtual char* heapBase(int rank) const = 0;
  /// Any rank's heap as the GPU of local rank `viewer` addresses it: what collc_params::heap
  /// holds for a launch on `viewer`. Null where `viewer` cannot reach `rank`.
  virtual char* peerHeap(int rank, int viewer) const = 0;
  size_t heapBytes() const { return heapBytes_; }

  /// Reserves `bytes` at the same offset of every rank's heap and returns that offset; `align`
  /// must be a power of two. Memory is not zeroed on reuse (see releaseTo); its user zeroes it.
  /// Every process makes the same allocations in the same order, so offsets agree without
  /// talking (CollectiveInstance checks that they do). Not thread-safe.
  Expected<uint64_t> allocate(uint64_t bytes, uint64_t align = 256);
  /// Bytes reserved so far: a mark to hand to releaseTo.
  uint64_t heapUsed() const { return used_; }
  /// Gives back everything allocated after `mark` (a heapUsed() value). Only when nothing that
  /// uses that memory can still run: kernels, captured graphs, instances built on it.
  void releaseTo(uint64_t mark);

  /// A host-side all-gather over the ranks, and a barrier: `table` holds nranks() rows of
  /// `width` values; on entry the rows of this process's local ranks are filled, on return every
  /// row is. No process returns before every process has called it with the same `what` (a
  /// mismatch is an error naming both). Bounded: a peer that never comes is an error, with
  /// diagnosePeers() in it. A LocalWorld has every row already and returns at once.
  virtual Error allGatherRanks(std::string_view what, Span<uint64_t> table, unsigned width);
  /// allGatherRanks with nothing to gather.
  Error barrier(std::string_view what) { return allGatherRanks(what, {}, 0); }

  /// What is known about peers that stopped answering ("rank 1's process (pid 4242) has
  /// exited", an NCCL error), for error reports; empty when nothing is known.
  virtual std::string diagnosePeers() const { return ""; }

  /// True where collectives are handed wholly to NCCL (a world that spans nodes, or GPUs
  /// without peer access); CollectiveInstance::create then runs NCCL's call for the collective's
  /// kind (ncclAllReduce, ncclAllGather, ...) on ncclComm().
  virtual bool collectivesViaNccl() const { return false; }
  /// True where every launch first checks, through allGatherRanks, that all ranks make the same
  /// call (ProcessWorldOptions::checkCalls); CollectiveInstance::launch does the check.
  virtual bool checksCalls() const { return false; }
  /// True where the ranks share one GPU and one stream, and each call of a collective runs every
  /// rank in one launch (SharedGpuLaunch::OneLaunch, runtime/RankLaunch.h).
  virtual bool launchesRanksAsOne() const { return false; }
  /// The communicator of a process-per-GPU world; null in a LocalWorld.
  virtual ncclComm_t ncclComm() const { return nullptr; }
  /// One line: where collectives run and why.
  virtual std::string pathDescription() const = 0;

protected:
  explicit SymmetricWorld(size_t heapBytes) : heapBytes_(heapBytes) {}

private:
  size_t heapBytes_ = 0;
  uint64_t used_ = 0;
};

} // namespace collc

#endif // COLLC_RUNTIME_SYMMETRICWORLD_H
