// The process-per-GPU backend of symmetric memory (see SymmetricWorld.h): each process drives one
// rank on one GPU, as inference engines run. The processes find each other through NCCL: a
// communicator made here from a unique id (ncclCommInitRank), or one the application already has
// (adopt). Everything collc's kernels need is then set up over that communicator:
//  - each rank's heap is cudaMalloc'd and exported with CUDA IPC (cudaIpcGetMemHandle); every
//    rank opens every peer's handle once (cudaIpcOpenMemHandle), so peerHeap() holds pointers
//    this GPU can load from and store to over NVLink, and the generated kernels are the same as
//    in a LocalWorld. CUDA IPC rather than ncclMemAlloc + ncclCommWindowRegister + NCCL's device
//    API (ncclGetLsaPointer): the device API needs an nvcc-built kernel compiled against NCCL's
//    device headers, whose inline code must match the NCCL loaded at run time (2.28.9 headers
//    here, 2.28.3 on the GPU machine); CUDA IPC needs neither;
//  - host-side exchanges (the bootstrap, CollectiveInstance's layout check, RunHarness's
//    results) go through ncclAllGather on a private stream, in fixed-size frames that name the
//    exchange (ExchangeFrame.h), each bounded by a deadline.
// At bootstrap every rank reports its host, GPU and process; the world decides once where
// collectives run (Topology.h): collc kernels when all ranks share a node and reach each other,
// otherwise wholly NCCL (CollectiveInstance then calls NCCL's own collective: ncclAllReduce,
// ncclAllGather, ...). Rank 0 logs the decision.
//
// Every call that involves the other processes is collective: each process makes the same calls
// in the same order. A peer that stops answering becomes an error naming it, with what is known
// (diagnosePeers: "rank 1's process (pid 4242) has exited"), never a hang.
#ifndef COLLC_RUNTIME_PROCESSWORLD_H
#define COLLC_RUNTIME_PROCESSWORLD_H

#include "runtime/Status.h"
#include "runtime/SymmetricWorld.h"

#include <array>
#include <memory>

namespace collc {

struct ProcessWorldOptions {
  size_t heapBytes = size_t(256) << 20; // per rank
  double bootstrapSeconds = 120;        // the rendezvous and ncclCommInitRank
  double exchangeSeconds = 60;          // each host-side exchange after that
  /// -1: from the environment (COLLC_NODE_SIZE, COLLC_TREAT_EACH_GPU_AS_NODE; else by host);
  /// 0: by host; k > 0: ranks [0,k), [k,2k), ... are the nodes.
  int nodeSize = -1;
  bool log = true; // rank 0 writes one line to stderr: where collectives run, and why
  /// Ranks may share a GPU (for correctness only: the processes' contexts are time-sliced, so
  /// each flag exchange between them waits for a time slice, about 2.3 ms on an H200). Such a
  /// world needs no NCCL: its host exchanges go through shared memory (SharedMemoryExchange.h),
  /// all its ranks must be on one host, and its collectives always run collc's kernels. Without
  /// it, two ranks on one GPU are refused. Every rank must pass the same value.
  bool shareGpu = false;
  /// Every launch first compares its collective (kernel, type, operator, root) and count with
  /// every rank's through a host exchange, and fails on all ranks, naming each rank's call,
  /// where they differ: a checking mode (a host exchange per launch; launches inside a graph
  /// capture are checked when captured, replays are not). Every rank must pass the same value.
  bool checkCalls = false;
};

/// The bytes of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES), so this header needs no <nccl.h>.
using NcclUniqueIdBytes = std::array<char, 128>;

class ProcessWorld final : public SymmetricWorld {
public:
  /// Joins the world a launcher described in the environment (LaunchEnvironment.h: RANK,
  /// WORLD_SIZE, LOCAL_RANK, COLLC_RENDEZVOUS): the GPU is LOCAL_RANK, rank 0 makes the NCCL id
  /// and shares it through the rendezvous, then create(). Errors say which variable or step.
  static Expected<std::unique_ptr<ProcessWorld>>
  fromEnvironment(const ProcessWorldOptions& options = {});

  /// A fresh NCCL unique id (ncclGetUniqueId), for the caller to hand to every rank.
  static Expected<NcclUniqueIdBytes> newUniqueId();
  /// The id of a world whose ranks share a GPU: random bytes that name its shared-memory
  /// segment (no NCCL needed). Hand it to every rank as an NCCL id would be.
  static NcclUniqueIdBytes newSharedGpuId();

  /// Rank `rank` of `nranks` on GPU `device`: ncclCommInitRank with `id` (bounded by
  /// options.bootstrapSeconds), then the heap and the peer mappings. The communicator is the
  /// world's, destroyed with it. With options.shareGpu, `id` (newSharedGpuId) names the
  /// shared-memory segment of the host exchanges instead, and there is no communicator.
  static Expected<std::unique_ptr<ProcessWorld>> create(int rank, int nranks, int device,
                                                        const NcclUniqueIdBytes& id,
                                                        const ProcessWorldOptions& options = {});

  /// Builds the world on the application's communicator (its rank, size and GPU come from
  /// NCCL). The communicator stays the application's: the world uses it for its own exchanges
  /// and NCCL path (never from another thread at the same time as the application), and does
  /// not destroy it.
  static Expected<std::unique_ptr<ProcessWorld>> adopt(ncclComm_t comm,
                                                       const ProcessWorldOptions& options = {});

  /// Waits (bounded) for the other processes, so that no peer still uses this rank's heap, then
  /// unmaps the peers' heaps, frees this one and destroys the communicator if it is the world's
  /// (aborts it if the world is broken: a peer died or an exchange failed).
  ~ProcessWorld() override;

  /// This process's rank (its one local rank), and how many nodes the world found at bootstrap
  /// (1 where every rank shares a node; more makes collectives run on NCCL).
  int rank() const;
  int nodeCount() const;

  int nranks() const override;
  const std::vector<int>& localRanks() const override;
  int device(int rank) const override;
  cudaStream_t stream(int rank) const override;
  char* heapBase(int rank) const override;
  char* peerHeap(int rank, int viewer) const override;
  Error allGatherRanks(std::string_view what, Span<uint64_t> table, unsigned width) override;
  std::string diagnosePeers() const override;
  bool collectivesViaNccl() const override;
  bool checksCalls() const override;
  /// Whether ranks of this world may share a GPU (options.shareGpu).
  bool sharesGpus() const;
  ncclComm_t ncclComm() const override;
  std::string pathDescription() const override;

  struct State; // defined in ProcessWorld.cpp

private:
  ProcessWorld(std::unique_ptr<State> state, size_t heapBytes);
  static Expected<std::unique_ptr<ProcessWorld>> build(std::unique_ptr<State> state,
                                                       const ProcessWorldOptions& options);
  static Expected<std::unique_ptr<ProcessWorld>>
  createSharingGpu(int rank, int nranks, int device, const NcclUniqueIdBytes& id,
                   const ProcessWorldOptions& options);
  /// The heap, the rank cards, the node layout, the peer mappings and the path decision.
  Error bootstrap(const ProcessWorldOptions& options);
  std::unique_ptr<State> state_;
};

} // namespace collc

#endif // COLLC_RUNTIME_PROCESSWORLD_H
