// What the commands that run on GPUs (`run`, `bench`) share, so that both take the same options
// and find their ranks the same way: in one process driving the GPUs, as one rank of a world that
// a launcher (--procs N, torchrun, mpirun) started, or as that launcher itself.
#ifndef COLLC_TOOLS_COMMAND_GPUCOMMAND_H
#define COLLC_TOOLS_COMMAND_GPUCOMMAND_H

#include "abi/CompiledCollective.h"
#include "compiler/Compile.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Jit.h"
#include "runtime/LaunchEnvironment.h"
#include "tools/command/Arguments.h"
#include "tools/harness/RunHarness.h"

#include <functional>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>
#include <optional>
#include <string>
#include <vector>

namespace collc::driver {

/// --graph-ops, --replays, --timeout, --seed.
std::vector<OptionSpec> timingOptions();
/// Fills run.graphOps, run.replays, run.seed and `timeoutSeconds` (the watchdog's bound) from
/// the timing options; false with `error` set on a bad value.
bool parseTimingOptions(const ParsedArguments& args, RunOptions& run, double& timeoutSeconds,
                        std::string& error);

/// The variant and timing options of a bench mode that measures in one process (--dispatch,
/// --instances): bf16 unless --dtype says otherwise; false with `error` set on a bad value.
bool parseBenchVariant(const ParsedArguments& args, CompileOptions& compile, RunOptions& run,
                       double& timeoutSeconds, std::string& error);

/// --procs, --procs-timeout.
std::vector<OptionSpec> procsOptions();

/// How this process takes part in a GPU command.
struct WorldRole {
  enum Kind {
    OneProcess, // drives every rank itself (a LocalWorld)
    Rank,       // one rank of a world a launcher started (a ProcessWorld); env says which
    Launcher    // --procs N: starts N copies of this command and waits for them
  } kind = OneProcess;
  LaunchEnvironment env;
};

/// Decides the role from --procs and the launcher variables. Errors: malformed launcher
/// variables, --procs-timeout without --procs.
Expected<WorldRole> chooseWorldRole(const ParsedArguments& args);

/// The devices of a one-process world: the first `nranks` GPUs; without --ranks (`ranksGiven`
/// false) `nranks` becomes every GPU, at least 2. On failure says why as "collc COMMAND: ...",
/// followed by `noGpuHint` where there is no GPU at all, and returns the exit status; kSuccess
/// otherwise.
int chooseLocalDevices(llvm::StringRef command, llvm::StringRef noGpuHint, bool ranksGiven,
                       int& nranks, std::vector<int>& devices);

/// --procs N (the Launcher role): checks the option against --ranks (`ranks`, when given) and
/// the environment, runs `precheck(N)` (what would fail in every child fails once here: a wrong
/// spec), checks the GPU count, then starts N copies of this command line, one rank each, and
/// waits for them. Returns the exit status: a child's own user error stays 1, a crash or a
/// timeout is collc's (2).
int launchProcs(const ParsedArguments& args, llvm::StringRef command, std::optional<int> ranks,
                const std::function<int(int processes)>& precheck);

/// The error with "rank R: " in front, for a process of a process-per-GPU world (under an
/// external launcher nothing else says which rank printed it).
Error onRank(int rank, Error err);

/// NVRTC to a cubin for `device`'s architecture (sm_90 where it cannot be asked), through the
/// disk cache.
Expected<JitResult> compileForDevice(const CompiledCollective& compiled, int device);

} // namespace collc::driver

#endif // COLLC_TOOLS_COMMAND_GPUCOMMAND_H
