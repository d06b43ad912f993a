// What the data-arrival strategies (ll, sentinel) share: the rules a spec must satisfy for the
// arrival of data to replace the barrier, and the marking of the buffers readers poll.
#ifndef COLLC_COMPILER_PASSES_DATAARRIVAL_H
#define COLLC_COMPILER_PASSES_DATAARRIVAL_H

#include "compiler/IR.h"
#include "compiler/Verifier.h"
#include "dsl/Diagnostics.h"

namespace collc {

/// Reports, at the spec's `sync` clause (or the collective), every reason `strategy` cannot
/// synchronize this spec; true if there is none.
bool checkDataArrivalApplies(const ir::Program& program, const VerifyResult& proof,
                             const char* strategy, Diagnostics& diags);

/// Gives every scratch buffer that other ranks write the access mode `access`; steps keep their
/// waits but get no barrier.
void markPolledBuffers(ir::Program& program, const VerifyResult& proof, ir::BufferAccess access);

} // namespace collc

#endif // COLLC_COMPILER_PASSES_DATAARRIVAL_H
