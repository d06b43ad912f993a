// NCCL's own version of each collective (runtime/NcclCollective.h: ncclAllReduce, ncclAllGather,
// ncclReduceScatter, ncclBroadcast, ncclReduce, and alltoall as grouped ncclSend/ncclRecv),
// measured in the same run and the same way as collc's kernels (docs/performance.md): one CUDA
// graph per rank of `graphOps` back-to-back operations, replayed `replays` times with fresh random
// inputs before each replay (outside the timed region); per-operation latency = the median over
// replays of the slowest rank's replay time / graphOps. Every result is checked against the
// float64 host reference of its kind (tools/harness/CollectiveReference.h): one eager call before
// timing, the last replay's output, and one eager call after timing.
//
// One process drives every GPU: ncclCommInitAll makes one communicator per device. NCCL is loaded
// lazily (runtime/NcclLibrary.h), so this compiles and links everywhere and reports plainly,
// as an error, a machine without GPU or without NCCL.
#ifndef COLLC_TOOLS_BENCH_NCCLBASELINE_H
#define COLLC_TOOLS_BENCH_NCCLBASELINE_H

#include "abi/Types.h"
#include "runtime/NcclCollective.h"
#include "runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collc {

namespace ir {
struct Program;
}

struct NcclTiming {
  double usPerOp = 0;                 // median over replays of (max over ranks of replay / ops)
  bool correct = false;               // every checked call matched the float64 reference
  std::string firstMismatches;        // empty when correct; otherwise the first wrong elements
  std::vector<double> usPerOpPerRank; // per rank, median over replays of replay / ops
};

struct NcclBaselineOptions {
  int graphOps = 50; // operations captured back to back in each rank's graph
  int replays = 7;   // timed replays (after one untimed warm-up replay); the median counts
  uint64_t seed = 7; // for the random inputs
  /// The program of a collc spec that computes the collective measured, for the same ranks, type,
  /// operator and root (CompileOptions::specProgram): NCCL's results are checked against it
  /// interpreted (tools/harness/InterpretedReference.h). Required.
  std::shared_ptr<const ir::Program> reference;
};

/// One process driving `devices` (one communicator per device via ncclCommInitAll).
///
/// Environment: create() refuses to run with NCCL_NVLS_ENABLE set to anything but 0 (NVLink
/// multicast must stay off on the GPU machine, see the README; the project's programs set it to 0
/// before NCCL loads). Other NCCL_* variables (NCCL_PROTO, NCCL_ALGO, NCCL_DEBUG, ...) reach NCCL
/// unchanged.
///
/// A wait that passes its deadline (a hang) makes the object unusable: later calls fail at once,
/// and the destructor then leaves communicators, graphs, streams and memory alone (the threads
/// and kernels still inside NCCL may use them) instead of hanging in ncclCommDestroy. The process
/// should report the error and exit; run it under `timeout`.
class NcclBaseline {
public:
  /// Loads NCCL, checks the environment (NCCL_NVLS_ENABLE) and the devices (distinct, present),
  /// creates the communicators, one non-blocking stream and one pair of timing events per rank,
  /// and cudaMalloc'd input and output buffers of `maxBytes` each per rank (for the kinds whose
  /// input or output holds nranks blocks, ncclBaselineBytes() says what a size needs). Errors
  /// start with "nccl baseline: " and say why: "NCCL not found: ...", "no GPU: ...", a bad
  /// device, or the NCCL or CUDA call that failed.
  static Expected<std::unique_ptr<NcclBaseline>> create(std::vector<int> devices,
                                                        uint64_t maxBytes);

  /// `collective` of `count` elements (collc's n: NCCL's count, sendcount or recvcount, or the
  /// elements per peer of an alltoall) on every rank, out of place, buffers shaped as
  /// ncclCallShape() says. symmetric=false: cudaMalloc buffers; true: ncclMemAlloc buffers
  /// registered with ncclCommWindowRegister(comm, buf, bytes, &win, NCCL_WIN_COLL_SYMMETRIC) on
  /// every communicator (registered once, on the first symmetric call; deregistered in the
  /// destructor). Only what NCCL defines is checked: a reduce's output on the root alone. A wrong
  /// result is reported in the NcclTiming (correct=false), with usPerOp still filled in; an error
  /// means the measurement itself failed (CUDA or NCCL error, hang, bad arguments, a root out of
  /// range, a function this NCCL lacks, no symmetric windows in this NCCL).
  Expected<NcclTiming> measureCollective(const NcclCollective& collective, uint64_t count,
                                         bool symmetric, const NcclBaselineOptions& options = {});
  /// measureCollective of an AllReduce.
  Expected<NcclTiming> measureAllReduce(uint64_t count, DType dtype, ReduceOp op, bool symmetric,
                                        const NcclBaselineOptions& options = {});

  int nranks() const;
  const std::vector<int>& devices() const;
  uint64_t maxBytes() const;

  ~NcclBaseline();
  NcclBaseline(const NcclBaseline&) = delete;
  NcclBaseline& operator=(const NcclBaseline&) = delete;

  struct State; // defined in NcclBaseline.cpp

private:
  explicit NcclBaseline(std::unique_ptr<State> state);
  /// measureCollective without the context its errors get.
  Expected<NcclTiming> measure(const NcclCollective& collective, uint64_t count, bool symmetric,
                               const NcclBaselineOptions& options);
  std::unique_ptr<State> state_;
};

/// Bytes each buffer of NcclBaseline::create must hold for `collective` at `count` elements on
/// `nranks` ranks: the larger of its input and output.
uint64_t ncclBaselineBytes(const NcclCollective& collective, uint64_t count, int nranks);

} // namespace collc

#endif // COLLC_TOOLS_BENCH_NCCLBASELINE_H
