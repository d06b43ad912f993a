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
    diags.error(program.syncLoc.isValid() ? program.syncLoc : program.loc,
                "sync strategy '" + std::string(name(program.sync)) +
                    "' is not available in this version of collc; use barrier, sentinel, ll or "
                    "ll128_atomic");
    return false;
  }
  vectorize(program, options.dtype, options.vectorBytes, options.unroll);
  dump("vectorize");
  return true;
}

} // namespace collc
