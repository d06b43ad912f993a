// The unfused baseline of the fused AllReduce + residual add + RMSNorm: a plain CUDA kernel that
// takes an AllReduce's result and does the residual add and the RMSNorm in a second pass, as an
// inference engine without the fusion does after its AllReduce. `collc bench allreduce_rmsnorm`
// times allreduce_oneshot followed by this kernel against the fused kernel. Same ABI as collc's
// kernels (collc_params): in = the AllReduce's output, out = the norm, aux = the fused spec's aux
// buffers in its order, count = elements; one block per row (grid-stride over rows), 16-byte
// vectors, the row held in registers between the sum of squares and the scaling.
#ifndef COLLC_TOOLS_BENCH_PLAINRMSNORM_H
#define COLLC_TOOLS_BENCH_PLAINRMSNORM_H

#include "abi/CompiledCollective.h"
#include "runtime/Status.h"

#include <cstdint>
#include <string>

namespace collc {

namespace ir {
struct Program;
}

struct PlainRmsNormKernel {
  std::string name;   // extern "C" entry point
  std::string source; // self-contained CUDA (the ABI header pasted in), no includes
  int threads = 0;    // block size to launch with
};

/// The kernel for the fused variant `fused` (its type, row length, eps) of `spec` (whose add +
/// RMSNorm epilogue gives the aux order: compiler/RowEpilogue.h). Refuses a spec without that
/// epilogue, or a row length that 16-byte vectors do not divide or that needs more than 8 vectors
/// per thread of a 1024-thread block.
Expected<PlainRmsNormKernel> plainRmsNormKernel(const CompiledCollective& fused,
                                                const ir::Program& spec);

} // namespace collc

#endif // COLLC_TOOLS_BENCH_PLAINRMSNORM_H
