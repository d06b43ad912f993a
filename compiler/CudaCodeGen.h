// Prints a lowered program as one self-contained CUDA source: the ABI header, a small prelude of
// device helpers specialised for the variant, and the kernel, with a comment naming the spec line
// each block comes from.
#ifndef COLLC_COMPILER_CUDACODEGEN_H
#define COLLC_COMPILER_CUDACODEGEN_H

#include "compiler/CompiledCollective.h"
#include "compiler/IR.h"

#include <functional>
#include <string>

namespace collc {

struct CodeGenTarget {
  DType dtype;
  ReduceOp op;
  int nranks;
  LaunchShape launch;
  bool watchdog = true;           // bounded polls; false only to measure what the bound costs
  bool programmaticLaunch = true; // wait for the previous kernel at entry, let the next start
  std::string specFile;
  /// Line of a spec location, for the comments that tie generated code to the spec.
  std::function<unsigned(llvm::SMLoc)> lineOf;
};

std::string kernelName(const ir::Program& program);
std::string generateCuda(const ir::Program& program, const CodeGenTarget& target);

} // namespace collc

#endif // COLLC_COMPILER_CUDACODEGEN_H
