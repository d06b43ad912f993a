// What every stdlib spec is: its kind, and the implemented strategies the compiler refuses for it
// (with the data-flow rule it names; see dsl/README.md, "Synchronization strategies"). The matrix
// tests (NVRTC, GPU) compile every spec with every strategy it accepts; KindsVerifierTest checks
// that each refusal listed here is a refusal with a message, so neither list can drift.
#ifndef COLLC_TESTS_STDLIBAPPLICABILITY_H
#define COLLC_TESTS_STDLIBAPPLICABILITY_H

#include "abi/CollectiveShapes.h"
#include "tests/StdlibStrategies.h"

#include <string>

namespace collc::tests {

constexpr unsigned bit(SyncKind sync) {
  return 1u << static_cast<unsigned>(sync);
}

struct StdlibSpecFacts {
  const char* name;
  CollectiveKind kind;
  unsigned refused; // bits of the strategies the compiler refuses for this spec
  /// Bits of `refused` that 2 ranks accept: a strategy decides by the facts of the variant's rank
  /// count, and a ring's two ranks send to each other.
  unsigned acceptedAtTwoRanks = 0;
};

// ll, sentinel and ll128 refuse a data flow in which some rank sends to a peer that sends nothing
// back (broadcast, reduce, rings); ll128_atomic needs a reduce-scatter into per-sender slots.
inline constexpr unsigned kOneWay =
    bit(SyncKind::LL) | bit(SyncKind::Sentinel) | bit(SyncKind::LL128) | bit(SyncKind::LL128Atomic);
// What a data flow whose ranks all send to each other takes (a ring at 2 ranks).
inline constexpr unsigned kMutualAtTwoRanks =
    bit(SyncKind::LL) | bit(SyncKind::Sentinel) | bit(SyncKind::LL128);
inline constexpr StdlibSpecFacts kStdlibSpecs[] = {
    {"allgather_direct", CollectiveKind::AllGather, bit(SyncKind::LL128Atomic)},
    {"allgather_ring", CollectiveKind::AllGather, kOneWay, kMutualAtTwoRanks},
    {"allreduce_oneshot", CollectiveKind::AllReduce, 0},
    // Row-wise epilogue (rmsnorm): a step split by rows cannot walk 128-byte lines.
    {"allreduce_rmsnorm", CollectiveKind::AllReduce,
     bit(SyncKind::LL128) | bit(SyncKind::LL128Atomic)},
    {"allreduce_rmsnorm_fp8", CollectiveKind::AllReduce,
     bit(SyncKind::LL128) | bit(SyncKind::LL128Atomic)},
    {"allreduce_rmsnorm_fp8_per_token", CollectiveKind::AllReduce,
     bit(SyncKind::LL128) | bit(SyncKind::LL128Atomic)},
    {"allreduce_rmsnorm_nvfp4", CollectiveKind::AllReduce,
     bit(SyncKind::LL128) | bit(SyncKind::LL128Atomic)},
    {"allreduce_rmsnorm_nvfp4_linear", CollectiveKind::AllReduce,
     bit(SyncKind::LL128) | bit(SyncKind::LL128Atomic)},
    {"allreduce_ring", CollectiveKind::AllReduce, kOneWay, kMutualAtTwoRanks},
    {"allreduce_twoshot", CollectiveKind::AllReduce, 0},
    {"alltoall_direct", CollectiveKind::AllToAll, bit(SyncKind::LL128Atomic)},
    {"broadcast_direct", CollectiveKind::Broadcast, kOneWay},
    {"reduce_direct", CollectiveKind::Reduce, kOneWay},
    {"reducescatter_direct", CollectiveKind::ReduceScatter, 0},
};

/// Whether the matrix tests compile `spec` with (sync, op) at every rank count: the strategy is
/// implemented for the op (StdlibStrategies.h) and not refused for the spec; the op is compiled for
/// every operator only where the kind reduces (elsewhere the kernels differ in nothing but an
/// unused function).
inline bool specAccepts(const StdlibSpecFacts& spec, SyncKind sync, ReduceOp op) {
  if (!reduces(spec.kind) && op != ReduceOp::Sum)
    return false;
  return strategyApplies(sync, op) && !(spec.refused & bit(sync));
}

/// The same at `nranks` ranks: also what 2 ranks alone accept.
inline bool specAccepts(const StdlibSpecFacts& spec, SyncKind sync, ReduceOp op, int nranks) {
  return specAccepts(spec, sync, op) ||
         (nranks == 2 && (spec.acceptedAtTwoRanks & bit(sync)) &&
          (reduces(spec.kind) || op == ReduceOp::Sum) && strategyApplies(sync, op));
}

inline const StdlibSpecFacts* findStdlibSpec(const std::string& name) {
  for (const StdlibSpecFacts& spec : kStdlibSpecs)
    if (name == spec.name)
      return &spec;
  return nullptr;
}

} // namespace collc::tests

#endif // COLLC_TESTS_STDLIBAPPLICABILITY_H
