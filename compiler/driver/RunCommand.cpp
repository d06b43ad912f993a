#include "Commands.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "runtime/LaunchEnvironment.h"
#include "runtime/Launcher.h"
#include "runtime/LocalWorld.h"
#include "runtime/NcclBaseline.h"
#include "runtime/ProcessWorld.h"
#include "runtime/RunHarness.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

namespace collc::driver {

const Command kRunCommand{
    "run",
    "run SPEC [--ranks=R | --procs=N] [--dtype=T] [--op=O] [--count=N] [options]",
    "Run one variant on R GPUs of this process (or one process per GPU): fresh random inputs,\n"
    "every element checked against a float64 host reference, then the per-operation latency\n"
    "measured in a CUDA graph.",
    "Timing: a graph of --graph-ops back-to-back calls per rank, replayed --replays times; the\n"
    "median replay over the slowest rank, divided by the calls, is the per-op latency.\n"
    "With --nccl, NCCL's AllReduce on the same GPUs, sizes and type is checked and timed the same\n"
    "way, with cudaMalloc buffers and (one process) ncclMemAlloc buffers registered as symmetric\n"
    "windows; 'vs best' is the better NCCL time divided by collc's (above 1: collc is faster).\n"
    "\n"
    "One process per GPU: --procs N starts N copies of this command, rank r on GPU r, which find\n"
    "each other through NCCL (a file rendezvous in a private temporary directory); rank 0 prints\n"
    "the results, other ranks' lines come prefixed with [rank R]. A rank that fails stops the\n"
    "others, and the launcher says which rank and how it ended. Under a launcher of your own\n"
    "(torchrun, mpirun) leave --procs out: each process reads RANK, WORLD_SIZE, LOCAL_RANK and\n"
    "COLLC_RENDEZVOUS (file:/PATH or tcp:HOST:PORT, where rank 0 leaves the NCCL id). When the\n"
    "ranks are not all on one node with peer access (or COLLC_TREAT_EACH_GPU_AS_NODE=1 /\n"
    "COLLC_NODE_SIZE=K says so) the collective is handed wholly to NCCL, and the log says so.\n"
    "Without a GPU this says so and exits with status 1; 'collc emit --emit=cubin' still works.\n",
    [] {
      std::vector<OptionSpec> options = {
          {"count", "N", "elements per rank (K/M/G suffixes allowed; default 262144)"},
          {"graph-ops", "K", "calls captured in the timed graph (default 50)"},
          {"replays", "K", "timed graph replays, median reported (default 7)"},
          {"no-time", "", "check correctness only"},
          {"timeout", "SECONDS", "watchdog bound of every wait in the kernel (default 5)"},
          {"seed", "N", "random seed for the inputs (default 1)"},
          {"nccl", "", "also time NCCL's AllReduce in this run"},
          {"procs", "N", "run one process per GPU: start N processes, one rank each"},
          {"procs-timeout", "SECONDS",
           "with --procs: stop every process after this long (default 900)"},
          {"help", "", "show this help"}};
      auto variant = variantOptions();
      options.insert(options.end(), variant.begin(), variant.end());
      return options;
    }(),
    1};

namespace {

/// Everything `collc run` takes from its options, parsed once for every mode.
struct RunSettings {
  CompileOptions compile;
  bool ranksGiven = false;
  RunOptions run;
  double timeoutSeconds = 5;
  bool nccl = false;
};

/// Parses the options that do not depend on the machine. Returns false with `error` set.
bool parseSettings(const ParsedArguments& args, RunSettings& settings, std::string& error) {
  settings.ranksGiven = args.has("ranks");
  if (!parseVariant(args, settings.compile, error))
    return false;
  settings.run.count = 262144;
  if (auto text = args.get("count")) {
    auto value = parseSize(*text);
    if (!value || *value == 0)
      return error = "--count must be a positive number of elements, e.g. 4096 or 1M", false;
    settings.run.count = *value;
  }
  settings.run.time = !args.has("no-time");
  auto positiveInt = [&](const char* name, int& out) {
    if (auto text = args.get(name)) {
      auto value = parseSize(*text);
      if (!value || *value == 0 || *value > 100000)
        return false;
      out = int(*value);
    }
    return true;
  };
  if (!positiveInt("graph-ops", settings.run.graphOps) ||
      !positiveInt("replays", settings.run.replays))
    return error = "--graph-ops and --replays take a positive number", false;
  if (auto text = args.get("seed")) {
    auto value = parseSize(*text);
    if (!value)
      return error = "--seed takes a number", false;
    settings.run.seed = *value;
  }
  if (auto text = args.get("timeout")) {
    char* end = nullptr;
    settings.timeoutSeconds = std::strtod(text->c_str(), &end);
    if (end == text->c_str() || *end != '\0' || !(settings.timeoutSeconds > 0) ||
        settings.timeoutSeconds > 3600)
      return error = "--timeout takes a number of seconds in (0, 3600]", false;
  }
  settings.nccl = args.has("nccl");
  return true;
}

/// Bytes of symmetric heap per rank that `compiled` needs for calls of `count` elements: every
/// copy of its scratch (256-byte aligned) and its flags, with room to spare.
uint64_t heapBytesFor(const CompiledCollective& compiled, uint64_t count) {
  uint64_t copyBytes = 0;
  for (const auto& scratch : compiled.scratch)
    copyBytes += scratch.bytes(count) + 256;
  const uint64_t copies = uint64_t(std::max(1, compiled.scratchCopies));
  return copies * (copyBytes + 256) + compiled.flagsBytes() + 4096;
}

/// The results table `collc run` prints, and its header.
void printTable(const RunSettings& settings, int nranks, double usPerOp,
                const std::string& ncclPlain, const std::string& ncclSymmetric,
                const std::string& ratio) {
  const uint64_t count = settings.run.count;
  const uint64_t elementBytes = sizeOf(settings.compile.dtype);
  double bytes = double(count * elementBytes);
  double algbw = bytes / (usPerOp * 1e3);
  double busbw = algbw * 2.0 * (nranks - 1) / nranks;
  llvm::outs() << fmt::format("{:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}\n", "bytes",
                              "count", "us/op", "algbw", "busbw", "nccl_us", "nccl_sym", "vs_best");
  llvm::outs() << fmt::format("{:>12} {:>12} {:>10.2f} {:>10.2f} {:>10.2f} {:>10} {:>10} {:>8}\n",
                              count * elementBytes, count, usPerOp, algbw, busbw, ncclPlain,
                              ncclSymmetric, ratio);
}

/// The error with "rank R: " in front, for a process of a process-per-GPU world (under an
/// external launcher nothing else says which rank printed it).
llvm::Error onRank(int rank, llvm::Error err) {
  if (!err)
    return err;
  std::string message = llvm::toString(std::move(err));
  if (message.rfind("rank ", 0) == 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "rank " + std::to_string(rank) + ": " + message);
}

/// One process drives every rank: the LocalWorld path.
int runLocal(RunSettings& settings, const std::string& specName) {
  CompileOptions& options = settings.compile;
  auto gpus = gpuCount();
  if (!gpus) {
    llvm::errs() << "collc run: " << llvm::toString(gpus.takeError())
                 << "\n(check, emit and the JIT to cubin work without one: collc emit SPEC "
                    "--emit=cubin -o FILE)\n";
    return kUserError;
  }
  if (!settings.ranksGiven)
    options.nranks = std::max(2, *gpus);
  if (options.nranks > *gpus)
    return usageError(fmt::format("--ranks={} needs {} GPUs; this machine has {}", options.nranks,
                                  options.nranks, *gpus));
  const uint64_t count = settings.run.count;
  auto spec = loadSpec(specName);
  if (!spec)
    return reportError(spec.takeError());
  auto compiled = compileCollective(*spec, options, llvm::errs());
  if (!compiled)
    return reportError(compiled.takeError());
  JitOptions jit;
  jit.arch = gpuArch(0);
  auto image = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
  if (!image)
    return reportError(image.takeError());

  std::vector<int> devices;
  for (int r = 0; r < options.nranks; ++r)
    devices.push_back(r);
  const uint64_t elementBytes = sizeOf(options.dtype);
  auto world = LocalWorld::create(devices, heapBytesFor(*compiled, count));
  if (!world)
    return reportError(world.takeError());
  auto instance = CollectiveInstance::create(**world, *compiled, image->image, count,
                                             uint64_t(settings.timeoutSeconds * 1e9));
  if (!instance)
    return reportError(instance.takeError());
  llvm::errs() << fmt::format("running {} ({} {}, {} ranks, {} blocks x {} threads) on {} x {}, "
                              "{} elements ({} bytes) per rank...\n",
                              compiled->specName, name(options.dtype), name(options.op),
                              options.nranks, compiled->launch.blocks, compiled->launch.threads,
                              options.nranks, gpuName(0), count, count * elementBytes);
  auto report = runAndCheck(**world, **instance, *compiled, settings.run);
  if (!report)
    return reportError(report.takeError());
  if (!report->correct) {
    llvm::errs() << "collc run: WRONG RESULT\n" << report->firstMismatches << "\n";
    return kInternalError;
  }
  llvm::outs() << fmt::format("correct: {} calls checked on every rank against a float64 "
                              "reference\n",
                              report->checkedCalls);
  if (!settings.run.time)
    return kSuccess;
  // NCCL in the same run, on the same GPUs, after collc's world is gone (it owns their memory).
  std::string ncclPlain = "-", ncclSymmetric = "-", ratio = "-";
  if (settings.nccl) {
    instance->reset();
    world->reset();
    auto nccl = NcclBaseline::create(devices, count * elementBytes);
    if (!nccl)
      return reportError(nccl.takeError());
    double best = 0;
    for (bool symmetric : {false, true}) {
      auto timing = (*nccl)->measureAllReduce(count, options.dtype, options.op, symmetric);
      if (!timing) {
        llvm::errs() << "collc run: NCCL " << (symmetric ? "symmetric" : "plain")
                     << " measurement failed: " << llvm::toString(timing.takeError()) << "\n";
        continue;
      }
      if (!timing->correct) {
        llvm::errs() << "collc run: NCCL gave a wrong result: " << timing->firstMismatches << "\n";
        continue;
      }
      (symmetric ? ncclSymmetric : ncclPlain) = fmt::format("{:.2f}", timing->usPerOp);
      best = best == 0 ? timing->usPerOp : std::min(best, timing->usPerOp);
    }
    if (best > 0)
      ratio = fmt::format("{:.2f}", best / report->usPerOp);
  }
  printTable(settings, options.nranks, report->usPerOp, ncclPlain, ncclSymmetric, ratio);
  return kSuccess;
}

/// One rank of a process-per-GPU world, started by --procs or by an external launcher. Every
/// process makes the same calls in the same order; rank 0 prints the results.
int runProcess(RunSettings& settings, const std::string& specName, const LaunchEnvironment& env) {
  CompileOptions& options = settings.compile;
  if (settings.ranksGiven && options.nranks != env.worldSize)
    return usageError(fmt::format("--ranks={} but the launcher started {} processes ({}={})",
                                  options.nranks, env.worldSize, env.source, env.worldSize));
  options.nranks = env.worldSize;
  const int rank = env.rank;
  const uint64_t count = settings.run.count;
  // The spec is compiled before the world exists: its scratch sizes the heap.
  auto spec = loadSpec(specName);
  if (!spec)
    return reportError(spec.takeError());
  auto compiled = compileCollective(*spec, options, llvm::errs());
  if (!compiled)
    return reportError(compiled.takeError());
  ProcessWorldOptions worldOptions;
  worldOptions.heapBytes = heapBytesFor(*compiled, count);
  auto world = ProcessWorld::fromEnvironment(worldOptions);
  if (!world)
    return reportError(world.takeError());
  JitOptions jit;
  jit.arch = gpuArch((*world)->device(rank));
  auto image = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
  if (!image)
    return reportError(onRank(rank, image.takeError()));
  auto instance = CollectiveInstance::create(**world, *compiled, image->image, count,
                                             uint64_t(settings.timeoutSeconds * 1e9));
  if (!instance)
    return reportError(onRank(rank, instance.takeError()));
  const uint64_t elementBytes = sizeOf(options.dtype);
  if (rank == 0)
    llvm::errs() << fmt::format("running {} ({} {}, {} ranks, {} blocks x {} threads) on {} "
                                "processes, one GPU each ({}), {} elements ({} bytes) per rank: "
                                "{}...\n",
                                compiled->specName, name(options.dtype), name(options.op),
                                options.nranks, compiled->launch.blocks, compiled->launch.threads,
                                options.nranks, gpuName((*world)->device(rank)), count,
                                count * elementBytes, (*instance)->engineDescription());
  auto report = runAndCheck(**world, **instance, *compiled, settings.run);
  if (!report)
    return reportError(onRank(rank, report.takeError()));
  if (!report->correct) {
    llvm::errs() << "collc run: rank " << rank << ": WRONG RESULT\n"
                 << report->firstMismatches << "\n";
    return kInternalError;
  }
  if (rank == 0)
    llvm::outs() << fmt::format("correct: {} calls checked on every rank against a float64 "
                                "reference\n",
                                report->checkedCalls);
  if (!settings.run.time)
    return kSuccess;
  // NCCL on the world's communicator, in the same harness: cudaMalloc buffers, one graph per
  // rank, the same inputs and checks. (Symmetric windows are measured in one-process mode.)
  std::string ncclPlain = "-", ratio = "-";
  if (settings.nccl) {
    auto ncclInstance = CollectiveInstance::createNccl(**world, *compiled, count);
    if (!ncclInstance)
      return reportError(onRank(rank, ncclInstance.takeError()));
    auto timing = runAndCheck(**world, **ncclInstance, *compiled, settings.run);
    if (!timing)
      return reportError(onRank(rank, timing.takeError()));
    if (!timing->correct) {
      llvm::errs() << "collc run: rank " << rank
                   << ": NCCL gave a wrong result: " << timing->firstMismatches << "\n";
    } else {
      ncclPlain = fmt::format("{:.2f}", timing->usPerOp);
      ratio = fmt::format("{:.2f}", timing->usPerOp / report->usPerOp);
    }
  }
  if (rank == 0)
    printTable(settings, options.nranks, report->usPerOp, ncclPlain, "-", ratio);
  return kSuccess;
}

/// --procs N: starts N copies of this very command line, one rank each, and waits for them.
int launchProcs(const ParsedArguments& args, const RunSettings& settings,
                const std::string& specName) {
  auto procs = parseSize(*args.get("procs"));
  if (!procs || *procs < 1 || *procs > COLLC_MAX_RANKS)
    return usageError(
        fmt::format("--procs takes a number of processes from 1 to {}", COLLC_MAX_RANKS));
  const int n = int(*procs);
  if (settings.ranksGiven && settings.compile.nranks != n)
    return usageError(fmt::format("--ranks={} and --procs={} disagree; --procs alone is enough",
                                  settings.compile.nranks, n));
  if (auto env = parseLaunchEnvironment(processEnvironment()); !env)
    return reportError(env.takeError());
  else if (*env)
    return usageError("--procs starts its own processes, but this one was started by a "
                      "launcher (" +
                      (*env)->source + " is set): leave --procs out");
  double timeoutSeconds = 900;
  if (auto text = args.get("procs-timeout")) {
    char* end = nullptr;
    timeoutSeconds = std::strtod(text->c_str(), &end);
    if (end == text->c_str() || *end != '\0' || !(timeoutSeconds > 0))
      return usageError("--procs-timeout takes a positive number of seconds");
  }
  // What would fail in every child fails once, here: a wrong spec, too few GPUs.
  CompileOptions options = settings.compile;
  options.nranks = n;
  auto spec = loadSpec(specName);
  if (!spec)
    return reportError(spec.takeError());
  if (auto compiled = compileCollective(*spec, options, llvm::errs()); !compiled)
    return reportError(compiled.takeError());
  auto gpus = gpuCount();
  if (!gpus) {
    llvm::errs() << "collc run: " << llvm::toString(gpus.takeError()) << "\n";
    return kUserError;
  }
  if (*gpus < n)
    return usageError(fmt::format("--procs={} needs {} GPUs; this machine has {}", n, n, *gpus));

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
  llvm::errs() << "collc run: " << outcome->failure << "\n";
  // The failed rank's own status where it is one of ours; a crash or a timeout is collc's.
  return outcome->exitCode == kUserError ? kUserError : kInternalError;
}

} // namespace

int runRun(const ParsedArguments& args) {
  RunSettings settings;
  std::string error;
  if (!parseSettings(args, settings, error))
    return usageError(error);
  const std::string specName = args.positionals()[0];
  // --procs makes this process the launcher, unless it is one of the children it started.
  if (args.has("procs") && !startedByCollcLauncher(processEnvironment(), int(getppid())))
    return launchProcs(args, settings, specName);
  auto env = parseLaunchEnvironment(processEnvironment());
  if (!env)
    return reportError(env.takeError());
  if (*env)
    return runProcess(settings, specName, **env);
  if (args.has("procs-timeout"))
    return usageError("--procs-timeout goes with --procs");
  return runLocal(settings, specName);
}

} // namespace collc::driver
