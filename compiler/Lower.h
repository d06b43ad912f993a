// The lowering pipeline: one short function naming each pass in order.
#ifndef COLLC_COMPILER_LOWER_H
#define COLLC_COMPILER_LOWER_H

#include "compiler/IR.h"
#include "compiler/Verifier.h"
#include "dsl/Diagnostics.h"

#include <llvm/Support/raw_ostream.h>

namespace collc {

struct LowerOptions {
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int vectorBytes = 16;
  int unroll = 1;
  bool experimentalLL128 = false; // CompileOptions::experimentalLL128
  /// If set, the IR is printed here after every pass.
  llvm::raw_ostream* printAfterEach = nullptr;
};

/// Lowers `program` for the strategy in program.sync. False (with diagnostics) if the strategy
/// cannot synchronize this spec.
bool lower(ir::Program& program, const VerifyResult& proof, const LowerOptions& options,
           Diagnostics& diags);

} // namespace collc

#endif // COLLC_COMPILER_LOWER_H
