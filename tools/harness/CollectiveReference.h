// The float64 reference of every collective kind, for `collc run`, the GPU tests and the NCCL
// baseline: what each output element of a rank must be, computed from every rank's input with the
// layouts of abi/CollectiveShapes.h (NCCL's), and a tolerant comparison. No CUDA here.
#ifndef COLLC_TOOLS_HARNESS_COLLECTIVEREFERENCE_H
#define COLLC_TOOLS_HARNESS_COLLECTIVEREFERENCE_H

#include "tools/harness/HostData.h"

namespace collc {

/// The one call being checked: its kind, element type, operator (for the kinds that reduce), root
/// (for broadcast and reduce), element count `count` (n) and every rank's input (inputs[q] holds
/// inputElems(kind, count, inputs.size()) elements of rank q).
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::AllReduce;
  DType type = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;
  uint64_t count = 0;
  Span<const void* const> inputs;
};

/// Compares rank `rank`'s output `got` (outputElems(kind, count, nranks) elements) with the
/// reference. Reductions are held to the tolerances of compareAllReduce (HostData.h); elements
/// that are copies of an input (allgather, broadcast, alltoall) must equal it exactly (NaN where
/// it is NaN; -0.0 and +0.0 compare equal, since the sentinel strategy sends -0.0 as +0.0).
/// Elements the kind leaves unspecified (a reduce's output on ranks other than the root) are not
/// compared. Mismatch lines name the element, the value expected and the inputs it came from.
Comparison compareCollective(const CollectiveCall& call, int rank, const void* got,
                             std::string_view label, unsigned maxReported = 4);

} // namespace collc

#endif // COLLC_TOOLS_HARNESS_COLLECTIVEREFERENCE_H
