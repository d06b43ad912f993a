// `collc bench --dispatch`: the dispatched AllReduce (runtime/Dispatcher.h) next to every fixed
// variant of the tuning table, at every size, timed as `collc bench` times variants. It answers
// two questions: does dispatch pick, per size, a variant within 3% of the best single one
// measured now; and over the whole sweep, is dispatch faster than any one variant
// (DispatchVerdict.h judges both).
#include "tools/bench/DispatchBench.h"

#include "pipeline/CompileDispatch.h"
#include "pipeline/TunedOptions.h"
#include "runtime/Devices.h"
#include "runtime/Dispatcher.h"
#include "runtime/HeapSize.h"
#include "runtime/LocalWorld.h"
#include "runtime/Watchdog.h"
#include "tools/bench/BenchResults.h"
#include "tools/bench/CheckedTiming.h"
#include "tools/bench/DispatchVerdict.h"
#include "tools/bench/SweepOptions.h"
#include "tools/command/CommandSupport.h"
#include "tools/command/GpuCommand.h"
#include "tools/harness/RunHarness.h"
#include "tools/tune/TableVariants.h"
#include "tools/tune/TuneProgressBar.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <iostream>
#include <llvm/ADT/ScopeExit.h>
#include <llvm/Support/raw_ostream.h>

