#include "compiler/passes/Passes.h"

namespace collc {

void lowerBarrierSync(ir::Program& program, const VerifyResult& proof) {
  int syncPoint = 0;
  for (auto& step : program.steps) {
    // A step that waits for any earlier step opens with one barrier: it orders everything before
    // it, which covers all the waits of the step at once.
    step.syncPointBefore = step.waits.empty() ? -1 : syncPoint++;
  }
  program.syncPoints = syncPoint;
  program.barrierScope = proof.indexAligned ? ir::BarrierScope::Matched : ir::BarrierScope::Full;
}

} // namespace collc
