// `collc bench SPEC --instances K`: one variant on K instances of itself, to see how much where an
// instance lands in memory moves its time (see InstanceSpreadBench.cpp and docs/tuning.md).
#ifndef COLLC_TOOLS_BENCH_INSTANCESPREADBENCH_H
#define COLLC_TOOLS_BENCH_INSTANCESPREADBENCH_H

#include "tools/command/Arguments.h"

#include <vector>

namespace collc::driver {

/// The option `collc bench` adds for it: --instances.
std::vector<OptionSpec> instanceSpreadBenchOptions();

/// Runs it; the exit status: 0 every instance correct at every size; 1 a user or environment
/// error; 2 a wrong or failed result.
int runInstanceSpreadBench(const ParsedArguments& args);

} // namespace collc::driver

#endif // COLLC_TOOLS_BENCH_INSTANCESPREADBENCH_H
