// The lowering passes, one per file, each a single function over the IR. Lower.cpp runs them in
// order; `collc emit --emit=ir --print-ir-after-all` shows the IR after each.
#ifndef COLLC_COMPILER_PASSES_PASSES_H
#define COLLC_COMPILER_PASSES_PASSES_H

#include "compiler/IR.h"
#include "compiler/Verifier.h"
#include "dsl/Diagnostics.h"

namespace collc {

/// Groups each step's statements into element loops: statements whose element ranges have the same
/// bound share one loop, so a thread reads what it wrote a statement earlier (no race, no sync).
void partitionSteps(ir::Program& program);

/// The barrier strategy: one barrier opens every step that waits, and its scope is per block when
/// the verifier proved every dependency index-aligned, else across all blocks.
void lowerBarrierSync(ir::Program& program, const VerifyResult& proof);

/// The LL strategy: buffers other ranks put into become packet buffers whose 16-byte stores carry
/// data and the call's flag together; readers poll for the flag; no barrier. Reports (and returns
/// false) when the spec's data flow needs what data arrival cannot give.
bool lowerLLSync(ir::Program& program, const VerifyResult& proof, Diagnostics& diags);

/// The sentinel strategy: buffers other ranks put into start as -0.0; writers never send -0.0
/// (they send +0.0), readers poll each element until it changes and clear it after reading; three
/// copies rotate, so clearing needs no separate pass. Same applicability as LL, plus: every
/// element a peer writes is read exactly once per call.
bool lowerSentinelSync(ir::Program& program, const VerifyResult& proof, Diagnostics& diags);

/// The LL128 strategy: buffers other ranks put into become 128-byte lines of 120 bytes of data
/// and the call's flag, each stored and polled by 8 threads together; element loops walk whole
/// lines. Same applicability as LL, plus: every region of such a buffer starts a line (a whole
/// slot, or a chunk of a slot when the buffer is only used in chunks).
bool lowerLL128Sync(ir::Program& program, const VerifyResult& proof, Diagnostics& diags);

/// The ll128_atomic strategy (sum only), on a reduce-scatter written as puts into per-sender slots
/// plus one reduce: every rank adds its part of a chunk into the owner's accumulation lines with
/// vector atomics, counting in each line's first element (whose value goes to a side buffer); the
/// owner takes a line when its count reaches nranks and zeroes it for the call after next. The
/// scratch shrinks from nranks slots to one. The rest synchronizes as LL. Runs before partition.
bool lowerLL128AtomicSync(ir::Program& program, const VerifyResult& proof, ReduceOp op,
                          Diagnostics& diags);

/// Sets the vector width (elements per memory operation) and unroll of every element loop.
void vectorize(ir::Program& program, DType dtype, int vectorBytes, int unroll);

} // namespace collc

#endif // COLLC_COMPILER_PASSES_PASSES_H
