// What the data-arrival strategies (ll, sentinel, ll128, and ll128_atomic's all-gather) share: the
// rules a spec must satisfy for the arrival of data to replace the barrier, and the rewrite that
// turns the reads and writes of the buffers peers write into polls and signalling stores.
#ifndef COLLC_COMPILER_SYNC_DATAARRIVAL_H
#define COLLC_COMPILER_SYNC_DATAARRIVAL_H

#include "compiler/Verifier.h"
#include "compiler/ir/IR.h"
#include "dsl/Diagnostics.h"

#include <set>

namespace collc {

/// Reports, at the spec's `sync` clause (or the collective), every reason `strategy` cannot
/// synchronize this spec; true if there is none.
bool checkDataArrivalApplies(const ir::Program& program, const VerifyResult& proof,
                             const char* strategy, Diagnostics& diags);

/// `program` with `buffers` polled: stored as `storage`, read with `load` and written with
/// `store` wherever a statement touches them.
ir::Program pollBuffers(const ir::Program& program, const std::set<int>& buffers,
                        ir::Storage storage, ir::LoadKind load, ir::StoreKind store);

/// `program` with every element loop walking its elements in `shape`.
ir::Program shapeLoops(const ir::Program& program, ir::LoopShape shape);

} // namespace collc

#endif // COLLC_COMPILER_SYNC_DATAARRIVAL_H
