#include "compiler/Lower.h"

#include "compiler/ExpandSteps.h"
#include "compiler/RowEpilogue.h"
#include "compiler/SizeLimits.h"
#include "compiler/passes/Passes.h"
#include "compiler/sync/Strategy.h"
#include "compiler/verify/AcrossCalls.h"
#include "compiler/verify/ChunkGroups.h"

#include <algorithm>

namespace collc {

namespace {

/// Unroll multiplies the vectors of an element loop; LL128's line loops and row steps have their
/// own shape, which it would leave as it is.
bool checkUnroll(const ir::Program& spec, const ir::Program& lowered, int unroll,
                 Diagnostics& diags) {
  const bool rowSteps = std::any_of(lowered.steps.begin(), lowered.steps.end(),
                                    [](const ir::Step& step) { return hasRowStatement(step); });
  const bool lineLoops = lowered.usesLL128Lines();
  if (unroll == 1 || !(lineLoops || rowSteps))
    return true;
  diags.error(spec.loc, "unroll = " + std::to_string(unroll) +
                            " does not apply to this variant: its loops " +
                            (lineLoops ? "walk 128-byte lines (ll128)" : "go by rows") +
                            ", one line or row at a time; use unroll = 1");
  return false;
}

} // namespace

std::optional<LoweredVariant> lower(const ir::Program& spec, const VerifyResult& proof,
                                    const LowerOptions& options, Diagnostics& diags,
                                    int64_t* work) {
  auto printed = [&](const ir::Program& program) {
    std::string text;
    llvm::raw_string_ostream out(text);
    ir::print(program, out, options.lineOf);
    return out.str();
  };
  auto dump = [&](const ir::Program& program, const std::string& step) {
    if (!options.printAfterEach)
      return;
    *options.printAfterEach << "// ----- IR after " << step << "\n";
    ir::print(program, *options.printAfterEach, options.lineOf);
  };
  // A check leaves the program as it is: its dump says so rather than print it again.
  auto checked = [&](const std::string& check) {
    if (options.printAfterEach)
      *options.printAfterEach << "// ----- IR after " << check << ": unchanged\n";
  };
  const SyncStrategy& strategy = syncStrategy(spec.sync);
  const std::string strategyName(name(spec.sync));
  SyncContext context{options.dtype, options.op, options.experimentalLL128};
  dump(spec, "sema (steps as written)");

  LoweredVariant variant{spec, {}, {}};
  auto steps = expandRepeatedSteps(spec, options.nranks, diags);
  if (!steps)
    return std::nullopt;
  variant.spec.steps = std::move(*steps);
  dump(variant.spec, "step expansion (nranks=" + std::to_string(options.nranks) + ")");

  std::optional<ir::Program> program =
      strategy.rewriteStatements(variant.spec, proof, context, diags);
  if (!program)
    return std::nullopt;
  if (options.printAfterEach && printed(*program) != printed(variant.spec))
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

  // The checks of the lowered program. Its proof and its aliases' share one budget.
  int64_t done = 0;
  auto addWork = [&] {
    if (work)
      *work += done;
  };
  if (!checkRowLength(*program, options.rowLength, diags))
    return std::nullopt;
  checked("row length check");
  // The premise's walks of the program, made by its proof, are taken up by the proofs after it.
  proof::ChunkWalks walks;
  if (options.verifyLowered) {
    const bool proved = verifyLowered(variant.spec, *program, options.nranks, options.dtype, diags,
                                      options.verifyWorkLimit, &done, options.specRuns, &walks);
    if (!proved) {
      addWork();
      return std::nullopt;
    }
    checked("lowered program proof");
    // Consecutive calls of the variant share its scratch: they must not disturb one another.
    CallRotation rotation = rotationOf(*program);
    if (options.breakRotationForTests)
      options.breakRotationForTests(rotation);
    AcrossCallsOptions acrossCalls;
    acrossCalls.chunkWalks = &walks;
    if (!proveAcrossCalls(*program, options.nranks, rotation, diags, nullptr, acrossCalls)) {
      addWork();
      return std::nullopt;
    }
    checked("proof across calls");
  }
  if (!checkSizesFit(*program, options.dtype, options.nranks, options.rowLength, diags)) {
    addWork();
    return std::nullopt;
  }
  checked("size limits check");
  if (options.proveAliases) {
    variant.aliases = proveLoweredAliases(
        variant.spec, proof, *program, options.nranks, options.dtype, diags,
        std::max<int64_t>(1, options.verifyWorkLimit - done), &done, options.specRuns, &walks);
    checked("alias proofs");
  }
  addWork();
  if (!checkUnroll(spec, *program, options.unroll, diags))
    return std::nullopt;
  checked("unroll rule");
  variant.program = std::move(*program);
  return variant;
}

std::string loweredProofText(const ir::Program& lowered, DType dtype, const ir::LineOf& lineOf) {
  std::string text;
  llvm::raw_string_ostream out(text);
  ir::printForProof(lowered, out, lineOf);
  // The proof's only use of the element type (proof::RunConfig::packetElems).
  if (lowered.uses(ir::Storage::Packets))
    out << "packets of " << 8 / sizeOf(dtype) << " elements\n";
  return out.str();
}

} // namespace collc
