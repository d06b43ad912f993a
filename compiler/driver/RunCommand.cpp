#include "Commands.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "runtime/LocalWorld.h"
#include "runtime/NcclBaseline.h"
#include "runtime/RunHarness.h"

#include <cmath>
#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

namespace collc::driver {

const Command kRunCommand{
    "run",
    "run SPEC [--ranks=R] [--dtype=T] [--op=O] [--count=N] [options]",
    "Run one variant on R GPUs of this process: fresh random inputs, every element checked "
    "against\n"
    "a float64 host reference, then the per-operation latency measured in a CUDA graph.",
    "Timing: a graph of --graph-ops back-to-back calls per rank, replayed --replays times; the\n"
    "median replay over the slowest rank, divided by the calls, is the per-op latency.\n"
    "With --nccl, NCCL's AllReduce on the same GPUs, sizes and type is checked and timed the same\n"
    "way, with cudaMalloc buffers and with ncclMemAlloc buffers registered as symmetric windows;\n"
    "'vs best' is the better NCCL time divided by collc's (above 1: collc is faster).\n"
    "Without a GPU this says so and exits with status 1; 'collc emit --emit=cubin' still works.\n",
    [] {
      std::vector<OptionSpec> options = {
          {"count", "N", "elements per rank (K/M/G suffixes allowed; default 262144)"},
          {"graph-ops", "K", "calls captured in the timed graph (default 50)"},
          {"replays", "K", "timed graph replays, median reported (default 7)"},
          {"no-time", "", "check correctness only"},
          {"timeout", "SECONDS", "watchdog bound of every wait in the kernel (default 5)"},
          {"seed", "N", "random seed for the inputs (default 1)"},
          {"nccl", "",
           "also time NCCL's AllReduce (plain and symmetric-window buffers) in this run"},
          {"help", "", "show this help"}};
      auto variant = variantOptions();
      options.insert(options.end(), variant.begin(), variant.end());
      return options;
    }(),
    1};

int runRun(const ParsedArguments& args) {
  CompileOptions options;
  std::string error;
  auto gpus = gpuCount();
  if (!gpus) {
    llvm::errs() << "collc run: " << llvm::toString(gpus.takeError())
                 << "\n(check, emit and the JIT to cubin work without one: collc emit SPEC "
                    "--emit=cubin -o FILE)\n";
    return kUserError;
  }
  if (!args.has("ranks"))
    options.nranks = std::max(2, *gpus);
  if (!parseVariant(args, options, error))
    return usageError(error);
  if (options.nranks > *gpus)
    return usageError(fmt::format("--ranks={} needs {} GPUs; this machine has {}", options.nranks,
                                  options.nranks, *gpus));
  uint64_t count = 262144;
  if (auto text = args.get("count")) {
    auto value = parseSize(*text);
    if (!value || *value == 0)
      return usageError("--count must be a positive number of elements, e.g. 4096 or 1M");
    count = *value;
  }
  RunOptions run;
  run.count = count;
  run.time = !args.has("no-time");
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
    return usageError("--graph-ops and --replays take a positive number");
  if (auto text = args.get("seed")) {
    auto value = parseSize(*text);
    if (!value)
      return usageError("--seed takes a number");
    run.seed = *value;
  }
  double timeoutSeconds = 5;
  if (auto text = args.get("timeout")) {
    char* end = nullptr;
    timeoutSeconds = std::strtod(text->c_str(), &end);
    if (end == text->c_str() || *end != '\0' || !(timeoutSeconds > 0) || timeoutSeconds > 3600)
      return usageError("--timeout takes a number of seconds in (0, 3600]");
  }

  auto spec = loadSpec(args.positionals()[0]);
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
  uint64_t scratchBytes = compiled->flagsBytes() + 4096;
  for (const auto& scratch : compiled->scratch)
    scratchBytes += 2 * (scratch.bytes(count) + 256);
  auto world = LocalWorld::create(devices, scratchBytes);
  if (!world)
    return reportError(world.takeError());
  auto instance = CollectiveInstance::create(**world, *compiled, image->image, count,
                                             uint64_t(timeoutSeconds * 1e9));
  if (!instance)
    return reportError(instance.takeError());
  llvm::errs() << fmt::format("running {} ({} {}, {} ranks, {} blocks x {} threads) on {} x {}, "
                              "{} elements ({} bytes) per rank...\n",
                              compiled->specName, name(options.dtype), name(options.op),
                              options.nranks, compiled->launch.blocks, compiled->launch.threads,
                              options.nranks, gpuName(0), count, count * elementBytes);
  auto report = runAndCheck(**world, **instance, *compiled, run);
  if (!report)
    return reportError(report.takeError());
  if (!report->correct) {
    llvm::errs() << "collc run: WRONG RESULT\n" << report->firstMismatches << "\n";
    return kInternalError;
  }
  llvm::outs() << fmt::format("correct: {} calls checked on every rank against a float64 "
                              "reference\n",
                              report->checkedCalls);
  if (!run.time)
    return kSuccess;
  // NCCL in the same run, on the same GPUs, after collc's world is gone (it owns their memory).
  std::string ncclPlain = "-", ncclSymmetric = "-", ratio = "-";
  if (args.has("nccl")) {
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
  double bytes = double(count * elementBytes);
  double algbw = bytes / (report->usPerOp * 1e3);
  double busbw = algbw * 2.0 * (options.nranks - 1) / options.nranks;
  llvm::outs() << fmt::format("{:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}\n", "bytes",
                              "count", "us/op", "algbw", "busbw", "nccl_us", "nccl_sym", "vs_best");
  llvm::outs() << fmt::format("{:>12} {:>12} {:>10.2f} {:>10.2f} {:>10.2f} {:>10} {:>10} {:>8}\n",
                              count * elementBytes, count, report->usPerOp, algbw, busbw, ncclPlain,
                              ncclSymmetric, ratio);
  return kSuccess;
}

} // namespace collc::driver
