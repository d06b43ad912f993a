// `collc bench --speed-of-light`: the floors this machine puts under any collective (an empty
// kernel, a flag exchange, copying each size to the peers), measured the way collc's kernels are
// (tools/bench/SpeedOfLight.h), so that a collective's time reads against them.
#ifndef COLLC_TOOLS_BENCH_SPEEDOFLIGHTBENCH_H
#define COLLC_TOOLS_BENCH_SPEEDOFLIGHTBENCH_H

#include "tools/command/Arguments.h"

#include <vector>

namespace collc::driver {

/// The option `collc bench` adds for it: --speed-of-light.
std::vector<OptionSpec> speedOfLightBenchOptions();

/// Runs it; the exit status: 0 measured; 1 a user or environment error (no GPUs, a probe that
/// timed out).
int runSpeedOfLightBench(const ParsedArguments& args);

} // namespace collc::driver

#endif // COLLC_TOOLS_BENCH_SPEEDOFLIGHTBENCH_H
