// Which NCCL call runs a collective of each kind, with what count and on buffers of what size, as
// the NCCL baseline (tools/bench/NcclBaseline.h) and the NCCL engine of a process-per-GPU world
// (CollectiveInstance::createNccl) run it; NcclLibrary::enqueue makes the calls. The buffers are
// abi/CollectiveShapes.h's, which follow NCCL's. AllToAll has no NCCL call of its own: it is one
// ncclSend and one ncclRecv per rank (itself included), in one group, as nccl-tests measures it.
// Pure: no NCCL, no CUDA here, so that the reports and their tests can use it anywhere.
#ifndef COLLC_RUNTIME_NCCLCOLLECTIVE_H
#define COLLC_RUNTIME_NCCLCOLLECTIVE_H

#include "abi/CompiledCollective.h"
#include "abi/Types.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace collc {

/// One collective as NCCL is asked for it; the count is the call's.
struct NcclCollective {
  CollectiveKind kind = CollectiveKind::AllReduce;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum; // allreduce, reducescatter, reduce
  int root = 0;                // broadcast, reduce

  bool operator==(const NcclCollective& other) const {
    return kind == other.kind && dtype == other.dtype && op == other.op && root == other.root;
  }
};

/// What NCCL is asked for to run, or be compared with, `compiled`: its kind, type, op and root.
NcclCollective ncclCollectiveOf(const CompiledCollective& compiled);

/// The NCCL functions that run `kind`: "ncclAllReduce", "ncclAllGather", "ncclReduceScatter",
/// "ncclBroadcast", "ncclReduce", and "ncclSend/ncclRecv" for alltoall.
std::string_view ncclCallName(CollectiveKind kind);

/// How one rank calls NCCL for one collective of `count` elements (collc's `n`) on `nranks` ranks.
struct NcclCallShape {
  uint64_t ncclCount = 0;   // the count argument of each call: count, sendcount (allgather),
                            // recvcount (reducescatter); per peer for alltoall (ncclSend/ncclRecv)
  uint64_t inputElems = 0;  // elements of the rank's input buffer
  uint64_t outputElems = 0; // and of its output buffer
  int callsPerOp = 1;       // NCCL calls one rank makes per operation (alltoall: 2 per rank)
  bool grouped = false;     // those calls go between ncclGroupStart and ncclGroupEnd

  /// Elements a buffer needs to hold either side of the call.
  uint64_t bufferElems() const { return inputElems > outputElems ? inputElems : outputElems; }
};
NcclCallShape ncclCallShape(CollectiveKind kind, uint64_t count, int nranks);

/// What a report says was measured for one collective: "ncclAllGather", "ncclBroadcast (root 1)",
/// "ncclSend/ncclRecv to every rank in one group (NCCL has no alltoall call)".
std::string describeNcclCall(const NcclCollective& collective);
/// The same for the collectives of a sweep, in order: one described alone, several as "NCCL's
/// same collective per kind (allreduce: ncclAllReduce; broadcast: ncclBroadcast root 0; alltoall:
/// ncclSend/ncclRecv to every rank in one group)". Empty for none.
std::string describeNcclCalls(const std::vector<NcclCollective>& collectives);

} // namespace collc

#endif // COLLC_RUNTIME_NCCLCOLLECTIVE_H
