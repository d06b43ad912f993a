// The collc subcommands that live in this folder (bench is tools/bench/BenchCommand.h). Each
// returns the process exit status (tools/command/CommandSupport.h).
#ifndef COLLC_TOOLS_COLLC_COMMANDS_H
#define COLLC_TOOLS_COLLC_COMMANDS_H

#include "tools/command/CommandSupport.h"

namespace collc::driver {

extern const Command kCheckCommand;
extern const Command kEmitCommand;
extern const Command kRunCommand;
extern const Command kTuneCommand;

int runCheck(const ParsedArguments& args);
int runEmit(const ParsedArguments& args);
int runRun(const ParsedArguments& args);
int runTune(const ParsedArguments& args);

} // namespace collc::driver

#endif // COLLC_TOOLS_COLLC_COMMANDS_H
