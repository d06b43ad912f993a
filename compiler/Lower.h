// The lowering pipeline: one short function naming each pass in order.
#ifndef COLLC_COMPILER_LOWER_H
#define COLLC_COMPILER_LOWER_H

#include "compiler/IR.h"
#include "compiler/Verifier.h"

#include <llvm/Support/raw_ostream.h>

namespace collc {

struct LowerOptions {
  DType dtype = DType::F32;
  int vectorBytes = 16;
  int unroll = 1;
  /// If set, the IR is printed here after every pass.
  llvm::raw_ostream* printAfterEach = nullptr;
};

void lower(ir::Program& program, const VerifyResult& proof, const LowerOptions& options);

} // namespace collc

#endif // COLLC_COMPILER_LOWER_H
