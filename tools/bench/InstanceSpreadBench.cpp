// `collc bench SPEC --instances K`: one variant, K instances of it in one world, each timed at
// every size as `collc bench` times a variant. The instances differ only in where their scratch,
// flags and epochs lie; at small sizes a few cache lines carry the whole call, and where they lie
// can move the time by a few percent (which of the L2's partitions they fall in is the guess, not
// measured). This shows how much, before a comparison between two instances (collc bench
// --dispatch --own-instances) is read as a difference between variants.
#include "tools/bench/InstanceSpreadBench.h"

#include "runtime/CollectiveInstance.h"
#include "runtime/HeapSize.h"
#include "runtime/LocalWorld.h"
#include "runtime/TuningTable.h"
#include "runtime/Watchdog.h"
#include "tools/bench/BenchResults.h"
#include "tools/bench/CheckedTiming.h"
#include "tools/bench/DispatchVerdict.h"
#include "tools/bench/SweepOptions.h"
#include "tools/command/CommandSupport.h"
#include "tools/command/GpuCommand.h"

#include <algorithm>
#include <fmt/format.h>
#include <iostream>
#include <llvm/ADT/ScopeExit.h>
#include <llvm/Support/raw_ostream.h>
#include <memory>

namespace collc::driver {

std::vector<OptionSpec> instanceSpreadBenchOptions() {
  return {{"instances", "K",
           "time one variant on K instances of itself (2-16), to see how much where an instance "
           "lies in memory moves its time"}};
}

namespace {

/// Rounds per size: each instance is timed this many times, first in a rotated order, and keeps
/// its fastest, so that neither its place in the order nor one noisy timing decides.
constexpr int kRounds = 3;
constexpr int kMostInstances = 16;

} // namespace

int runInstanceSpreadBench(const ParsedArguments& args) {
  for (const char* option : {"procs", "csv", "json", "plot", "watchdog-cost", "compile-times",
                             "table", "every-variant", "fixed-first", "own-instances"})
    if (args.has(option))
      return usageError(std::string("--instances does not take --") + option);
  if (args.positionals().empty() || args.positionals()[0] == "all")
    return usageError("--instances times one spec: name it");
  int instances = 0;
  if (!llvm::to_integer(args.get("instances").value_or(""), instances, 10) || instances < 2 ||
      instances > kMostInstances)
    return usageError(fmt::format("--instances takes a count from 2 to {}", kMostInstances));
  CompileOptions compile;
  RunOptions run;
  double timeoutSeconds = defaultWatchdogTimeoutNs() / 1e9;
  std::string error;
  if (!parseBenchVariant(args, compile, run, timeoutSeconds, error))
    return usageError(error);
  const uint64_t elementBytes = sizeOf(compile.dtype);
  std::vector<uint64_t> counts;
  if (!parseSweepCounts(args, 1024, 16 * 1024, 4, elementBytes, counts, error))
    return usageError(error);

  auto source = loadSpec(args.positionals()[0]);
  if (!source)
    return reportError(source.takeError());
  int nranks = compile.nranks;
  std::vector<int> devices;
  if (int status = chooseLocalDevices("bench", "(--instances measures on GPUs)", args.has("ranks"),
                                      nranks, devices);
      status != kSuccess)
    return status;
  compile.nranks = nranks;
  std::shared_ptr<const ir::Program> reference; // the spec's program, which checks every result
  compile.specProgram = &reference;
  auto compiled = compileCollective(*source, compile, std::cerr);
  if (!compiled)
    return reportError(compiled.takeError());
  auto image = compileForDevice(*compiled, devices[0]);
  if (!image)
    return reportError(image.takeError());
  const uint64_t maxCount = counts.back();
  auto world = LocalWorld::create(devices, uint64_t(instances) *
                                               (heapBytesFor(*compiled, maxCount) + (1 << 20)));
  if (!world)
    return reportError(world.takeError());
  std::vector<std::unique_ptr<CollectiveInstance>> made;
  // Newest first, giving the heap back in order, however this function returns.
  auto release = llvm::make_scope_exit([&] {
    while (!made.empty())
      made.pop_back();
  });
  for (int k = 0; k < instances; ++k) {
    auto instance = CollectiveInstance::create(**world, *compiled, image->image, maxCount,
                                               uint64_t(timeoutSeconds * 1e9));
    if (!instance)
      return reportError(instance.takeError());
    made.push_back(std::move(*instance));
  }

  llvm::raw_ostream& out = llvm::outs();
  out << fmt::format("{}/{} {}x{} v{} ({} {}) on {} instances, each the fastest of {} timings "
                     "(us/op)\n",
                     compiled->specName, name(compiled->sync), compiled->launch.blocks,
                     compiled->launch.threads, compiled->launch.vectorBytes, name(compiled->dtype),
                     name(compiled->op), instances, kRounds);
  out << fmt::format("{:>8}", "bytes");
  for (int k = 0; k < instances; ++k)
    out << fmt::format(" {:>8}", "#" + std::to_string(k));
  out << fmt::format("  {:>9}\n", "spread");
  bool allCorrect = true;
  for (uint64_t count : counts) {
    RunOptions options = run;
    options.count = count;
    options.reference = reference;
    std::vector<BenchTiming> kept(size_t(instances), BenchTiming::failed("not measured"));
    for (int round = 0; round < kRounds; ++round)
      for (int step = 0; step < instances; ++step) {
        const size_t k = size_t((round + step) % instances);
        auto timing = checkedTiming(**world, *made[k], options);
        if (!timing)
          return reportError(timing.takeError());
        if (round == 0)
          kept[k] = *timing;
        else
          keepFaster(kept[k], *timing);
      }
    out << fmt::format("{:>8}", formatTableBytes(count * elementBytes));
    double fastest = 0, slowest = 0;
    bool rowCorrect = true;
    for (const BenchTiming& timing : kept) {
      if (!timing.ok()) {
        rowCorrect = false;
        out << fmt::format(" {:>8}", statusName(timing.status));
        continue;
      }
      out << fmt::format(" {:>8.3f}", timing.us);
      fastest = fastest == 0 ? timing.us : std::min(fastest, timing.us);
      slowest = std::max(slowest, timing.us);
    }
    if (rowCorrect)
      out << fmt::format("  {:>8.1f}%\n", 100.0 * (slowest / fastest - 1.0));
    else
      out << "  -\n";
    out.flush();
    allCorrect = allCorrect && rowCorrect;
  }
  out << "spread: the slowest instance's time over the fastest's, less 1\n";
  return allCorrect ? kSuccess : 2;
}

} // namespace collc::driver
