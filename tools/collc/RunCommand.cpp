#include "runtime/BundleFile.h"
#include "runtime/CoResidency.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/HeapSize.h"
#include "runtime/LocalWorld.h"
#include "runtime/ProcessWorld.h"
#include "runtime/SharedGpuWorld.h"
#include "runtime/Watchdog.h"
#include "tools/bench/BenchReport.h"
#include "tools/bench/Benchmark.h"
#include "tools/collc/Commands.h"
#include "tools/command/GpuCommand.h"
#include "tools/harness/RunHarness.h"
#include "tools/launch/WorkQueues.h"

#include <fmt/format.h>
#include <iostream>
#include <llvm/Support/raw_ostream.h>
#include <optional>

namespace collc::driver {

const Command kRunCommand{
    "run",
    "run SPEC [--ranks=R | --procs=N | --ranks=R --one-gpu] [--dtype=T] [--op=O] [--count=N]\n"
    "                 [options]",
    "Run one variant on R GPUs of this process (or one process per GPU): fresh random inputs,\n"
    "every element checked against a float64 host reference, then the per-operation latency\n"
    "measured in a CUDA graph.",
    "Timing: a graph of --graph-ops back-to-back calls per rank, replayed --replays times; the\n"
    "median replay over the slowest rank, divided by the calls, is the per-op latency.\n"
    "With --nccl, NCCL's same collective (ncclAllReduce, ncclAllGather, ncclReduceScatter,\n"
    "ncclBroadcast or ncclReduce with --root, alltoall as grouped ncclSend/ncclRecv) on the same\n"
    "GPUs, size, type and operator is checked and timed the same way, with cudaMalloc buffers and\n"
    "(one process) ncclMemAlloc buffers registered as symmetric windows; 'vs best' is the better\n"
    "NCCL time divided by collc's (above 1: collc is faster).\n"
    "\n"
    "One process per GPU: --procs N starts N copies of this command, rank r on GPU r, which find\n"
    "each other through NCCL (a file rendezvous in a private temporary directory); rank 0 prints\n"
    "the results, other ranks' lines come prefixed with [rank R]. A rank that fails stops the\n"
    "others, and the launcher says which rank and how it ended. Under a launcher of your own\n"
    "(torchrun, mpirun) leave --procs out: each process reads RANK, WORLD_SIZE, LOCAL_RANK and\n"
    "COLLC_RENDEZVOUS (file:/PATH or tcp:HOST:PORT, where rank 0 leaves the NCCL id). When the\n"
    "ranks are not all on one node with peer access (or COLLC_TREAT_EACH_GPU_AS_NODE=1 /\n"
    "COLLC_NODE_SIZE=K says so) the collective is handed wholly to NCCL, and the log says so.\n"
    "\n"
    "Many ranks on one GPU: --one-gpu --ranks R runs the R ranks as R co-resident kernels on\n"
    "GPU 0, each rank's heap a region of its memory, the kernels unchanged: many-rank\n"
    "correctness on any single GPU. Up to 32 ranks each rank is its own launch on its own stream;\n"
    "past 32 (CUDA's hardware work queues), or with --one-launch, every call of every rank is one\n"
    "cooperative launch of the kernel's <kernel>_ranks entry point (compiled in for it), up to 72\n"
    "ranks. The blocks of all ranks must fit the GPU's multiprocessors\n"
    "together; where the spec's own launch does not, it is compiled with as many blocks per rank\n"
    "as fit, and the log says so. Its timings mean nothing (the ranks divide one GPU between\n"
    "them): the results table says so; use --no-time to check correctness only.\n"
    "\n"
    "Buffers as one memory: --in-place passes every call's input as its output, and --alias-aux\n"
    "each pair of aux buffers the variant may share (the fused RMSNorm's residual_out and\n"
    "residual) as one, where the verifier proved the variant's own lowered program for it\n"
    "('collc check SPEC' says which strategies and rank counts allow what); anything else is\n"
    "refused before a GPU is asked for. Each call is checked against copies of its inputs taken\n"
    "before it. The timed graph's calls then reduce each other's results in place; its last call\n"
    "runs on fresh inputs of its own, and is checked.\n"
    "\n"
    "Without a GPU this says so and exits with status 1; 'collc emit --emit=cubin' still works.\n"
    "\n"
    "SPEC may be a bundle ('collc emit SPEC --emit=bundle -o FILE'): its variant runs with the\n"
    "cubin for GPU 0's architecture, compiling nothing. The bundle fixes the variant, so it takes\n"
    "no variant option but --ranks (which must match it), in this process or with --one-gpu.\n",
    [] {
      std::vector<OptionSpec> options = {
          {"count", "N", "elements per rank (K/M/G suffixes allowed; default 262144)"},
          {"no-time", "", "check correctness only"},
          {"nccl", "", "also time NCCL's same collective in this run"},
          {"one-gpu", "",
           "run the --ranks R ranks as co-resident kernels on GPU 0: for correctness only, "
           "timings mean nothing"},
          {"one-launch", "",
           "with --one-gpu: run every call of every rank as one launch (the default past 32 "
           "ranks)"},
          {"in-place", "",
           "run every call in place (out is in's memory), where the variant allows it"},
          {"alias-aux", "",
           "pass every pair of aux buffers the variant may share (residual_out and residual) as "
           "one memory"}};
      for (const auto& more : {timingOptions(), procsOptions(), variantOptions()})
        options.insert(options.end(), more.begin(), more.end());
      options.push_back({"help", "", "show this help"});
      return options;
    }(),
    1};

namespace {

/// Everything `collc run` takes from its options, parsed once for every mode.
struct RunSettings {
  CompileOptions compile;
  bool ranksGiven = false;
  RunOptions run;
  double timeoutSeconds = defaultWatchdogTimeoutNs() / 1e9;
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
  // Known before the spec is read when --hidden is given; the spec's own default is checked after
  // it is compiled (compileForRun).
  if (settings.compile.rowLength > 0 && settings.run.count % uint64_t(settings.compile.rowLength))
    return error = fmt::format("--count={} is not a whole number of rows of --hidden={}",
                               settings.run.count, settings.compile.rowLength),
           false;
  settings.run.time = !args.has("no-time");
  settings.run.sharing.inPlace = args.has("in-place");
  settings.run.sharing.auxAliased = args.has("alias-aux");
  if (!parseTimingOptions(args, settings.run, settings.timeoutSeconds, error))
    return false;
  settings.nccl = args.has("nccl");
  return true;
}

/// Loads and compiles the spec for a run of `count` elements into `compiled`; kSuccess, or the exit
/// status of the error it reported. A spec with rows runs whole rows: checked here for its own
/// default row length, which is known only once it is compiled; so are the buffers `sharing`
/// passes as one memory, which the variant's own lowered program must allow. With `run`, the
/// spec's program becomes the run's reference (the spec interpreted checks every result).
int compileForRun(const std::string& specName, CompileOptions options, uint64_t count,
                  BufferSharing sharing, CompiledCollective& compiled, RunOptions* run = nullptr) {
  auto spec = loadSpec(specName);
  if (!spec)
    return reportError(spec.takeError());
  if (run)
    options.specProgram = &run->reference;
  auto result = compileCollective(*spec, options, std::cerr);
  if (!result)
    return reportError(result.takeError());
  compiled = std::move(*result);
  if (std::string problem = sizesProblem(compiled, count); !problem.empty())
    return usageError("--count=" + std::to_string(count) + ": " + problem);
  if (compiled.rowLength > 0 && count % uint64_t(compiled.rowLength) != 0)
    return usageError(fmt::format("--count={} is not a whole number of rows of {} elements ('{}' "
                                  "has rows; set the row length with --hidden)",
                                  count, compiled.rowLength, compiled.specName));
  if (Error err = checkBufferSharing(compiled, sharing, count))
    return usageError(toString(std::move(err)));
  return kSuccess;
}

/// NCCL measured at the run's one size, with the run's graph and replays.
BenchSettings ncclSettings(const RunSettings& settings) {
  BenchSettings bench;
  bench.counts = {settings.run.count};
  bench.graphOps = settings.run.graphOps;
  bench.replays = settings.run.replays;
  bench.seed = settings.run.seed;
  return bench;
}

/// The results table `collc run` prints (the table of `collc bench` without its variant column),
/// and NCCL's problems, if any, on stderr.
void printTable(const RunSettings& settings, const CompiledCollective& compiled, double usPerOp,
                std::vector<NcclPoint> nccl) {
  BenchResults results;
  results.header.nranks = compiled.nranks;
  BenchRow row;
  row.spec = compiled.specName;
  row.sync = std::string(name(compiled.sync));
  row.launch = launchText(compiled.launch);
  row.kind = compiled.kind;
  row.count = settings.run.count;
  row.bytes = settings.run.count * sizeOf(compiled.dtype);
  row.collc = BenchTiming::measured(usPerOp);
  results.rows.push_back(row);
  results.nccl = std::move(nccl);
  writeProblems(llvm::errs(), results);
  writeTable(llvm::outs(), results, /*variantColumn=*/false);
}

/// Says whether the checked calls were right: the mismatches on stderr (kInternalError), or the
/// count of checked calls on stdout (once: by rank 0 when `rank` names this process's rank).
int reportCorrectness(const RunReport& report, std::optional<int> rank, BufferSharing sharing) {
  if (!report.correct) {
    llvm::errs() << "collc run: " << (rank ? "rank " + std::to_string(*rank) + ": " : "")
                 << "WRONG RESULT\n"
                 << report.firstMismatches << "\n";
    return kInternalError;
  }
  if (!rank || *rank == 0) {
    llvm::outs() << fmt::format("correct: {} calls checked on every rank against a float64 "
                                "reference{}\n",
                                report.checkedCalls,
                                sharing.any() ? " (" + describe(sharing) + ")" : "");
    if (report.quantized)
      llvm::outs() << fmt::format(
          "quantized elements: bit for bit, except {} (every rank, every checked call) whose "
          "float64 value lies within the fp32 computation's error of a rounding boundary: "
          "either neighbouring code accepted\n",
          report.nearRoundingBoundary);
  }
  return kSuccess;
}

/// One process drives every rank: the LocalWorld path.
int runLocal(RunSettings& settings, const std::string& specName) {
  CompileOptions& options = settings.compile;
  // The variant is compiled before the GPUs are asked for, so that what it refuses is refused on
  // any machine; without --ranks it has a rank per GPU (at least 2), as chooseLocalDevices says.
  if (!settings.ranksGiven) {
    auto gpus = gpuCount();
    options.nranks = gpus ? std::max(2, *gpus) : 2;
    if (!gpus)
      consumeError(gpus.takeError()); // said below, by chooseLocalDevices
  }
  const uint64_t count = settings.run.count;
  CompiledCollective compiled;
  if (int status =
          compileForRun(specName, options, count, settings.run.sharing, compiled, &settings.run);
      status != kSuccess)
    return status;
  std::vector<int> devices;
  if (int status = chooseLocalDevices("run",
                                      "(check, emit and the JIT to cubin work without one: "
                                      "collc emit SPEC --emit=cubin -o FILE)",
                                      settings.ranksGiven, options.nranks, devices);
      status != kSuccess)
    return status;
  auto image = compileForDevice(compiled, devices[0]);
  if (!image)
    return reportError(image.takeError());

  const uint64_t elementBytes = sizeOf(options.dtype);
  auto world = LocalWorld::create(devices, heapBytesFor(compiled, count));
  if (!world)
    return reportError(world.takeError());
  auto instance = CollectiveInstance::create(**world, compiled, image->image, count,
                                             uint64_t(settings.timeoutSeconds * 1e9));
  if (!instance)
    return reportError(instance.takeError());
  llvm::errs() << fmt::format("running {} ({} {}, {} ranks, {} blocks x {} threads) on {} x {}, "
                              "{} elements ({} bytes) per rank...\n",
                              compiled.specName, name(options.dtype), name(options.op),
                              options.nranks, compiled.launch.blocks, compiled.launch.threads,
                              options.nranks, gpuName(0), count, count * elementBytes);
  auto report = runAndCheck(**world, **instance, compiled, settings.run);
  if (!report)
    return reportError(report.takeError());
  if (int status = reportCorrectness(*report, std::nullopt, settings.run.sharing);
      status != kSuccess)
    return status;
  if (!settings.run.time)
    return kSuccess;
  // NCCL's same collective in the same run, on the same GPUs, after collc's world is gone (it
  // owns their memory).
  std::vector<NcclPoint> nccl;
  if (settings.nccl) {
    instance->reset();
    world->reset();
    auto points = benchNcclBaseline(devices, {ncclCollectiveOf(compiled)}, {settings.run.reference},
                                    ncclSettings(settings));
    if (!points)
      return reportError(points.takeError());
    nccl = std::move(*points);
  }
  printTable(settings, compiled, report->usPerOp, std::move(nccl));
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
  CompiledCollective compiled;
  if (int status =
          compileForRun(specName, options, count, settings.run.sharing, compiled, &settings.run);
      status != kSuccess)
    return status;
  ProcessWorldOptions worldOptions;
  worldOptions.heapBytes = heapBytesFor(compiled, count);
  auto world = ProcessWorld::fromEnvironment(worldOptions);
  if (!world)
    return reportError(world.takeError());
  auto image = compileForDevice(compiled, (*world)->device(rank));
  if (!image)
    return reportError(onRank(rank, image.takeError()));
  auto instance = CollectiveInstance::create(**world, compiled, image->image, count,
                                             uint64_t(settings.timeoutSeconds * 1e9));
  if (!instance)
    return reportError(onRank(rank, instance.takeError()));
  const uint64_t elementBytes = sizeOf(options.dtype);
  if (rank == 0)
    llvm::errs() << fmt::format("running {} ({} {}, {} ranks, {} blocks x {} threads) on {} "
                                "processes, one GPU each ({}), {} elements ({} bytes) per rank: "
                                "{}...\n",
                                compiled.specName, name(options.dtype), name(options.op),
                                options.nranks, compiled.launch.blocks, compiled.launch.threads,
                                options.nranks, gpuName((*world)->device(rank)), count,
                                count * elementBytes, (*instance)->engineDescription());
  auto report = runAndCheck(**world, **instance, compiled, settings.run);
  if (!report)
    return reportError(onRank(rank, report.takeError()));
  if (int status = reportCorrectness(*report, rank, settings.run.sharing); status != kSuccess)
    return status;
  if (!settings.run.time)
    return kSuccess;
  // NCCL on the world's communicator, in the same harness: cudaMalloc buffers, one graph per
  // rank, the same inputs and checks. (Symmetric windows are measured in one-process mode.)
  std::vector<NcclPoint> nccl;
  if (settings.nccl) {
    auto points =
        benchNcclInWorld(**world, compiled, settings.run.reference, ncclSettings(settings));
    if (!points)
      return reportError(onRank(rank, points.takeError()));
    nccl = std::move(*points);
  }
  if (rank == 0)
    printTable(settings, compiled, report->usPerOp, std::move(nccl));
  return kSuccess;
}

// ---- --one-gpu: every rank a co-resident kernel on GPU 0 (runtime/SharedGpuWorld.h).

/// Why --one-gpu cannot go with the other options given; empty when it can.
std::string oneGpuConflict(const ParsedArguments& args, const RunSettings& settings) {
  if (!settings.ranksGiven)
    return "--one-gpu needs --ranks R: how many ranks share the GPU";
  if (args.has("procs") || args.has("procs-timeout"))
    return "--one-gpu runs every rank in this process; leave --procs out";
  if (settings.nccl)
    return "--one-gpu cannot run NCCL, which puts one rank on each GPU; leave --nccl out";
  return "";
}

/// Recompiles `compiled` (the spec compiled for R ranks) for R ranks sharing `device` where the
/// spec's own blocks of all ranks would not fit the GPU's multiprocessors: (unless --blocks
/// chose) with as many as fit, said in the log.
int fitOneGpu(RunSettings& settings, const std::string& specName, int device,
              CompiledCollective& compiled) {
  CompileOptions& options = settings.compile;
  const int multiprocessors = multiprocessorCount(device);
  const int most = maxCoResidentBlocksPerRank(multiprocessors, options.nranks);
  if (options.blocks || most < 1 || compiled.launch.blocks <= most)
    return kSuccess; // CollectiveInstance::create refuses what does not fit, with the numbers
  llvm::errs() << fmt::format("collc run: {} ranks of {} blocks would not all be resident on GPU "
                              "{}'s {} multiprocessors; compiled with {} blocks per rank instead "
                              "(--blocks chooses)\n",
                              options.nranks, compiled.launch.blocks, device, multiprocessors,
                              most);
  options.blocks = most;
  return compileForRun(specName, options, settings.run.count, settings.run.sharing, compiled,
                       &settings.run);
}

/// --one-gpu: one process drives R ranks on GPU 0, a SharedGpuWorld.
int runOneGpu(const ParsedArguments& args, RunSettings& settings, const std::string& specName) {
  if (std::string conflict = oneGpuConflict(args, settings); !conflict.empty())
    return usageError(conflict);
  if (auto env = parseLaunchEnvironment(processEnvironment()); !env)
    return reportError(env.takeError());
  else if (*env)
    return usageError("--one-gpu runs every rank in this process, but this one was started by a "
                      "launcher (" +
                      (*env)->source + " is set)");
  giveEachStreamAWorkQueue(); // before anything starts CUDA
  const SharedGpuLaunch launch = args.has("one-launch")
                                     ? SharedGpuLaunch::OneLaunch
                                     : sharedGpuLaunchFor(settings.compile.nranks);
  if (launch == SharedGpuLaunch::OneLaunch)
    settings.compile.rankLaunchEntry = true;
  const uint64_t count = settings.run.count;
  // Compiled before the GPU is asked for: what the variant refuses is refused on any machine.
  CompiledCollective compiled;
  if (int status = compileForRun(specName, settings.compile, count, settings.run.sharing, compiled,
                                 &settings.run);
      status != kSuccess)
    return status;
  auto gpus = gpuCount();
  if (!gpus) {
    llvm::errs() << "collc run: " << toString(gpus.takeError()) << "\n";
    return kUserError;
  }
  const int device = 0;
  if (int status = fitOneGpu(settings, specName, device, compiled); status != kSuccess)
    return status;
  auto image = compileForDevice(compiled, device);
  if (!image)
    return reportError(image.takeError());
  auto world = SharedGpuWorld::create(settings.compile.nranks, device,
                                      heapBytesFor(compiled, count), launch);
  if (!world)
    return reportError(world.takeError());
  auto instance = CollectiveInstance::create(**world, compiled, image->image, count,
                                             uint64_t(settings.timeoutSeconds * 1e9));
  if (!instance)
    return reportError(instance.takeError());
  llvm::errs() << fmt::format("running {} ({} {}, {} ranks, {} blocks x {} threads), {} elements "
                              "({} bytes) per rank: {}...\n",
                              compiled.specName, name(compiled.dtype), name(compiled.op),
                              compiled.nranks, compiled.launch.blocks, compiled.launch.threads,
                              count, count * sizeOf(compiled.dtype), (*world)->pathDescription());
  auto report = runAndCheck(**world, **instance, compiled, settings.run);
  if (!report)
    return reportError(report.takeError());
  if (int status = reportCorrectness(*report, std::nullopt, settings.run.sharing);
      status != kSuccess)
    return status;
  if (!settings.run.time)
    return kSuccess;
  llvm::outs() << fmt::format("timings mean nothing here: {} ranks share one GPU (--one-gpu)\n",
                              compiled.nranks);
  printTable(settings, compiled, report->usPerOp, {});
  return kSuccess;
}

// ---- A bundle: the variant and its cubins written ahead of time (runtime/BundleFile.h).

/// Why the options given cannot go with a bundle; empty when they can.
std::string bundleConflict(const ParsedArguments& args, const RunSettings& settings,
                           const CompiledCollective& compiled) {
  for (const OptionSpec& option : variantOptions())
    if (option.name != "ranks" && args.has(option.name))
      return "--" + option.name +
             " chooses a variant, but the bundle fixes its variant; leave it out";
  if (settings.ranksGiven && settings.compile.nranks != compiled.nranks)
    return fmt::format("--ranks={}, but the bundle is compiled for {} ranks",
                       settings.compile.nranks, compiled.nranks);
  if (args.has("procs") || args.has("procs-timeout") || settings.nccl)
    return "a bundle runs in this process (or with --one-gpu); leave --procs and --nccl out";
  if (compiled.rowLength > 0 && settings.run.count % uint64_t(compiled.rowLength) != 0)
    return fmt::format("--count={} is not a whole number of rows of {} elements (the bundle's "
                       "row length)",
                       settings.run.count, compiled.rowLength);
  if (Error err = checkBufferSharing(compiled, settings.run.sharing, settings.run.count))
    return toString(std::move(err));
  return "";
}

/// The program of the spec the bundle was compiled from, lowered for the bundle's variant: the
/// reference its results are checked against. kSuccess, or the exit status of the error reported.
int bundleReference(const LoadedBundle& bundle, RunOptions& run) {
  if (bundle.contents.specText.empty())
    return usageError(bundle.path + " holds no spec, and collc run checks every result against "
                                    "the spec interpreted; write it with collc emit --emit=bundle");
  const CompiledCollective& compiled = bundle.compiled();
  CompileOptions options;
  options.dtype = compiled.dtype;
  options.op = compiled.op;
  options.nranks = compiled.nranks;
  options.root = compiled.root;
  options.rowLength = compiled.rowLength;
  options.eps = compiled.eps;
  options.sync = compiled.sync;
  auto programs = lowerVariantPrograms({bundle.contents.specName, bundle.contents.specText},
                                       options, std::cerr);
  if (!programs)
    return reportError(programs.takeError());
  run.reference = programs->spec;
  return kSuccess;
}

/// Runs the bundle at `path` on the first nranks GPUs, or with --one-gpu as nranks co-resident
/// kernels on GPU 0.
int runBundle(const ParsedArguments& args, RunSettings& settings, const std::string& path) {
  auto bundle = loadBundle(path);
  if (!bundle)
    return reportError(bundle.takeError());
  const CompiledCollective& compiled = bundle->compiled();
  llvm::errs() << fmt::format("bundle {}: {} ({} {} {}, {} sync, {} ranks), cubins for {}\n", path,
                              compiled.specName, name(compiled.kind), name(compiled.dtype),
                              name(compiled.op), name(compiled.sync), compiled.nranks,
                              fmt::join(bundle->archs(), ", "));
  if (std::string conflict = bundleConflict(args, settings, compiled); !conflict.empty())
    return usageError(conflict);
  if (int status = bundleReference(*bundle, settings.run); status != kSuccess)
    return status;
  const bool oneGpu = args.has("one-gpu");
  if (oneGpu)
    giveEachStreamAWorkQueue(); // before anything starts CUDA
  int gpusNeeded = oneGpu ? 1 : compiled.nranks;
  std::vector<int> devices;
  if (int status = chooseLocalDevices("run", "(the bundle loaded; running it needs a GPU)",
                                      /*ranksGiven=*/true, gpusNeeded, devices);
      status != kSuccess)
    return status;
  auto cubin = bundle->cubinForDevice(devices[0]);
  if (!cubin)
    return reportError(cubin.takeError());
  const uint64_t count = settings.run.count;
  std::unique_ptr<SymmetricWorld> world;
  if (oneGpu) {
    auto shared = SharedGpuWorld::create(
        compiled.nranks, devices[0], heapBytesFor(compiled, count),
        args.has("one-launch") ? SharedGpuLaunch::OneLaunch : sharedGpuLaunchFor(compiled.nranks));
    if (!shared)
      return reportError(shared.takeError());
    world = std::move(*shared);
  } else {
    auto local = LocalWorld::create(devices, heapBytesFor(compiled, count));
    if (!local)
      return reportError(local.takeError());
    world = std::move(*local);
  }
  auto instance = CollectiveInstance::create(*world, compiled, *cubin, count,
                                             uint64_t(settings.timeoutSeconds * 1e9));
  if (!instance)
    return reportError(instance.takeError());
  auto report = runAndCheck(*world, **instance, compiled, settings.run);
  if (!report)
    return reportError(report.takeError());
  if (int status = reportCorrectness(*report, std::nullopt, settings.run.sharing);
      status != kSuccess)
    return status;
  if (!settings.run.time)
    return kSuccess;
  if (oneGpu)
    llvm::outs() << fmt::format("timings mean nothing here: {} ranks share one GPU (--one-gpu)\n",
                                compiled.nranks);
  printTable(settings, compiled, report->usPerOp, {});
  return kSuccess;
}

} // namespace

int runRun(const ParsedArguments& args) {
  RunSettings settings;
  std::string error;
  if (!parseSettings(args, settings, error))
    return usageError(error);
  const std::string specName = args.positionals()[0];
  if (isBundleFile(specName))
    return runBundle(args, settings, specName);
  if (args.has("one-launch") && !args.has("one-gpu"))
    return usageError("--one-launch runs the ranks of --one-gpu as one launch; give --one-gpu");
  if (args.has("one-gpu"))
    return runOneGpu(args, settings, specName);
  auto role = chooseWorldRole(args);
  if (!role)
    return reportError(role.takeError());
  switch (role->kind) {
  case WorldRole::Launcher:
    return launchProcs(args, "run",
                       settings.ranksGiven ? std::optional<int>(settings.compile.nranks)
                                           : std::nullopt,
                       [&](int processes) {
                         // What would fail in every child fails once, here: a wrong spec.
                         CompileOptions options = settings.compile;
                         options.nranks = processes;
                         CompiledCollective compiled;
                         return compileForRun(specName, options, settings.run.count,
                                              settings.run.sharing, compiled);
                       });
  case WorldRole::Rank:
    return runProcess(settings, specName, role->env);
  case WorldRole::OneProcess:
    break;
  }
  return runLocal(settings, specName);
}

} // namespace collc::driver
