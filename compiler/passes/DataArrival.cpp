#include "compiler/passes/DataArrival.h"

namespace collc {

bool checkDataArrivalApplies(const ir::Program& program, const VerifyResult& proof,
                             const char* strategy, Diagnostics& diags) {
  const llvm::SMLoc loc = program.syncLoc.isValid() ? program.syncLoc : program.loc;
  const std::string prefix =
      std::string("sync strategy '") + strategy + "' cannot synchronize '" + program.name + "': ";
  unsigned before = diags.errorCount();
  if (proof.usesAtomics)
    diags.error(loc, prefix + "atomic_add gives a reader no per-element sign that the additions "
                              "are complete; use 'barrier' (or 'll128_atomic' for a two-shot sum)");
  if (!proof.localAligned)
    diags.error(loc, prefix + "a step reads data that another thread of the same rank wrote in an "
                              "earlier step, which only a barrier orders; use 'barrier'");
  if (proof.remoteWriteOrdering)
    diags.error(loc, prefix + "a rank overwrites memory a peer used in an earlier step, and only "
                              "a barrier tells it the peer is done; use 'barrier'");
  if (!proof.exchangesAreMutual)
    diags.error(loc, prefix + "some rank sends data to a peer that sends it nothing back in the "
                              "same call, so it could run two calls ahead and overwrite data the "
                              "peer has not read yet; use 'barrier'");
  for (int index : proof.remotelyWritten)
    if (proof.locallyWritten.count(index))
      diags.error(program.buffers[index]->loc,
                  prefix + "scratch '" + program.buffers[index]->name +
                      "' is written both by peers and by its own rank; readers could not tell "
                      "which write arrived");
  return diags.errorCount() == before;
}

void markPolledBuffers(ir::Program& program, const VerifyResult& proof, ir::BufferAccess access) {
  for (int index : proof.remotelyWritten)
    program.buffers[index]->access = access;
  for (auto& step : program.steps)
    step.syncPointBefore = -1;
  program.syncPoints = 0;
}

} // namespace collc
