// A library that exports a function with an LLVM type in its signature: what the check of
// NoLlvmInExports.cmake must refuse (exports_with_llvm_types_are_caught).
#include <llvm/Support/SMLoc.h>

const char* pointerOf(llvm::SMLoc loc) {
  return loc.getPointer();
}
