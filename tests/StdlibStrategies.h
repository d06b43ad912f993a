// The sync strategies this version compiles the stdlib AllReduces with, and the reduction
// operators each applies to. One list for every matrix test (NVRTC, GPU, process per GPU): a
// strategy that stops compiling fails them instead of being skipped. ll128 is not implemented;
// CompileTest checks that it is refused with a message.
#ifndef COLLC_TESTS_STDLIBSTRATEGIES_H
#define COLLC_TESTS_STDLIBSTRATEGIES_H

#include "dsl/Types.h"

namespace collc::tests {

inline constexpr SyncKind kImplementedStrategies[] = {SyncKind::Barrier, SyncKind::Sentinel,
                                                      SyncKind::LL, SyncKind::LL128Atomic};

/// ll128_atomic reduces with the GPU's atomic add: sums only.
inline bool strategyApplies(SyncKind sync, ReduceOp op) {
  return sync != SyncKind::LL128Atomic || op == ReduceOp::Sum;
}

} // namespace collc::tests

#endif // COLLC_TESTS_STDLIBSTRATEGIES_H
