// The lowering passes that are not a sync strategy's (compiler/sync/), one per file, each a
// function from a program to a new one. Lower.cpp runs them in order; `collc emit --emit=ir
// --print-ir-after-all` shows the IR after each.
#ifndef COLLC_COMPILER_PASSES_PASSES_H
#define COLLC_COMPILER_PASSES_PASSES_H

#include "compiler/ir/IR.h"

namespace collc {

/// Groups each step's statements into element loops: statements whose element ranges have the same
/// bound share one loop, so a thread reads what it wrote a statement earlier (no race, no sync). A
/// step with a row-wise statement becomes a row loop instead (one block per row at a time).
ir::Program partitionSteps(const ir::Program& program);

/// Sets the vector width (elements per memory operation) and unroll of every element loop.
ir::Program vectorize(const ir::Program& program, int vectorElems, int unroll);

/// A reduce whose result the next statement of its loop only sends on (a two-shot's reduced
/// chunk, put to every peer) keeps the result in a register, and the sends read the register:
/// no load of what this thread has just stored, an L2 round trip on the critical path.
ir::Program forwardRegisters(const ir::Program& program);

/// A peer loop of puts that all send the same vector (`for p in peers { put in -> p.slot[rank] }`)
/// loads it once, before the loop, into a register: at 8 ranks that is one load instead of seven.
/// A loop that runs once (2 ranks) is left as it is.
ir::Program hoistLoads(const ir::Program& program, int nranks);

/// In a row loop whose rows one reduce computes, each thread keeps its vectors of the row in
/// registers from that reduce to the normalisation (when it has few enough: register pressure).
ir::Program cacheRows(const ir::Program& program, int threads, int64_t rowLength);

} // namespace collc

#endif // COLLC_COMPILER_PASSES_PASSES_H