namespace collc::driver {

std::vector<OptionSpec> dispatchBenchOptions() {
  return {{"dispatch", "",
           "time the dispatched collective against every fixed variant of the tuning table"},
          {"table", "FILE", "with --dispatch: the tuning table (default: see collc tune --help)"},
          {"every-variant", "",
           "with --dispatch: compare with every variant of the table, not only each size's two "
           "fastest and those it timed at every size"},
          {"fixed-first", "",
           "with --dispatch: make the fixed variants' instances before the dispatcher's (to see "
           "whether the order they take the heap in moves the times)"},
          {"own-instances", "",
           "with --dispatch: time every fixed variant on an instance of its own, also those the "
           "dispatcher runs (by default those are timed on the dispatcher's instances)"}};
}

namespace {

/// One fixed variant of the comparison, ready to run.
struct Fixed {
  TunedVariant variant;
  CompiledCollective compiled;
  std::shared_ptr<const ir::Program> reference; // its spec's program, which checks its results
  std::string cubin;
  std::unique_ptr<CollectiveInstance> instance; // its own; null where it runs on `shared`
  CollectiveInstance* shared = nullptr;         // the dispatcher's instance of the same variant
  std::vector<BenchTiming> timings;             // per size
  bool broken = false;                          // an error ended its sweep
};

std::string timingText(const BenchTiming& timing) {
  if (timing.ok())
    return fmt::format("{:.2f}", timing.us);
  return statusName(timing.status);
}

} // namespace

int runDispatchBench(const ParsedArguments& args) {
  for (const char* option :
       {"sync", "blocks", "threads", "vector", "unroll", "whole-stores", "procs", "csv", "json",
        "plot", "watchdog-cost", "compile-times", "instances"})
    if (args.has(option))
      return usageError(std::string("--dispatch does not take --") + option +
                        ": the table chooses the variants, and one process drives every GPU");
  if (args.has("fixed-first") && !args.has("own-instances"))
    return usageError("--fixed-first goes with --own-instances: without it the fixed variants "
                      "that the dispatcher runs share its instances");
  CompileOptions compile;
  RunOptions run;
  double timeoutSeconds = defaultWatchdogTimeoutNs() / 1e9;
  std::string error;
  if (!parseBenchVariant(args, compile, run, timeoutSeconds, error))
    return usageError(error);
  const uint64_t elementBytes = sizeOf(compile.dtype);
  std::vector<uint64_t> counts;
  if (!parseSweepCounts(args, 1024, uint64_t(64) << 20, 2, elementBytes, counts, error))
    return usageError(error);

  DispatchRequest request;
  if (!args.positionals().empty() && args.positionals()[0] != "all")
    request.spec = args.positionals()[0];
  request.dtype = compile.dtype;
  request.op = compile.op;
  request.maxCount = counts.back();
  request.table = args.get("table").value_or("");
  int nranks = compile.nranks;
  std::vector<int> devices;
  if (int status = chooseLocalDevices("bench", "(--dispatch measures on GPUs)", args.has("ranks"),
                                      nranks, devices);
      status != kSuccess)
    return status;
  request.nranks = nranks;
  auto program = compileDispatchProgram(request);
  if (!program)
    return reportError(program.takeError());
  llvm::outs() << "dispatch plan: " << program->description() << "\n";
  // The reference of each variant the dispatcher may run: its spec's program.
  std::vector<std::shared_ptr<const ir::Program>> dispatchedReferences;
  for (const DispatchVariant& dispatched : program->variants()) {
    auto source = loadSpec(dispatched.variant.spec);
    if (!source)
      return reportError(source.takeError());
    CompileOptions options = compile;
    options.nranks = nranks;
    applyTunedVariant(dispatched.variant, options);
    auto programs = lowerVariantPrograms(*source, options, std::cerr);
    if (!programs)
      return reportError(programs.takeError());
    dispatchedReferences.push_back(programs->spec);
  }

  // The fixed variants: the table's finalists (those timed at every size, which collc tune's
  // cross-check makes of each size's two fastest, and each size's two fastest, which that
  // cross-check only covers within one tune's sizes), or with --every-variant every one it has
  // for this key; else the plan's own.
  std::vector<TunedVariant> variants;
  if (program->table()) {
    const auto all = tableVariants(*program->table(), program->query());
    variants = args.has("every-variant")
                   ? all
                   : tableVariants(*program->table(), program->query(), TableVariants::Finalists);
    if (variants.empty())
      variants = all;
    llvm::outs() << fmt::format(
        "fixed variants: {} of the table's {}{}\n", variants.size(), all.size(),
        variants.size() == all.size()
            ? ""
            : " (each size's two fastest in the table, and those it timed at every size; "
              "--every-variant takes them all)");
  }
  if (variants.empty())
    variants = program->plan().variants;
  std::vector<Fixed> fixed;
  uint64_t heap = program->heapBytes() + (uint64_t(1) << 20);
  for (const TunedVariant& variant : variants) {
    auto source = loadSpec(variant.spec);
    if (!source)
      return reportError(source.takeError());
    CompileOptions options = compile;
    options.nranks = nranks;
    applyTunedVariant(variant, options);
    std::shared_ptr<const ir::Program> reference;
    options.specProgram = &reference;
    auto compiled = compileCollective(*source, options, std::cerr);
    if (!compiled)
      return reportError(compiled.takeError());
    auto image = compileForDevice(*compiled, devices[0]);
    if (!image)
      return reportError(image.takeError());
    heap += heapBytesFor(*compiled, request.maxCount);
    fixed.push_back(Fixed{variant,
                          std::move(*compiled),
                          std::move(reference),
                          std::move(image->image),
                          nullptr,
                          nullptr,
                          {}});
  }
  auto world = LocalWorld::create(devices, heap);
  if (!world)
    return reportError(world.takeError());
  const uint64_t timeoutNs = uint64_t(timeoutSeconds * 1e9);
  // Where in memory an instance lies moves its time by a few percent at the smallest sizes (collc
  // bench --instances measures it): the same variant on two instances is not the same time. So a
  // fixed variant that the dispatcher also runs is timed on the dispatcher's own instance of it,
  // the same kernel on the same memory, unless --own-instances; then --fixed-first makes the
  // fixed variants' instances before the dispatcher's, to see whether the order decides it.
  const bool ownInstances = args.has("own-instances");
  const bool fixedFirst = args.has("fixed-first");
  std::unique_ptr<Dispatcher> dispatcher;
  auto makeDispatcher = [&]() -> Error {
    auto made = Dispatcher::create(**world, std::move(*program), timeoutNs);
    if (!made)
      return made.takeError();
    dispatcher = std::move(*made);
    return Error::success();
  };
  if (!fixedFirst)
    if (Error err = makeDispatcher())
      return reportError(std::move(err));
  // `fixed` outlives the world it was declared before: its instances, and the dispatcher's when
  // they were made last, must go first (newest first, giving their heap back), however this
  // function returns.
  auto releaseFixed = llvm::make_scope_exit([&] {
    if (fixedFirst)
      dispatcher.reset();
    for (auto it = fixed.rbegin(); it != fixed.rend(); ++it)
      it->instance.reset();
  });
  for (Fixed& f : fixed) {
    if (!ownInstances) {
      const std::vector<DispatchVariant>& runs = dispatcher->program().variants();
      for (size_t v = 0; v < runs.size(); ++v)
        if (runs[v].variant == f.variant)
          f.shared = &dispatcher->instance(v);
      if (f.shared)
        continue;
    }
    auto instance =
        CollectiveInstance::create(**world, f.compiled, f.cubin, request.maxCount, timeoutNs);
    if (!instance)
      return reportError(instance.takeError());
    f.instance = std::move(*instance);
  }
  auto instanceOf = [](Fixed& f) -> CollectiveInstance& {
    return f.instance ? *f.instance : *f.shared;
  };
  size_t sharedCount = 0;
  for (const Fixed& f : fixed)
    sharedCount += f.shared != nullptr;
  if (sharedCount > 0)
    llvm::outs() << fmt::format("{} of the fixed variants run on the dispatcher's instances of "
                                "them (--own-instances: each on its own)\n",
                                sharedCount);
  if (fixedFirst)
    if (Error err = makeDispatcher())
      return reportError(std::move(err));

  // Each size's row is printed as soon as that size is measured, so that a run cut short (a
  // time limit) still shows the sizes it finished.
  std::vector<BenchTiming> dispatched; // per size
  std::vector<size_t> chosen;          // per size: the dispatched variant's index
  std::vector<bool> retimed;           // per size: the close call was timed again
  const DispatchProgram& used = dispatcher->program();
  llvm::raw_ostream& out = llvm::outs();
  out << fmt::format("{:>8}  {:<40} {:>10}  {:<40} {:>10} {:>7}  {}\n", "bytes",
                     "dispatched variant", "us/op", "best fixed variant", "us/op", "ratio",
                     "within 3%");
  auto judgeAt = [&](size_t i) {
    std::vector<BenchTiming> atSize;
    for (const Fixed& f : fixed)
      atSize.push_back(f.timings[i]);
    return judgeSize(dispatched[i], atSize);
  };
  auto printSize = [&](size_t i) {
    const SizeVerdict verdict = judgeAt(i);
    const Fixed* best = verdict.best >= 0 ? &fixed[size_t(verdict.best)] : nullptr;
    std::string ratio = "-", text = "-";
    switch (verdict.outcome) {
    case SizeVerdict::Outcome::Within:
    case SizeVerdict::Outcome::Over:
      ratio = fmt::format("{:.3f}", verdict.ratio);
      // Where dispatch ran the best fixed variant itself on another instance (--own-instances),
      // a miss is the instance (docs/tuning.md: at 1 KiB that alone was up to 5%).
      text =
          withinText(verdict, retimed[i],
                     best && !best->shared && best->variant == used.variants()[chosen[i]].variant);
      break;
    case SizeVerdict::Outcome::DispatchFailed:
      text =
          "dispatched " + std::string(statusName(dispatched[i].status)) + ": " + dispatched[i].note;
      break;
    case SizeVerdict::Outcome::Uncompared:
      text = "no fixed variant ran";
      break;
    }
    out << fmt::format("{:>8}  {:<40} {:>10}  {:<40} {:>10} {:>7}  {}\n",
                       formatTableBytes(counts[i] * elementBytes),
                       used.variants()[chosen[i]].variant.text(), timingText(dispatched[i]),
                       best ? best->variant.text() : "-", best ? timingText(best->timings[i]) : "-",
                       ratio, text);
    out.flush();
  };

  // Size-major, the dispatched collective first and every fixed variant right after it, so
  // that drift over the run does not favour either side.
  TuneProgressBar bar;
  TuneProgress progress;
  progress.total = int(counts.size() * (fixed.size() + 1));
  progress.stage = "dispatch vs fixed";
  for (uint64_t count : counts) {
    RunOptions options = run;
    options.count = count;
    const std::string size = formatTableBytes(count * elementBytes);
    ++progress.done;
    progress.what = "dispatched at " + size;
    bar.update(progress);
    chosen.push_back(dispatcher->variantFor(count));
    RunOptions dispatchedOptions = options;
    dispatchedOptions.reference = dispatchedReferences[chosen.back()];
    auto timing = checkedTiming(**world, dispatcher->instanceFor(count), dispatchedOptions);
    if (!timing) {
      bar.finish();
      return reportError(timing.takeError());
    }
    dispatched.push_back(std::move(*timing));
    for (Fixed& f : fixed) {
      ++progress.done;
      progress.what = f.variant.text() + " at " + size;
      bar.update(progress);
      if (f.broken) {
        f.timings.push_back(BenchTiming::failed("not measured: failed at a smaller size"));
        continue;
      }
      RunOptions fixedOptions = options;
      fixedOptions.reference = f.reference;
      auto t = checkedTiming(**world, instanceOf(f), fixedOptions);
      if (!t) {
        f.broken = true;
        f.timings.push_back(BenchTiming::failed(toString(t.takeError())));
      } else {
        f.timings.push_back(std::move(*t));
      }
    }
    // A close call is timed again, both sides alike: where dispatch came out slower than the
    // best fixed variant, the two are timed kRetimeRounds more times, alternately, and each
    // keeps its fastest. Run-to-run noise of a few percent is the size of the bar itself.
    const size_t i = dispatched.size() - 1;
    const SizeVerdict first = judgeAt(i);
    const bool close = first.best >= 0 && first.ratio > 1.0 && dispatched[i].ok();
    retimed.push_back(close);
    auto timeAgain = [&](CollectiveInstance& instance, const RunOptions& options,
                         BenchTiming& kept) -> Error {
      auto again = checkedTiming(**world, instance, options);
      if (!again)
        return again.takeError();
      keepFaster(kept, *again);
      return Error::success();
    };
    if (close) {
      Fixed& best = fixed[size_t(first.best)];
      for (int round = 0; round < kRetimeRounds; ++round) {
        progress.what = "re-timing dispatch and " + best.variant.text() + " at " + size;
        bar.update(progress);
        RunOptions bestOptions = options;
        bestOptions.reference = best.reference;
        Error err = timeAgain(dispatcher->instanceFor(count), dispatchedOptions, dispatched[i]);
        if (!err)
          err = timeAgain(instanceOf(best), bestOptions, best.timings[i]);
        if (err) {
          bar.finish();
          return reportError(std::move(err));
        }
      }
    }
    bar.finish();
    printSize(i);
  }
  bar.finish();

  std::vector<std::vector<BenchTiming>> fixedTimings;
  for (const Fixed& f : fixed)
    fixedTimings.push_back(f.timings);
  const DispatchVerdict verdict = judgeDispatch(dispatched, fixedTimings);

  // Every fixed variant was timed at every size (a failed timing is inf), so each sum covers
  // the same sizes as the per-size best above.
  out << fmt::format("\nsum of us/op over the {} sizes (ratio: fixed / dispatched; above 1: "
                     "dispatch is faster)\n",
                     counts.size());
  out << fmt::format("  {:<40} {:>12.2f}\n", "dispatched", verdict.dispatchedSum);
  std::vector<size_t> bySum(fixed.size());
  for (size_t v = 0; v < bySum.size(); ++v)
    bySum[v] = v;
  std::sort(bySum.begin(), bySum.end(),
            [&](size_t a, size_t b) { return verdict.fixedSums[a] < verdict.fixedSums[b]; });
  for (size_t v : bySum) {
    const double sum = verdict.fixedSums[v];
    out << fmt::format("  {:<40} {:>12} {:>8}\n", fixed[v].variant.text(),
                       std::isfinite(sum) ? fmt::format("{:.2f}", sum) : "inf",
                       std::isfinite(sum) && std::isfinite(verdict.dispatchedSum)
                           ? fmt::format("{:.3f}", sum / verdict.dispatchedSum)
                           : "-");
  }
  for (const Fixed& f : fixed)
    for (size_t i = 0; i < counts.size(); ++i)
      if (f.timings[i].status == BenchTiming::Status::Wrong ||
          (f.timings[i].status == BenchTiming::Status::Failed &&
           f.timings[i].note.rfind("not measured", 0) != 0))
        out << fmt::format("problem: {} at {}: {} {}\n", f.variant.text(),
                           formatTableBytes(counts[i] * elementBytes),
                           statusName(f.timings[i].status), f.timings[i].note);
  std::string also;
  if (verdict.dispatchFailures)
    also += fmt::format("; dispatched wrong or failed at {}", verdict.dispatchFailures);
  if (verdict.uncompared)
    also += fmt::format("; no fixed variant ran at {}", verdict.uncompared);
  if (verdict.wrongFixed)
    also += fmt::format("; {} fixed timings wrong", verdict.wrongFixed);
  out << fmt::format("\nverdict: {} of {} sizes within 3% of the best fixed variant{}\n",
                     verdict.within, counts.size(), also);
  // The second half of the bar: over the whole sweep dispatch is faster than any one variant.
  if (verdict.bestSum >= 0) {
    const double bestSum = verdict.fixedSums[size_t(verdict.bestSum)];
    out << fmt::format("verdict: summed over the sizes, dispatch {} every fixed variant ({:.2f} us "
                       "against {} for the best one, {})\n",
                       verdict.beatsEverySum ? "beats" : "does NOT beat", verdict.dispatchedSum,
                       std::isfinite(bestSum) ? fmt::format("{:.2f}", bestSum) : "inf",
                       fixed[size_t(verdict.bestSum)].variant.text());
  }
  return verdict.met() ? int(kSuccess) : int(kInternalError);
}

} // namespace collc::driver
