// `collc bench allreduce_rmsnorm`: the fused AllReduce + residual add + RMSNorm against
// allreduce_oneshot followed by a plain RMSNorm kernel (tools/bench/FusedNormBench.h).
#ifndef COLLC_TOOLS_BENCH_FUSEDNORMBENCHCOMMAND_H
#define COLLC_TOOLS_BENCH_FUSEDNORMBENCHCOMMAND_H

#include "tools/command/Arguments.h"

namespace collc::driver {

/// The bench spec the fused-vs-unfused comparison takes over from the size sweep.
inline constexpr const char* kFusedNormBenchSpec = "allreduce_rmsnorm";

/// Runs the comparison for 1, 2, 4, ..., 128 tokens of --hidden elements; returns the exit status.
int runFusedNormBench(const ParsedArguments& args);

} // namespace collc::driver

#endif // COLLC_TOOLS_BENCH_FUSEDNORMBENCHCOMMAND_H
