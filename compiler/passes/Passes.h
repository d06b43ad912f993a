// The lowering passes, one per file, each a single function over the IR. Lower.cpp runs them in
// order; `collc emit --emit=ir --print-ir-after-all` shows the IR after each.
#ifndef COLLC_COMPILER_PASSES_PASSES_H
#define COLLC_COMPILER_PASSES_PASSES_H

#include "compiler/IR.h"
#include "compiler/Verifier.h"

namespace collc {

/// Groups each step's statements into element loops: statements whose element ranges have the same
/// bound share one loop, so a thread reads what it wrote a statement earlier (no race, no sync).
void partitionSteps(ir::Program& program);

/// The barrier strategy: one barrier opens every step that waits, and its scope is per block when
/// the verifier proved every dependency index-aligned, else across all blocks.
void lowerBarrierSync(ir::Program& program, const VerifyResult& proof);

/// Sets the vector width (elements per memory operation) and unroll of every element loop.
void vectorize(ir::Program& program, DType dtype, int vectorBytes, int unroll);

} // namespace collc

#endif // COLLC_COMPILER_PASSES_PASSES_H
