// `collc bench`: its options and help, and the command, which hands --dispatch, --instances,
// --speed-of-light and allreduce_rmsnorm to their own files.
#ifndef COLLC_TOOLS_BENCH_BENCHCOMMAND_H
#define COLLC_TOOLS_BENCH_BENCHCOMMAND_H

#include "tools/command/Arguments.h"

namespace collc::driver {

extern const Command kBenchCommand;

int runBench(const ParsedArguments& args);

} // namespace collc::driver

#endif // COLLC_TOOLS_BENCH_BENCHCOMMAND_H
