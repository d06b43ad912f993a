#include "tools/bench/FusedNormBenchCommand.h"

#include "runtime/Devices.h"
#include "runtime/HeapSize.h"
#include "runtime/Jit.h"
#include "runtime/Watchdog.h"
#include "tools/bench/FusedNormBench.h"
#include "tools/bench/PlainRmsNorm.h"
#include "tools/command/CommandSupport.h"
#include "tools/command/GpuCommand.h"

#include <algorithm>
#include <fmt/format.h>
#include <iostream>
#include <llvm/Support/raw_ostream.h>

namespace collc::driver {

namespace {

// The size sweep's options, which this comparison (token counts, one process) has no use for.
constexpr const char* kSweepOnlyOptions[] = {
    "procs",        "b", "e", "f", "csv", "json", "plot", "watchdog-cost", "op", "no-nccl",
    "compile-times"};

/// The spec compiled and JIT-compiled for `device`.
Expected<JittedCollective> compileAndJit(const std::string& specName, CompileOptions options,
                                         int device) {
  auto spec = loadSpec(specName);
  if (!spec)
    return spec.takeError();
  std::shared_ptr<const ir::Program> program;
  options.specProgram = &program;
  auto compiled = compileCollective(*spec, options, std::cerr);
  if (!compiled)
    return compiled.takeError();
  auto image = compileForDevice(*compiled, device);
  if (!image)
    return image.takeError();
  return JittedCollective{std::move(*compiled), std::move(image->image), std::move(program)};
}

} // namespace

int runFusedNormBench(const ParsedArguments& args) {
  for (const char* option : kSweepOnlyOptions)
    if (args.has(option))
      return usageError(fmt::format("--{} does not apply to 'collc bench {}', which compares the "
                                    "fused kernel with the unfused pair over 1..128 tokens in "
                                    "one process",
                                    option, kFusedNormBenchSpec));
  CompileOptions options;
  std::string error;
  if (!parseVariant(args, options, error))
    return usageError(error);
  if (!args.has("dtype"))
    options.dtype = DType::BF16;
  RunOptions run;
  double timeoutSeconds = defaultWatchdogTimeoutNs() / 1e9;
  if (!parseTimingOptions(args, run, timeoutSeconds, error))
    return usageError(error);
  // What would fail with any GPUs (the spec, --hidden, the baseline's kernel) fails before
  // anything asks for one.
  {
    CompileOptions precheck = options;
    if (!args.has("ranks"))
      precheck.nranks = 2;
    auto spec = loadSpec(kFusedNormBenchSpec);
    if (!spec)
      return reportError(spec.takeError());
    std::shared_ptr<const ir::Program> program;
    precheck.specProgram = &program;
    auto compiled = compileCollective(*spec, precheck, std::cerr);
    if (!compiled)
      return reportError(compiled.takeError());
    if (auto kernel = plainRmsNormKernel(*compiled, *program); !kernel)
      return reportError(kernel.takeError());
  }
  std::vector<int> devices;
  if (int status = chooseLocalDevices(
          "bench", "(collc emit allreduce_rmsnorm --emit=cubin works without one)",
          args.has("ranks"), options.nranks, devices);
      status != kSuccess)
    return status;

  auto fused = compileAndJit(kFusedNormBenchSpec, options, devices[0]);
  if (!fused)
    return reportError(fused.takeError());
  // The unfused side: the same type, ranks and sync, a plain sum without rows.
  CompileOptions plainOptions = options;
  plainOptions.op = ReduceOp::Sum;
  plainOptions.sync = fused->compiled.sync;
  plainOptions.rowLength = 0;
  auto allReduce = compileAndJit("allreduce_oneshot", plainOptions, devices[0]);
  if (!allReduce)
    return reportError(allReduce.takeError());
  auto kernel = plainRmsNormKernel(fused->compiled, *fused->spec);
  if (!kernel)
    return reportError(kernel.takeError());
  JitOptions jit;
  jit.arch = gpuArch(devices[0]);
  auto plainImage = compileCuda(kernel->source, kernel->name, JitOutput::Cubin, jit);
  if (!plainImage)
    return reportError(plainImage.takeError());

  FusedNormBenchSettings settings;
  for (uint64_t tokens = 1; tokens <= 128; tokens *= 2)
    settings.tokens.push_back(tokens);
  settings.graphOps = run.graphOps;
  settings.replays = run.replays;
  settings.seed = run.seed;
  settings.timeoutNs = uint64_t(timeoutSeconds * 1e9);
  const uint64_t hidden = uint64_t(fused->compiled.rowLength);
  const uint64_t maxCount = settings.tokens.back() * hidden;
  auto world = LocalWorld::create(devices, std::max(heapBytesFor(fused->compiled, maxCount),
                                                    heapBytesFor(allReduce->compiled, maxCount)));
  if (!world)
    return reportError(world.takeError());
  llvm::errs() << fmt::format("bench {}: fused ({}) against allreduce_oneshot + a plain RMSNorm "
                              "kernel, {} {} sync, hidden {}, {} ranks on {}...\n",
                              kFusedNormBenchSpec, fused->compiled.kernelName, name(options.dtype),
                              name(fused->compiled.sync), hidden, options.nranks,
                              gpuName(devices[0]));
  auto points = benchFusedRmsNorm(**world, *fused, *allReduce, plainImage->image, settings);
  if (!points)
    return reportError(points.takeError());
  llvm::outs() << fmt::format("{:>7} {:>10} {:>11} {:>13} {:>9}\n", "tokens", "elements",
                              "fused_us", "unfused_us", "unfused/fused");
  for (const FusedNormPoint& p : *points)
    llvm::outs() << fmt::format("{:>7} {:>10} {:>11.2f} {:>13.2f} {:>9.2f}\n", p.tokens,
                                p.tokens * hidden, p.fusedUs, p.unfusedUs,
                                p.fusedUs > 0 ? p.unfusedUs / p.fusedUs : 0.0);
  llvm::outs() << "correct: both checked against a float64 reference at every token count\n";
  return kSuccess;
}

} // namespace collc::driver
