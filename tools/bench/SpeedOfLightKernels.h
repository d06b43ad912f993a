// The probes' kernels as CUDA text (tools/bench/SpeedOfLightKernels.cuh), on the collc_params ABI
// (prepend kernelAbiHeader() to compile them): sol_empty, sol_exchange, sol_exchange_read,
// sol_exchange_read_write, sol_copy, sol_copy_signal and sol_copy_sentinel (and
// sol_copy_sentinel_traced, the same with its trace, and sol_allreduce_sentinel, the same with a
// bf16 sum and an output).
#ifndef COLLC_TOOLS_BENCH_SPEEDOFLIGHTKERNELS_H
#define COLLC_TOOLS_BENCH_SPEEDOFLIGHTKERNELS_H

#include <string_view>

namespace collc {

std::string_view speedOfLightKernelText();

} // namespace collc

#endif // COLLC_TOOLS_BENCH_SPEEDOFLIGHTKERNELS_H
