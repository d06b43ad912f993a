// The device helpers every generated kernel starts with, specialised by the code generator through
// a few type aliases and constants it prints first (T, Bits, Word, kVec, kRanks, ...).
#ifndef COLLC_COMPILER_CUDAPRELUDE_H
#define COLLC_COMPILER_CUDAPRELUDE_H

#include "abi/Types.h"

namespace collc {

/// Element conversion and the reduction operator for one dtype/op; printed before kPrelude.
const char* elementHelpers(DType dtype);
const char* combineFunction(ReduceOp op);

/// Helpers independent of the variant: memory access, element loops' bodies, flags, watchdog.
extern const char* const kPrelude;
/// Flags and the barrier between steps; printed after kPrelude when a barrier is used.
extern const char* const kBarrierPrelude;
/// Packet stores and polling loads of the LL strategy; printed after kPrelude when used.
extern const char* const kLLPrelude;
/// Vector-atomic accumulation lines of the ll128_atomic strategy (needs red_add_vec).
extern const char* const kAtomicLinesPrelude;
/// The 16-byte vector atomic add for one dtype (red.global.add.v4...), before kAtomicLinesPrelude.
const char* vectorAtomicAdd(DType dtype);
/// Line stores and polling line loads of the LL128 strategy (8 threads per 128-byte line).
extern const char* const kLL128Prelude;
/// Canonicalizing stores and polling, clearing loads of the sentinel strategy.
extern const char* const kSentinelPrelude;

} // namespace collc

#endif // COLLC_COMPILER_CUDAPRELUDE_H
