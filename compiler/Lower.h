// The lowering of one variant: one linear list, from the checked spec as written to the program
// the printer prints, naming each step in order (step expansion, the strategy's rewrite, every
// pass, then the checks of the lowered program). `collc emit --emit=ir --print-ir-after-all`
// shows the program after each of them.
#ifndef COLLC_COMPILER_LOWER_H
#define COLLC_COMPILER_LOWER_H

#include "compiler/Verifier.h"
#include "compiler/ir/IR.h"
#include "compiler/verify/AcrossCalls.h"
#include "dsl/Diagnostics.h"
#include "dsl/LibraryLocal.h"

#include <functional>
#include <llvm/Support/raw_ostream.h>
#include <optional>
#include <string>

namespace collc {

struct LowerOptions {
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int vectorBytes = 16;
  int unroll = 1;
  int threads = 512;
  int nranks = 2;
  int64_t rowLength = 0;
  bool experimentalLL128 = false;                           // CompileOptions::experimentalLL128
  std::function<void(CallRotation&)> breakRotationForTests; // CompileOptions'
  /// Work the proof of the lowered program and of its aliases may take, together.
  int64_t verifyWorkLimit = kDefaultVerifyWorkLimit;
  /// false skips the proof of the lowered program: only where the same program was proved already.
  bool verifyLowered = true;
  /// Also prove which pairs of buffers the lowered program allows as one memory.
  bool proveAliases = false;
  /// If set, the spec's runs the lowered program's proofs compare with are kept there for the next
  /// variant of the same spec (verify/Simulation.h).
  proof::SpecRuns* specRuns = nullptr;
  /// If set, the IR is printed here after every step of the list.
  llvm::raw_ostream* printAfterEach = nullptr;
  ir::LineOf lineOf;
};

/// A variant, lowered.
struct LoweredVariant {
  ir::Program spec;       // the checked spec, its steps expanded for the variant's rank count
  ir::Program program;    // what the printer prints
  LoweredAliases aliases; // with LowerOptions::proveAliases
};

/// `spec` (checked and verified, its steps as written, program.sync the variant's strategy)
/// lowered for the variant; nullopt (with diagnostics) where it cannot be: the strategy cannot
/// synchronize it, or the lowered program breaks a rule. `work`, if given, grows by the work of
/// the lowered program's proofs.
std::optional<LoweredVariant> lower(const ir::Program& spec, const VerifyResult& proof,
                                    const LowerOptions& options, Diagnostics& diags,
                                    int64_t* work = nullptr);

/// What a lowered program's proof (verifyLowered, proveAcrossCalls) reads of the program and its
/// element type: the program as ir::printForProof prints it (no vector widths or unrolls), and the
/// elements of an LL packet where a buffer holds packets; with `lineOf`, each statement's spec
/// line too. Two lowered programs of one spec and rank count with the same text have the same
/// proof.
COLLC_LIBRARY_LOCAL std::string loweredProofText(const ir::Program& lowered, DType dtype,
                                                 const ir::LineOf& lineOf = {});

} // namespace collc

#endif // COLLC_COMPILER_LOWER_H
