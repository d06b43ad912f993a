#include "pipeline/CompilerErrors.h"

#include "compiler/Compile.h"

namespace collc {

Error compilerError(llvm::Error error, bool* specError) {
  if (specError)
    *specError = error.isA<SpecError>();
  if (!error)
    return Error::success();
  return makeError(llvm::toString(std::move(error)));
}

} // namespace collc
