// The compiler's errors as the runtime's. libcollc_compiler.so keeps its copy of LLVM to itself, so
// a program that calls the compiler's C++ API (compiler/Compile.h) with LLVM of its own cannot
// read an llvm::Error the library made: LLVM tells error classes apart by the addresses of
// statics that each copy has its own of. Every llvm::Error or llvm::Expected the compiler returns
// goes through here, straight from the call: fromCompiler(compileCollective(...)).
#ifndef COLLC_PIPELINE_COMPILERERRORS_H
#define COLLC_PIPELINE_COMPILERERRORS_H

#include "runtime/Status.h"

#include <llvm/Support/Error.h>
#include <utility>

namespace collc {

/// `error`, made and read by the compiler's LLVM, as an Error with the same message. `specError`,
/// where given, says whether the spec was at fault (a SpecError: its diagnostics were printed and
/// the message counts them) rather than collc.
Error compilerError(llvm::Error error, bool* specError = nullptr);

/// The value of `result`, or its error as compilerError makes it.
template <class T> Expected<T> fromCompiler(llvm::Expected<T> result, bool* specError = nullptr) {
  if (!result)
    return compilerError(result.takeError(), specError);
  if (specError)
    *specError = false;
  return std::move(*result);
}

} // namespace collc

#endif // COLLC_PIPELINE_COMPILERERRORS_H
