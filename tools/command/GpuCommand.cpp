#include "tools/command/GpuCommand.h"

#include "abi/collc_abi.h"
#include "runtime/Devices.h"
#include "runtime/Watchdog.h"
#include "tools/command/CommandSupport.h"
#include "tools/launch/ChildEnvironment.h"
#include "tools/launch/Launcher.h"

#include <cstdlib>
#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>
#include <utility>

namespace collc::driver {

namespace {

/// A number of seconds in (0, `most`]; nullopt otherwise.
std::optional<double> parseSeconds(const std::string& text, double most) {
  char* end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(seconds > 0) || seconds > most)
    return std::nullopt;
  return seconds;
}

} // namespace

std::vector<OptionSpec> timingOptions() {
  return {{"graph-ops", "K", "calls captured in the timed graph (default 50)"},
          {"replays", "K", "timed graph replays, median reported (default 7)"},
          {"timeout", "SECONDS",
           fmt::format("watchdog bound of every wait in the kernel (default {:g}; "
                       "COLLC_WATCHDOG_TIMEOUT sets the default)",
                       defaultWatchdogTimeoutNs() / 1e9)},
          {"seed", "N", "random seed for the inputs (default 1)"}};
}

bool parseBenchVariant(const ParsedArguments& args, CompileOptions& compile, RunOptions& run,
                       double& timeoutSeconds, std::string& error) {
  compile.dtype = DType::BF16;
  return parseVariant(args, compile, error) && parseTimingOptions(args, run, timeoutSeconds, error);
}

bool parseTimingOptions(const ParsedArguments& args, RunOptions& run, double& timeoutSeconds,
                        std::string& error) {
  auto positiveInt = [&](const char* name, int& out) {
    if (auto text = args.get(name)) {
      auto value = parseSize(*text);
      if (!value || *value == 0 || *value > 100000)
        return false;
      out = int(*value);
    }
    return true;
  };
  if (!positiveInt("graph-ops", run.graphOps) || !positiveInt("replays", run.replays))
    return error = "--graph-ops and --replays take a positive number", false;
  if (auto text = args.get("seed")) {
    auto value = parseSize(*text);
    if (!value)
      return error = "--seed takes a number", false;
    run.seed = *value;
  }
  if (auto text = args.get("timeout")) {
    auto seconds = parseSeconds(*text, 3600);
    if (!seconds)
      return error = "--timeout takes a number of seconds in (0, 3600]", false;
    timeoutSeconds = *seconds;
  }
  return true;
}

std::vector<OptionSpec> procsOptions() {
  return {{"procs", "N", "run one process per GPU: start N processes, one rank each"},
          {"procs-timeout", "SECONDS",
           "with --procs: stop every process after this long (default 900)"}};
}

Expected<WorldRole> chooseWorldRole(const ParsedArguments& args) {
  WorldRole role;
  // --procs makes this process the launcher, unless it is one of the children it started.
  if (args.has("procs") && !startedByCollcLauncher(processEnvironment(), int(getppid()))) {
    role.kind = WorldRole::Launcher;
    return role;
  }
  auto env = parseLaunchEnvironment(processEnvironment());
  if (!env)
    return env.takeError();
  if (*env) {
    role.kind = WorldRole::Rank;
    role.env = **env;
    return role;
  }
  if (args.has("procs-timeout"))
    return makeError("--procs-timeout goes with --procs");
  return role;
}

int chooseLocalDevices(llvm::StringRef command, llvm::StringRef noGpuHint, bool ranksGiven,
                       int& nranks, std::vector<int>& devices) {
  auto gpus = gpuCount();
  if (!gpus) {
    llvm::errs() << "collc " << command << ": " << toString(gpus.takeError()) << "\n"
                 << noGpuHint << "\n";
    return kUserError;
  }
  if (!ranksGiven)
    nranks = std::max(2, *gpus);
  if (nranks > *gpus)
    return usageError(
        fmt::format("--ranks={} needs {} GPUs; this machine has {}", nranks, nranks, *gpus));
  devices.clear();
  for (int r = 0; r < nranks; ++r)
    devices.push_back(r);
  return kSuccess;
}

int launchProcs(const ParsedArguments& args, llvm::StringRef command, std::optional<int> ranks,
                const std::function<int(int processes)>& precheck) {
  auto procs = parseSize(*args.get("procs"));
  if (!procs || *procs < 1 || *procs > COLLC_MAX_RANKS)
    return usageError(
        fmt::format("--procs takes a number of processes from 1 to {}", COLLC_MAX_RANKS));
  const int n = int(*procs);
  if (ranks && *ranks != n)
    return usageError(
        fmt::format("--ranks={} and --procs={} disagree; --procs alone is enough", *ranks, n));
  if (auto env = parseLaunchEnvironment(processEnvironment()); !env)
    return reportError(env.takeError());
  else if (*env)
    return usageError("--procs starts its own processes, but this one was started by a "
                      "launcher (" +
                      (*env)->source + " is set): leave --procs out");
  double timeoutSeconds = 900;
  if (auto text = args.get("procs-timeout")) {
    auto seconds = parseSeconds(*text, 1e9);
    if (!seconds)
      return usageError("--procs-timeout takes a positive number of seconds");
    timeoutSeconds = *seconds;
  }
  if (int status = precheck(n); status != kSuccess)
    return status;
  auto gpus = gpuCount();
  if (!gpus) {
    llvm::errs() << "collc " << command << ": " << toString(gpus.takeError()) << "\n";
    return kUserError;
  }
  // COLLC_SHARE_GPU=1, which the children inherit, lets their ranks share GPUs (ProcessWorld.h).
  const std::optional<std::string> share = processEnvironment()("COLLC_SHARE_GPU");
  if (*gpus < n && !(share && *share == "1"))
    return usageError(
        fmt::format("--procs={} needs {} GPUs; this machine has {} (COLLC_SHARE_GPU=1 "
                    "lets ranks share them, for correctness only)",
                    n, n, *gpus));

  auto commandLine = thisCommandLine();
  if (!commandLine)
    return reportError(commandLine.takeError());
  WorldLaunch launch;
  launch.processes = n;
  launch.args.assign(commandLine->begin() + 1, commandLine->end());
  launch.timeoutSeconds = timeoutSeconds;
  auto outcome = launchWorld(launch, prefixedOutputSink());
  if (!outcome)
    return reportError(outcome.takeError());
  if (outcome->exitCode == 0)
    return kSuccess;
  llvm::errs() << "collc " << command << ": " << outcome->failure << "\n";
  return outcome->exitCode == kUserError ? kUserError : kInternalError;
}

Error onRank(int rank, Error err) {
  if (!err)
    return err;
  std::string message = toString(std::move(err));
  if (message.rfind("rank ", 0) == 0)
    return makeError(message);
  return makeError("rank " + std::to_string(rank) + ": " + message);
}

Expected<JitResult> compileForDevice(const CompiledCollective& compiled, int device) {
  JitOptions jit;
  if (std::string arch = gpuArch(device); !arch.empty()) {
    jit.arch = arch;
    jit.familyTargetWhereUsed = true;
  }
  return compileCuda(compiled.cudaSource, compiled.kernelName, JitOutput::Cubin, jit);
}

} // namespace collc::driver
