// Which buffers of every stdlib spec may be one memory, per sync strategy: what the verifier
// proves of each strategy's lowered program (CompiledCollective::inPlace, auxAliases,
// aliasesTogether) and the runtime allows. One table for the compile-time test of these claims
// (tests/compiler/StdlibAliasesTest.cpp) and the GPU matrix that runs them in place
// (tests/gpu/InPlaceGpuTest.cpp): a verdict that changes fails both instead of being skipped.
#ifndef COLLC_TESTS_STDLIBALIASES_H
#define COLLC_TESTS_STDLIBALIASES_H

#include "tests/StdlibApplicability.h"

#include <string>

namespace collc::tests {

struct StdlibAliasFacts {
  const char* name;
  unsigned inPlace;    // strategies (bits) whose variants may run in place (out is in's memory)
  unsigned auxAliased; // strategies whose variants allow every pair of aux buffers as one memory
  unsigned together;   // strategies whose variants allow in place and every aux pair at once
};

inline constexpr unsigned kArrival = bit(SyncKind::LL) | bit(SyncKind::Sentinel);
inline constexpr unsigned kEveryGpuStrategy =
    bit(SyncKind::Barrier) | kArrival | bit(SyncKind::LL128Atomic);

// Bits only of the strategies each spec accepts (StdlibApplicability.h).
inline constexpr StdlibAliasFacts kStdlibAliases[] = {
    // Out holds every rank's part (all-gather) or in does (reduce-scatter): never one memory.
    {"allgather_direct", 0, 0, 0},
    {"allgather_ring", 0, 0, 0},
    {"allreduce_oneshot", kEveryGpuStrategy, 0, 0},
    // Under ll and sentinel a block stores normalized rows into `in` while other blocks of its
    // rank may still be sending them to the peers: only barrier orders the two. residual_out =
    // reduce + residual is read and written by one thread, under every strategy.
    {"allreduce_rmsnorm", bit(SyncKind::Barrier), bit(SyncKind::Barrier) | kArrival,
     bit(SyncKind::Barrier)},
    // Its FP8 output is never its input's memory (one byte an element against T's).
    {"allreduce_rmsnorm_fp8", 0, bit(SyncKind::Barrier) | kArrival,
     bit(SyncKind::Barrier) | kArrival},
    // As the static one; its written scale is no other buffer's memory (refused in the spec).
    {"allreduce_rmsnorm_fp8_per_token", 0, bit(SyncKind::Barrier) | kArrival,
     bit(SyncKind::Barrier) | kArrival},
    // As the per-token one: its written block scales are no other buffer's memory.
    {"allreduce_rmsnorm_nvfp4", 0, bit(SyncKind::Barrier) | kArrival,
     bit(SyncKind::Barrier) | kArrival},
    {"allreduce_rmsnorm_nvfp4_linear", 0, bit(SyncKind::Barrier) | kArrival,
     bit(SyncKind::Barrier) | kArrival},
    {"allreduce_ring", bit(SyncKind::Barrier), 0, 0},
    {"allreduce_twoshot", kEveryGpuStrategy, 0, 0},
    {"alltoall_direct", bit(SyncKind::Barrier) | kArrival, 0, 0},
    {"broadcast_direct", bit(SyncKind::Barrier), 0, 0},
    {"reduce_direct", bit(SyncKind::Barrier), 0, 0},
    {"reducescatter_direct", 0, 0, 0},
};

inline const StdlibAliasFacts* findStdlibAliases(const std::string& name) {
  for (const StdlibAliasFacts& facts : kStdlibAliases)
    if (name == facts.name)
      return &facts;
  return nullptr;
}

} // namespace collc::tests

#endif // COLLC_TESTS_STDLIBALIASES_H
