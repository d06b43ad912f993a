// The lowering pipeline: one short function naming each pass in order, from the verified spec
// (steps expanded for the variant's rank count) to the program the printer prints.
#ifndef COLLC_COMPILER_LOWER_H
#define COLLC_COMPILER_LOWER_H

#include "compiler/Verifier.h"
#include "compiler/ir/IR.h"
#include "dsl/Diagnostics.h"

#include <llvm/Support/raw_ostream.h>
#include <optional>

namespace collc {

struct LowerOptions {
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int vectorBytes = 16;
  int unroll = 1;
  int threads = 512;
  int nranks = 2;
  int64_t rowLength = 0;
  bool experimentalLL128 = false; // CompileOptions::experimentalLL128
  /// If set, the IR is printed here after every pass.
  llvm::raw_ostream* printAfterEach = nullptr;
  ir::LineOf lineOf;
};

/// `program` lowered for the strategy in program.sync; nullopt (with diagnostics) if the strategy
/// cannot synchronize this spec.
std::optional<ir::Program> lower(const ir::Program& program, const VerifyResult& proof,
                                 const LowerOptions& options, Diagnostics& diags);

} // namespace collc

#endif // COLLC_COMPILER_LOWER_H
