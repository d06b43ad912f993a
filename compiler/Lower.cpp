#include "compiler/Lower.h"

#include "compiler/passes/Passes.h"

namespace collc {

void lower(ir::Program& program, const VerifyResult& proof, const LowerOptions& options) {
  auto dump = [&](const char* pass) {
    if (!options.printAfterEach)
      return;
    *options.printAfterEach << "// ----- IR after " << pass << "\n";
    ir::print(program, *options.printAfterEach);
  };
  dump("sema");
  partitionSteps(program);
  dump("partition");
  lowerBarrierSync(program, proof);
  dump("barrier sync lowering");
  vectorize(program, options.dtype, options.vectorBytes, options.unroll);
  dump("vectorize");
}

} // namespace collc
