#include "compiler/passes/DataArrival.h"
#include "compiler/passes/Passes.h"

namespace collc {

bool lowerLLSync(ir::Program& program, const VerifyResult& proof, Diagnostics& diags) {
  if (!checkDataArrivalApplies(program, proof, "ll", diags))
    return false;
  markPolledBuffers(program, proof, ir::BufferAccess::LL);
  // The flag in each packet is the call's epoch: packets of call k and call k+2 share a copy but
  // never a flag, so no copy is ever reset. Two copies by parity keep call k+1's packets from
  // overwriting call k's before they are read.
  program.scratchCopies = 2;
  return true;
}

} // namespace collc
