#include "compiler/Lower.h"

#include "compiler/passes/Passes.h"

namespace collc {

bool lower(ir::Program& program, const VerifyResult& proof, const LowerOptions& options,
           Diagnostics& diags) {
  auto dump = [&](const char* pass) {
    if (!options.printAfterEach)
      return;
    *options.printAfterEach << "// ----- IR after " << pass << "\n";
    ir::print(program, *options.printAfterEach);
  };
  dump("sema");
  // ll128_atomic rewrites statements (puts into atomic line adds), so it runs before partition.
  if (program.sync == SyncKind::LL128Atomic) {
    if (!lowerLL128AtomicSync(program, proof, options.op, diags))
      return false;
    dump("ll128_atomic sync lowering");
  }
  partitionSteps(program);
  dump("partition");
  switch (program.sync) {
  case SyncKind::Barrier:
    lowerBarrierSync(program, proof);
    dump("barrier sync lowering");
    break;
  case SyncKind::LL:
    if (!lowerLLSync(program, proof, diags))
      return false;
    dump("ll sync lowering");
    break;
  case SyncKind::Sentinel:
    if (!lowerSentinelSync(program, proof, diags))
      return false;
    dump("sentinel sync lowering");
    break;
  case SyncKind::LL128Atomic:
    break; // lowered above
  case SyncKind::LL128:
    if (!options.experimentalLL128) {
      diags.error(program.syncLoc.isValid() ? program.syncLoc : program.loc,
                  "sync strategy 'll128' is disabled: on 2 x H200 two of its GPU test runs read "
                  "a 128-byte line whose flag had arrived but whose data had not (a wrong "
                  "result), although the line probe saw no torn line in 5 billion loads; until "
                  "the cause is found use 'll' or 'sentinel' (--experimental-ll128 compiles it "
                  "anyway, to investigate)");
      return false;
    }
    if (!lowerLL128Sync(program, proof, diags))
      return false;
    dump("ll128 sync lowering");
    break;
  }
  vectorize(program, options.dtype, options.vectorBytes, options.unroll);
  dump("vectorize");
  return true;
}

} // namespace collc
