// `collc bench --dispatch`: the dispatched collective against every fixed variant of the tuning
// table (see DispatchBench.cpp and docs/tuning.md).
#ifndef COLLC_TOOLS_BENCH_DISPATCHBENCH_H
#define COLLC_TOOLS_BENCH_DISPATCHBENCH_H

#include "tools/command/Arguments.h"

#include <vector>

namespace collc::driver {

/// The options `collc bench` adds for it: --dispatch and --table.
std::vector<OptionSpec> dispatchBenchOptions();

/// Runs it; the exit status: 0 every size within 3% of the best fixed variant and the sum over
/// the sizes below every fixed variant's; 1 a user or environment error; 2 a size over 3%, a sum
/// not below, or a wrong or failed result.
int runDispatchBench(const ParsedArguments& args);

} // namespace collc::driver

#endif // COLLC_TOOLS_BENCH_DISPATCHBENCH_H
