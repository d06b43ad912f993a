// The sync strategies this version compiles the stdlib AllReduces with, and the reduction
// operators each applies to. One list for every matrix test (NVRTC, GPU, process per GPU): a
// strategy that stops compiling fails them instead of being skipped.
#ifndef COLLC_TESTS_STDLIBSTRATEGIES_H
#define COLLC_TESTS_STDLIBSTRATEGIES_H

#include "abi/Types.h"

namespace collc::tests {

/// Every strategy the compiler lowers: the compile-only matrices (NVRTC, the stdlib table) use them
/// all, with CompileOptions::experimentalLL128 set.
inline constexpr SyncKind kImplementedStrategies[] = {
    SyncKind::Barrier, SyncKind::Sentinel, SyncKind::LL, SyncKind::LL128, SyncKind::LL128Atomic};

/// The strategies the compiler compiles by default, which the GPU matrices run. ll128 is disabled
/// (it has read torn lines on the GPUs; dsl/README.md, ll128): tests/gpu/LL128ProbeTest probes
/// its assumption instead.
inline constexpr SyncKind kGpuStrategies[] = {SyncKind::Barrier, SyncKind::Sentinel, SyncKind::LL,
                                              SyncKind::LL128Atomic};

/// ll128_atomic reduces with the GPU's atomic add: sums only.
inline bool strategyApplies(SyncKind sync, ReduceOp op) {
  return sync != SyncKind::LL128Atomic || op == ReduceOp::Sum;
}

} // namespace collc::tests

#endif // COLLC_TESTS_STDLIBSTRATEGIES_H
