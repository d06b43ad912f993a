// Prints a lowered program as one self-contained CUDA source: the ABI header, a small prelude of
// device helpers specialised for the variant, and the kernel, with a comment naming the spec line
// each block comes from.
#ifndef COLLC_COMPILER_CUDACODEGEN_H
#define COLLC_COMPILER_CUDACODEGEN_H

#include "abi/CompiledCollective.h"
#include "compiler/ir/IR.h"

#include <functional>
#include <string>
#include <string_view>

namespace collc {

struct CodeGenTarget {
  DType dtype;
  ReduceOp op;
  int nranks;
  int root = 0;          // broadcast, reduce: the root rank, printed as the constant kRoot
  int64_t rowLength = 0; // `rows NAME`: the row length, printed as the constant kHidden
  float eps = 1e-6f;     // rmsnorm's epsilon, printed as the constant kEps
  LaunchShape launch;
  bool watchdog = true;           // bounded polls; false only to measure what the bound costs
  bool programmaticLaunch = true; // wait for the previous kernel at entry, let the next start
  /// Also print the entry point <kernel>_ranks that runs every rank of a one-GPU world in one
  /// launch (abi/collc_rank_launch.h); the kernel itself is printed exactly as without it.
  bool rankLaunchEntry = false;
  std::string specFile;
  /// Line of a spec location, for the comments that tie generated code to the spec.
  std::function<unsigned(llvm::SMLoc)> lineOf;
};

std::string kernelName(const ir::Program& program);
/// The text of abi/collc_abi.h (embedded at build time), which every generated kernel starts
/// with; for hand-written kernels that take collc_params too (probes, tests).
std::string_view kernelAbiHeader();
/// The text of abi/collc_rank_launch.h, printed before a kernel's <kernel>_ranks entry point.
std::string_view kernelRankLaunchHeader();
std::string generateCuda(const ir::Program& program, const CodeGenTarget& target);

} // namespace collc

#endif // COLLC_COMPILER_CUDACODEGEN_H
