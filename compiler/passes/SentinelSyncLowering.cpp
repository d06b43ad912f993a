#include "compiler/passes/DataArrival.h"
#include "compiler/passes/Passes.h"

namespace collc {

bool lowerSentinelSync(ir::Program& program, const VerifyResult& proof, Diagnostics& diags) {
  bool ok = checkDataArrivalApplies(program, proof, "sentinel", diags);
  if (!proof.remoteDataReadOnce) {
    const llvm::SMLoc loc = program.syncLoc.isValid() ? program.syncLoc : program.loc;
    diags.error(loc, "sync strategy 'sentinel' cannot synchronize '" + program.name +
                         "': an element a peer writes is read more than once (or never) in a "
                         "call, but a reader clears each element as it reads it; use 'll'");
    ok = false;
  }
  if (!ok)
    return false;
  markPolledBuffers(program, proof, ir::BufferAccess::Sentinel);
  // A reader clears each element right after reading it, so a copy is clean again by the time
  // peers write it next. Three copies rotate (in use, being cleared, ready): a peer that runs
  // one call ahead writes a copy nobody is still clearing.
  program.scratchCopies = 3;
  return true;
}

} // namespace collc
