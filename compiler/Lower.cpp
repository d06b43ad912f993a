#include "compiler/Lower.h"

#include "compiler/passes/Passes.h"
#include "compiler/sync/Strategy.h"

#include <algorithm>

namespace collc {

std::optional<ir::Program> lower(const ir::Program& spec, const VerifyResult& proof,
                                 const LowerOptions& options, Diagnostics& diags) {
  auto dump = [&](const ir::Program& program, const std::string& pass) {
    if (!options.printAfterEach)
      return;
    *options.printAfterEach << "// ----- IR after " << pass << "\n";
    ir::print(program, *options.printAfterEach, options.lineOf);
  };
  const SyncStrategy& strategy = syncStrategy(spec.sync);
  const std::string strategyName(name(spec.sync));
  SyncContext context{options.dtype, options.op, options.experimentalLL128};
  dump(spec, "sema");

  std::optional<ir::Program> program = strategy.rewriteStatements(spec, proof, context, diags);
  if (!program)
    return std::nullopt;
  if (spec.sync == SyncKind::LL128Atomic)
    dump(*program, strategyName + " statement rewrite");
  program = partitionSteps(*program);
  dump(*program, "partition");
  program = strategy.lower(*program, proof, context, diags);
  if (!program)
    return std::nullopt;
  dump(*program, strategyName + " sync lowering");
  const int vectorBytes = strategy.vectorBytes(options.vectorBytes);
  program =
      vectorize(*program, std::max(1, vectorBytes / int(sizeOf(options.dtype))), options.unroll);
  dump(*program, "vectorize");
  program = forwardRegisters(*program);
  dump(*program, "forward registers");
  program = hoistLoads(*program, options.nranks);
  dump(*program, "hoist loads");
  program = cacheRows(*program, options.threads, options.rowLength);
  dump(*program, "cache rows");
  return program;
}

} // namespace collc
