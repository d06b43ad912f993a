// `collc bench`: collc's variants over a sweep of message sizes against NCCL in the same run. This
// file chooses what to measure and where (options, variants, sizes, world) and hands the
// measuring to tools/bench/Benchmark.h and the writing to tools/bench/BenchReport.h.
#include "tools/bench/BenchCommand.h"

#include "compiler/DiagnosticText.h"
#include "runtime/Devices.h"
#include "runtime/LocalWorld.h"
#include "runtime/NcclLibrary.h"
#include "runtime/ProcessWorld.h"
#include "runtime/Watchdog.h"
#include "tools/bench/BenchPlot.h"
#include "tools/bench/BenchReport.h"
#include "tools/bench/Benchmark.h"
#include "tools/bench/CompileTimes.h"
#include "tools/bench/DispatchBench.h"
#include "tools/bench/FusedNormBenchCommand.h"
#include "tools/bench/InstanceSpreadBench.h"
#include "tools/bench/SpeedOfLightBench.h"
#include "tools/bench/SweepOptions.h"
#include "tools/command/CommandSupport.h"
#include "tools/command/GpuCommand.h"

#include <algorithm>
#include <ctime>
#include <fmt/format.h>
#include <iostream>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

namespace collc::driver {

namespace {

std::vector<OptionSpec> benchOptions() {
  std::vector<OptionSpec> options = sweepOptions();
  options.insert(
      options.end(),
      {{"csv", "FILE", "also write every row as CSV"},
       {"json", "FILE", "also write every row as JSON"},
       {"plot", "FILE.png", "draw latency against size (python3 with matplotlib)"},
       {"watchdog-cost", "", "also time each variant without the watchdog's bound"},
       {"compile-times", "", "time a cold NVRTC compile and a warm cache hit (no GPU needed)"},
       {"no-nccl", "", "leave NCCL out (its columns read -)"}});
  for (const auto& more :
       {timingOptions(), procsOptions(), variantOptions(), dispatchBenchOptions(),
        instanceSpreadBenchOptions(), speedOfLightBenchOptions()})
    options.insert(options.end(), more.begin(), more.end());
  // The defaults that differ from the other commands'.
  for (OptionSpec& option : options) {
    if (option.name == "dtype")
      option.help = "element type: " + nameList<DType>() + " (default bf16, the goals' type)";
    else if (option.name == "ranks")
      option.help = "ranks, one per GPU (default: every GPU, at least 2)";
    else if (option.name == "sync")
      option.help = "sync strategy, or 'all' for every one the spec accepts (default: the "
                    "spec's own)";
  }
  options.push_back({"help", "", "show this help"});
  return options;
}

} // namespace

const Command kBenchCommand{
    "bench",
    "bench SPEC|all [--sync=S|all] [--dtype=T] [--op=O] [--ranks=R | --procs=N]\n"
    "                   [-b 1K] [-e 64M] [-f 2] [--csv=FILE] [--json=FILE] [--plot=FILE.png]\n"
    "                   [--watchdog-cost] [--compile-times]\n"
    "       collc bench --compile-times [variant options]\n"
    "       collc bench [SPEC] --dispatch [--table=FILE] [-b 1K] [-e 64M] [-f 2]\n"
    "       collc bench allreduce_rmsnorm [--hidden=H] [--dtype=T] [--sync=S] [--ranks=R]",
    "Time collc's variants over a sweep of message sizes, in the spirit of nccl-tests, against\n"
    "NCCL's same collective measured in the same run (plain buffers and symmetric windows). "
    "Every\n"
    "size of every variant, and of NCCL, is checked against a float64 reference on fresh data\n"
    "before its time counts.",
    "Variants: SPEC (a stdlib name or a path), or every stdlib spec for 'all', with --sync S\n"
    "(default: each spec's own strategy). --sync all tries every strategy; one that a spec\n"
    "refuses is named in one line and skipped.\n"
    "\n"
    "Sizes: -b to -e bytes per rank, times -f each step (as nccl-tests' -b -e -f); a size that "
    "is\n"
    "not a whole number of elements is left out, with a note. Each variant is made ready once,\n"
    "for the largest size, in one world for the whole run.\n"
    "\n"
    "Timing (docs/performance.md): per size, a CUDA graph of --graph-ops (at least 50)\n"
    "back-to-back calls per rank, replayed --replays (at least 5) times after a warm-up; us/op "
    "is\n"
    "the median replay of the slowest rank divided by the calls. algbw = bytes / time and\n"
    "busbw = algbw * the collective's bus factor in GB/s, as nccl-tests define them (allreduce\n"
    "2(n-1)/n; allgather, reducescatter, alltoall n-1 for one rank's count; broadcast, reduce\n"
    "1). nccl_us and nccl_sym_us are NCCL's own version of the row's kind: ncclAllReduce,\n"
    "ncclAllGather, ncclReduceScatter, ncclBroadcast and ncclReduce (root --root), and for\n"
    "alltoall ncclSend/ncclRecv to every rank in one group (NCCL has no alltoall call), of the\n"
    "same type, operator and sizes (buffers shaped as NCCL's, n or n*nranks elements) on the "
    "same\n"
    "GPUs, with cudaMalloc buffers and with ncclMemAlloc buffers registered by\n"
    "ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC); a reduce is checked on the root "
    "only.\n"
    "vs_best = the better NCCL time / collc's (above 1: collc is faster). The header's NCCL "
    "line\n"
    "names the calls; CSV and JSON rows carry kind and nccl_collective. A table of the best "
    "collc\n"
    "variant per size follows the rows, one per kind for 'all'.\n"
    "\n"
    "--watchdog-cost also times each variant compiled without the bound on its waits, in turn\n"
    "with the bounded one at every size: no_wd_us, and wd_cost = (us/op - no_wd_us) / no_wd_us.\n"
    "\n"
    "--compile-times times one variant's front end, a cold NVRTC compile (into an empty private\n"
    "cache) and a warm one (a cache hit) against the goals (<= 300 ms cold, <= 1 ms warm): SPEC\n"
    "with its own strategy, or allreduce_oneshot with ll; bf16, 2 ranks, unless --sync, "
    "--dtype,\n"
    "--op or --ranks say otherwise. It needs no GPU; without SPEC it is all that runs.\n"
    "\n"
    "--dispatch times the collective dispatched by size from the tuning table (--table, else\n"
    "the table 'collc tune' writes; SPEC keeps to that spec's rows) next to every fixed variant\n"
    "of the table, size by size: per size the dispatched time against the best fixed one (it\n"
    "must be within 3%), and the sum over sizes of each. Where dispatch comes out slower than\n"
    "the best fixed variant, both are timed twice more, alternately, each keeping its fastest.\n"
    "Exit status 2 when a size is over 3%.\n"
    "See docs/tuning.md.\n"
    "\n"
    "--procs N: one process per GPU, started as 'collc run --procs' does. NCCL is then the same\n"
    "collective of each kind on the world's communicator with plain buffers, timed and checked "
    "by\n"
    "collc's harness; symmetric windows are measured in one-process mode only.\n"
    "\n"
    "allreduce_rmsnorm (the fused AllReduce + residual add + RMSNorm) is compared instead with\n"
    "what it replaces: allreduce_oneshot (same type and sync) followed by a plain add + RMSNorm\n"
    "kernel, for 1, 2, 4, ..., 128 tokens of --hidden elements (default the spec's 4096). Both\n"
    "are checked against a float64 reference and timed in graphs; the table gives fused us,\n"
    "unfused us and unfused/fused (above 1: the fusion pays). One process, no NCCL, no files.\n"
    "\n"
    "Output: the table on stdout; a progress line on stderr (redrawn in place on a terminal).\n"
    "--csv and --json hold every row, NCCL's figures, the notes and the compile times; --plot\n"
    "draws latency against size on log axes, one line per collc variant and NCCL's two per kind\n"
    "(scripts/plot-bench.py; without matplotlib that part fails with a message, the rest "
    "stands).\n"
    "Exit status: 0 everything measured and correct; 1 a user or environment error (a bad "
    "option,\n"
    "no GPU, no matplotlib for --plot, a file that cannot be written); 2 a wrong result or a\n"
    "failed measurement, each listed under 'problems'.\n",
    benchOptions(),
    0,
    1};

namespace {

/// Everything `collc bench` takes from its options.
struct BenchOptions {
  std::string spec; // SPEC or "all"; empty: --compile-times alone
  CompileOptions compile;
  bool ranksGiven = false;
  bool allSyncs = false; // --sync all
  RunOptions run;        // graphOps, replays, seed
  double timeoutSeconds = defaultWatchdogTimeoutNs() / 1e9;
  uint64_t begin = 1024, end = uint64_t(64) << 20, factor = 2;
  std::string csv, json, plot;
  bool watchdogCost = false, compileTimes = false, nccl = true;
};

bool parseOptions(const ParsedArguments& args, BenchOptions& o, std::string& error) {
  if (!args.positionals().empty())
    o.spec = args.positionals()[0];
  o.compile.dtype = DType::BF16;
  o.ranksGiven = args.has("ranks");
  o.allSyncs = args.get("sync") == std::optional<std::string>("all");
  if (!parseVariant(args, o.compile, error, /*syncMayBeAll=*/true))
    return false;
  if (!parseTimingOptions(args, o.run, o.timeoutSeconds, error))
    return false;
  if (o.run.graphOps < 50 || o.run.replays < 5)
    return error =
               "--graph-ops must be at least 50 and --replays at least 5 (docs/performance.md); "
               "'collc run' times with fewer",
           false;
  if (!parseSweep(args, o.begin, o.end, o.factor, "measure", error))
    return false;
  o.csv = args.get("csv").value_or("");
  o.json = args.get("json").value_or("");
  o.plot = args.get("plot").value_or("");
  o.watchdogCost = args.has("watchdog-cost");
  o.compileTimes = args.has("compile-times");
  o.nccl = !args.has("no-nccl");
  if (o.spec.empty() && !o.compileTimes)
    return error = "'collc bench' needs SPEC (or 'all'), or --compile-times; usage: collc " +
                   kBenchCommand.synopsis,
           false;
  if (o.spec.empty() && (!o.plot.empty() || args.has("procs")))
    return error = "--plot and --procs need SPEC (or 'all'): --compile-times alone measures no "
                   "latency",
           false;
  return true;
}

BenchHeader makeHeader(const BenchOptions& o, int nranks, std::string gpu, std::string processes) {
  BenchHeader header;
  header.collcVersion = COLLC_VERSION;
  header.gitCommit = COLLC_GIT_COMMIT;
  header.nvrtcVersion = nvrtcVersionString();
  header.ncclVersion = ncclVersionString();
  header.date = utcNow();
  header.gpu = std::move(gpu);
  header.dtype = std::string(name(o.compile.dtype));
  header.op = std::string(name(o.compile.op));
  header.nranks = nranks;
  header.elementBytes = int(sizeOf(o.compile.dtype));
  header.processes = std::move(processes);
  header.graphOps = o.run.graphOps;
  header.replays = o.run.replays;
  return header;
}

/// A variant whose generated CUDA NVRTC refused: a fault of collc, shown as failed rows.
struct JitFailure {
  std::string spec, sync, launch, error;
  CollectiveKind kind = CollectiveKind::AllReduce; // for its row's NCCL figures
};

struct VariantPlan {
  std::vector<BenchVariant> variants; // compiled; cubins once jitVariants ran
  std::vector<JitFailure> jitFailures;
  std::vector<std::string> notes; // strategies refused, sizes left out
};

/// Compiles every spec x strategy for `nranks` (front end only). A refused combination becomes
/// a note; when every one is refused their diagnostics are printed and the status is 1.
int compileVariants(const BenchOptions& o, int nranks, VariantPlan& plan) {
  std::vector<std::string> specs =
      o.spec == "all" ? stdlibNames() : std::vector<std::string>{o.spec};
  std::vector<std::optional<SyncKind>> syncs = {o.compile.sync};
  if (o.allSyncs)
    syncs.assign(std::begin(kAllSyncKinds), std::end(kAllSyncKinds));
  std::string refusals;
  for (const std::string& specName : specs) {
    auto source = loadSpec(specName);
    if (!source)
      return reportError(source.takeError());
    for (std::optional<SyncKind> sync : syncs) {
      CompileOptions options = o.compile;
      options.nranks = nranks;
      options.sync = sync;
      std::shared_ptr<const ir::Program> reference;
      options.specProgram = &reference;
      std::string diagnostics;
      DiagnosticText diag(diagnostics);
      auto compiled = compileCollective(*source, options, diag);
      if (!compiled) {
        consumeError(compiled.takeError());
        if (refusals.find(diag.str()) == std::string::npos) // one spec's error, once
          refusals += diag.str();
        plan.notes.push_back(fmt::format("skipped {}/{}: {}", specName,
                                         sync ? name(*sync) : "(its own sync)",
                                         firstError(diag.str())));
        continue;
      }
      if (!compiled->aux.empty()) { // a fused epilogue: its buffers are not the sweep's
        plan.notes.push_back(fmt::format("skipped {}: a fused epilogue, which collc bench cannot "
                                         "feed and check yet",
                                         specName));
        continue;
      }
      BenchVariant variant;
      variant.spec = compiled->specName;
      variant.reference = std::move(reference);
      options.specProgram = nullptr;
      variant.sync = std::string(name(compiled->sync));
      if (o.watchdogCost) {
        options.watchdog = false;
        auto unbounded = compileCollective(*source, options, std::cerr);
        if (!unbounded)
          return reportError(unbounded.takeError());
        variant.unbounded = std::move(*unbounded);
      }
      variant.compiled = std::move(*compiled);
      plan.variants.push_back(std::move(variant));
    }
  }
  if (plan.variants.empty()) {
    llvm::errs() << refusals;
    return usageError("nothing to measure: the compiler refused every variant asked for");
  }
  return kSuccess;
}

/// NVRTC for every variant (and its unbounded twin) for `device`. One that fails moves to
/// plan.jitFailures, to be reported as failed rows.
void jitVariants(VariantPlan& plan, int device) {
  std::vector<BenchVariant> ready;
  for (BenchVariant& variant : plan.variants) {
    auto fail = [&](Error err) {
      plan.jitFailures.push_back({variant.spec, variant.sync, launchText(variant.compiled.launch),
                                  toString(std::move(err)), variant.compiled.kind});
    };
    auto image = compileForDevice(variant.compiled, device);
    if (!image) {
      fail(image.takeError());
      continue;
    }
    variant.cubin = std::move(image->image);
    if (!variant.unbounded.cudaSource.empty()) {
      auto twin = compileForDevice(variant.unbounded, device);
      if (!twin) {
        fail(twin.takeError());
        continue;
      }
      variant.unboundedCubin = std::move(twin->image);
    }
    ready.push_back(std::move(variant));
  }
  plan.variants = std::move(ready);
}

/// Elements per rank of each size of the sweep; sizes that are not whole elements become notes.
std::vector<uint64_t> sweepCounts(const BenchOptions& o, std::vector<std::string>& notes) {
  const uint64_t elementBytes = sizeOf(o.compile.dtype);
  std::vector<uint64_t> counts;
  for (uint64_t bytes : sweepSizes(o.begin, o.end, o.factor)) {
    if (bytes % elementBytes == 0)
      counts.push_back(bytes / elementBytes);
    else
      notes.push_back(fmt::format("left out {} bytes: not a whole number of {} elements", bytes,
                                  name(o.compile.dtype)));
  }
  return counts;
}

/// "[12/54] allreduce_oneshot/ll 64 KiB ...": redrawn in place on a terminal, a line each
/// otherwise (a log, or a rank whose output the launcher forwards).
class ProgressLine {
public:
  ProgressLine(int total, bool enabled)
      : total_(total), enabled_(enabled), terminal_(enabled && isatty(STDERR_FILENO)) {}
  ~ProgressLine() { finish(); }
  void show(const std::string& what) {
    if (!enabled_)
      return;
    std::string line = fmt::format("[{}/{}] {} ...", ++done_, total_, what);
    if (terminal_)
      llvm::errs() << "\r\033[K" << line;
    else
      llvm::errs() << line << "\n";
    llvm::errs().flush();
    shown_ = true;
  }
  /// Clears the line, so that what follows starts on a clean one.
  void finish() {
    if (terminal_ && shown_)
      llvm::errs() << "\r\033[K";
    shown_ = false;
  }

private:
  int total_, done_ = 0;
  bool enabled_, terminal_, shown_ = false;
};

BenchSettings benchSettings(const BenchOptions& o, std::vector<uint64_t> counts,
                            ProgressLine& progress) {
  BenchSettings settings;
  settings.counts = std::move(counts);
  settings.graphOps = o.run.graphOps;
  settings.replays = o.run.replays;
  settings.seed = o.run.seed;
  settings.timeoutNs = uint64_t(o.timeoutSeconds * 1e9);
  settings.progress = [&progress](const std::string& what) { progress.show(what); };
  return settings;
}

/// NCCL's collective for each kind of the (compiled) variants, in order: what their rows are
/// compared with. Variants of one kind share type, operator and root (the options').
std::vector<NcclCollective> ncclCollectives(const VariantPlan& plan) {
  std::vector<NcclCollective> collectives;
  for (const BenchVariant& variant : plan.variants)
    if (std::none_of(collectives.begin(), collectives.end(),
                     [&](const NcclCollective& c) { return c.kind == variant.compiled.kind; }))
      collectives.push_back(ncclCollectiveOf(variant.compiled));
  return collectives;
}

/// The kinds of every row the table will hold (NVRTC's failures too), for the header.
std::string planKinds(const VariantPlan& plan) {
  std::vector<CollectiveKind> kinds;
  auto add = [&](CollectiveKind kind) {
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
      kinds.push_back(kind);
  };
  for (const BenchVariant& variant : plan.variants)
    add(variant.compiled.kind);
  for (const JitFailure& failure : plan.jitFailures)
    add(failure.kind);
  return kindList(kinds);
}

int progressSteps(const BenchOptions& o, const VariantPlan& plan, size_t sizes, int ncclRuns) {
  return int(plan.variants.size() * sizes * (o.watchdogCost ? 2 : 1) +
             (o.nccl ? ncclCollectives(plan).size() * sizes * ncclRuns : 0));
}

void printNotes(const std::vector<std::string>& notes) {
  for (const std::string& note : notes)
    llvm::errs() << "collc bench: " << note << "\n";
}

/// Writes `path` with `write`; the exit status. `quiet`: without the "wrote" line.
int writeFile(const std::string& path, const std::function<void(llvm::raw_ostream&)>& write,
              bool quiet) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec)
    return usageError("cannot write " + path + ": " + ec.message());
  write(out);
  out.close();
  if (out.has_error()) {
    out.clear_error();
    return usageError("cannot write " + path);
  }
  if (!quiet)
    llvm::errs() << "collc bench: wrote " << path << "\n";
  return kSuccess;
}

/// The CSV and the JSON of `results`, each where its path is not empty; the exit status.
int writeDataFiles(const BenchResults& results, const std::string& csvPath,
                   const std::string& jsonPath, bool quiet) {
  int status = kSuccess;
  if (!csvPath.empty() &&
      writeFile(
          csvPath, [&](llvm::raw_ostream& out) { writeCsv(out, results); }, quiet))
    status = kUserError;
  if (!jsonPath.empty() &&
      writeFile(
          jsonPath, [&](llvm::raw_ostream& out) { writeJson(out, results); }, quiet))
    status = kUserError;
  return status;
}

/// Shows the results as they come, in the order a reader wants them: the header and the table's
/// heading (NCCL is measured first, so every row is complete when printed), each row as soon as
/// it is measured, then the best variant per size, the problems and the files. The CSV and JSON
/// are rewritten after every row too, so that a run cut short (a timeout) leaves what it
/// measured. `enabled` false (the ranks other than 0): it only collects.
class LiveReport {
public:
  LiveReport(const BenchOptions& o, BenchResults& results, ProgressLine& progress, bool enabled)
      : o_(o), results_(results), progress_(progress), enabled_(enabled) {}
  ~LiveReport() {
    if (!temporaryJson_.empty())
      llvm::sys::fs::remove(temporaryJson_);
  }

  /// The header and the heading; `variants` are the names the table will hold. Returns the exit
  /// status (a file that cannot be written is found out here, before the long part).
  int start(const std::vector<std::string>& variants) {
    if (!enabled_)
      return kSuccess;
    jsonPath_ = o_.json;
    if (!o_.plot.empty() && jsonPath_.empty()) {
      llvm::SmallString<128> path;
      if (std::error_code ec = llvm::sys::fs::createTemporaryFile("collc-bench", "json", path))
        return usageError("--plot: cannot make a temporary file: " + ec.message());
      jsonPath_ = temporaryJson_ = std::string(path.str());
    }
    if (int status = writeData(/*quiet=*/true); status != kSuccess)
      return status;
    table_ = std::make_unique<TableWriter>(llvm::outs(), results_, variants);
    progress_.finish();
    writeHeader(llvm::outs(), results_.header);
    llvm::outs() << "\n";
    table_->heading();
    llvm::outs().flush();
    return kSuccess;
  }

  void add(const BenchRow& row) {
    results_.rows.push_back(row);
    if (!enabled_)
      return;
    progress_.finish();
    table_->row(row);
    llvm::outs().flush();
    (void)writeData(/*quiet=*/true); // start() found the files writable
  }

  /// Replaces the rows collected so far with `rows` (the same, as the benchmark returns them).
  void setRows(std::vector<BenchRow> rows) { results_.rows = std::move(rows); }

  /// The best variant per size, the problems, the files and the plot. The status: 2 when a
  /// result was wrong or a measurement failed; else 1 when a file or the plot could not be made.
  int finish() {
    if (!enabled_)
      return kSuccess;
    progress_.finish();
    llvm::raw_ostream& out = llvm::outs();
    out << "\n";
    writeBestPerSize(out, results_);
    if (results_.watchdogCost) {
      out << "\n";
      writeWatchdogCost(out, results_);
    }
    const int failures = results_.failureCount();
    if (failures > 0) {
      out << "\n";
      writeProblems(out, results_);
    }
    out.flush();
    int status = writeData(/*quiet=*/false);
    if (status == kSuccess && !o_.plot.empty())
      status = renderBenchPlot(jsonPath_, o_.plot);
    return failures > 0 ? int(kInternalError) : status;
  }

private:
  int writeData(bool quiet) {
    if (quiet)
      return writeDataFiles(results_, o_.csv, jsonPath_, true);
    // The files the user asked for say that they were written; the plot's own JSON does not.
    int status = writeDataFiles(results_, o_.csv, o_.json, false);
    if (!temporaryJson_.empty() && writeDataFiles(results_, "", temporaryJson_, true))
      status = kUserError;
    return status;
  }

  const BenchOptions& o_;
  BenchResults& results_;
  ProgressLine& progress_;
  bool enabled_;
  std::string jsonPath_, temporaryJson_;
  std::unique_ptr<TableWriter> table_;
};

/// The names the table will hold, for the width of its variant column.
std::vector<std::string> variantNames(const VariantPlan& plan) {
  std::vector<std::string> names;
  for (const BenchVariant& variant : plan.variants)
    names.push_back(
        benchVariantName(variant.spec, variant.sync, launchText(variant.compiled.launch)));
  for (const JitFailure& failure : plan.jitFailures)
    names.push_back(benchVariantName(failure.spec, failure.sync, failure.launch));
  return names;
}

/// Failed rows for the variants NVRTC refused, at every size, after the measured ones.
void addJitFailures(const VariantPlan& plan, const std::vector<uint64_t>& counts,
                    uint64_t elementBytes, LiveReport& live) {
  for (const JitFailure& failure : plan.jitFailures)
    for (uint64_t count : counts) {
      BenchRow row;
      row.spec = failure.spec;
      row.sync = failure.sync;
      row.launch = failure.launch;
      row.kind = failure.kind;
      row.count = count;
      row.bytes = count * elementBytes;
      row.collc = BenchTiming::failed("NVRTC: " + failure.error);
      live.add(row);
    }
}

/// --compile-times: measured first, so that the cold compile is this process's first.
int measureAndPrintCompileTimes(const BenchOptions& o, BenchResults& results) {
  const bool namedSpec = !o.spec.empty() && o.spec != "all";
  CompileOptions options = o.compile;
  if (!o.ranksGiven)
    options.nranks = 2;
  if (!options.sync && !namedSpec)
    options.sync = SyncKind::LL;
  auto spec = loadSpec(namedSpec ? o.spec : "allreduce_oneshot");
  if (!spec)
    return reportError(spec.takeError());
  std::string arch = gpuArch(0);
  auto times = measureCompileTimes(*spec, options, arch.empty() ? "sm_90" : arch);
  if (!times)
    return reportError(times.takeError());
  writeCompileTimes(llvm::outs(), *times);
  llvm::outs() << "\n";
  llvm::outs().flush();
  results.compileTimes = *times;
  return kSuccess;
}

/// `collc bench --compile-times` without SPEC: nothing else runs, and no GPU is needed.
int compileTimesOnly(const BenchOptions& o) {
  BenchResults results;
  if (int status = measureAndPrintCompileTimes(o, results); status != kSuccess)
    return status;
  auto gpus = gpuCount();
  std::string gpu = gpus ? gpuName(0) : "none (" + toString(gpus.takeError()) + ")";
  if (gpu.rfind("none", 0) == 0)
    llvm::outs() << "no GPU here: compile times need none; the latency benchmark (collc bench "
                    "SPEC|all) needs GPUs\n";
  results.header = makeHeader(o, o.ranksGiven ? o.compile.nranks : 2, gpu, "compile times only");
  return writeDataFiles(results, o.csv, o.json, /*quiet=*/false);
}

/// How a mode measures once its variants are compiled: where NCCL runs, where collc's variants
/// run, and whether this process reports.
struct SweepMode {
  int ncclRunsPerSize = 2; // plain and symmetric windows; 1: plain only
  bool reporter = true;
  std::function<Expected<std::vector<NcclPoint>>(const BenchSettings&)> nccl;
  std::function<Expected<std::vector<BenchRow>>(const BenchSettings&)> collc;
};

/// NCCL, then collc's variants, shown as they come (LiveReport). The exit status.
int sweep(const BenchOptions& o, const VariantPlan& plan, const std::vector<uint64_t>& counts,
          BenchResults& results, const SweepMode& mode) {
  results.notes = plan.notes;
  results.watchdogCost = o.watchdogCost;
  if (!o.nccl)
    results.header.ncclNote = "not measured (--no-nccl)";
  ProgressLine progress(progressSteps(o, plan, counts.size(), mode.ncclRunsPerSize), mode.reporter);
  BenchSettings settings = benchSettings(o, counts, progress);
  // NCCL first (its same collective for each kind), so that each collc row is complete when it
  // is printed.
  if (o.nccl && !plan.variants.empty()) {
    auto points = mode.nccl(settings);
    if (points)
      results.nccl = std::move(*points);
    else
      results.header.ncclNote = "not measured: " + toString(points.takeError());
  }
  LiveReport live(o, results, progress, mode.reporter);
  if (int status = live.start(variantNames(plan)); status != kSuccess)
    return status;
  settings.rowDone = [&live](const BenchRow& row) { live.add(row); };
  if (!plan.variants.empty()) {
    auto rows = mode.collc(settings);
    if (!rows)
      return reportError(rows.takeError());
    live.setRows(std::move(*rows));
  }
  addJitFailures(plan, counts, sizeOf(o.compile.dtype), live);
  // In a process-per-GPU world wrong results are known to every rank (the harness gathers the
  // verdicts): rank 0's status speaks for the world, and another rank failing here would make
  // the launcher stop rank 0 before it reports.
  int status = live.finish();
  return mode.reporter ? status : int(kSuccess);
}

/// The first variant of `kind` (ncclCollectives makes one collective per kind of the plan).
const BenchVariant& likeOf(const VariantPlan& plan, CollectiveKind kind) {
  return *std::find_if(plan.variants.begin(), plan.variants.end(),
                       [&](const BenchVariant& v) { return v.compiled.kind == kind; });
}

/// One process drives every rank: NcclBaseline, then a LocalWorld for collc's variants.
int benchLocal(const BenchOptions& o, BenchResults& results) {
  int nranks = o.compile.nranks;
  std::vector<int> devices;
  if (int status = chooseLocalDevices(
          "bench", "(the latency benchmark needs GPUs; collc bench --compile-times needs none)",
          o.ranksGiven, nranks, devices);
      status != kSuccess)
    return status;
  VariantPlan plan;
  if (int status = compileVariants(o, nranks, plan); status != kSuccess)
    return status;
  std::vector<uint64_t> counts = sweepCounts(o, plan.notes);
  if (counts.empty())
    return usageError("no size of the sweep is a whole number of elements");
  printNotes(plan.notes);
  jitVariants(plan, devices[0]);

  results.header =
      makeHeader(o, nranks, gpuName(devices[0]), fmt::format("one process drives {} GPUs", nranks));
  results.header.kind = planKinds(plan);
  const std::vector<NcclCollective> collectives = ncclCollectives(plan);
  results.header.ncclNote = ncclNote(collectives, /*oneProcess=*/true);
  SweepMode mode;
  // NcclBaseline's communicators and memory are gone before collc's world is made.
  // Each kind's NCCL collective is checked against the spec of the first variant of that kind.
  std::vector<std::shared_ptr<const ir::Program>> references;
  for (const NcclCollective& collective : collectives)
    references.push_back(likeOf(plan, collective.kind).reference);
  mode.nccl = [&](const BenchSettings& settings) {
    return benchNcclBaseline(devices, collectives, references, settings);
  };
  mode.collc = [&](const BenchSettings& settings) -> Expected<std::vector<BenchRow>> {
    auto world = LocalWorld::create(devices, benchHeapBytes(plan.variants, counts.back()));
    if (!world)
      return world.takeError();
    return benchVariants(**world, plan.variants, settings);
  };
  return sweep(o, plan, counts, results, mode);
}

/// One rank of a process-per-GPU world: every process makes the same calls; rank 0 reports.
int benchRank(const BenchOptions& o, const LaunchEnvironment& env, BenchResults& results) {
  if (o.ranksGiven && o.compile.nranks != env.worldSize)
    return usageError(fmt::format("--ranks={} but the launcher started {} processes ({}={})",
                                  o.compile.nranks, env.worldSize, env.source, env.worldSize));
  const int rank = env.rank;
  VariantPlan plan;
  if (int status = compileVariants(o, env.worldSize, plan); status != kSuccess)
    return status;
  std::vector<uint64_t> counts = sweepCounts(o, plan.notes);
  if (counts.empty())
    return usageError("no size of the sweep is a whole number of elements");
  if (rank == 0)
    printNotes(plan.notes);
  // The heap is sized from the front end's output, before the world (and so the GPU) exists.
  ProcessWorldOptions worldOptions;
  worldOptions.heapBytes = benchHeapBytes(plan.variants, counts.back());
  auto world = ProcessWorld::fromEnvironment(worldOptions);
  if (!world)
    return reportError(world.takeError());
  const int device = (*world)->device(rank);
  jitVariants(plan, device);

  results.header = makeHeader(o, env.worldSize, gpuName(device),
                              fmt::format("one process per GPU ({} processes; {})", env.worldSize,
                                          (*world)->pathDescription()));
  results.header.kind = planKinds(plan);
  results.header.ncclNote = ncclNote(ncclCollectives(plan), /*oneProcess=*/false);
  SweepMode mode;
  mode.ncclRunsPerSize = 1;
  mode.reporter = rank == 0;
  // Each kind's NCCL collective in turn, like the first variant of that kind. After a failure the
  // processes may be out of step: the kinds after it are not measured, and the note says so.
  mode.nccl = [&](const BenchSettings& settings) -> Expected<std::vector<NcclPoint>> {
    std::vector<NcclPoint> points;
    for (const NcclCollective& collective : ncclCollectives(plan)) {
      const BenchVariant& like = likeOf(plan, collective.kind);
      auto measured = benchNcclInWorld(**world, like.compiled, like.reference, settings);
      if (!measured) {
        if (points.empty())
          return measured.takeError();
        results.header.ncclNote +=
            fmt::format("; {} and the kinds after it not measured: {}", name(collective.kind),
                        toString(measured.takeError()));
        break;
      }
      const bool failed =
          !measured->empty() && measured->back().plain.status == BenchTiming::Status::Failed;
      points.insert(points.end(), measured->begin(), measured->end());
      if (failed) {
        results.header.ncclNote += fmt::format(
            "; NCCL's {} failed, so the kinds after it are not measured", name(collective.kind));
        break;
      }
    }
    return points;
  };
  mode.collc = [&](const BenchSettings& settings) -> Expected<std::vector<BenchRow>> {
    auto rows = benchVariants(**world, plan.variants, settings);
    if (!rows)
      return onRank(rank, rows.takeError());
    return rows;
  };
  return sweep(o, plan, counts, results, mode);
}

} // namespace

int runBench(const ParsedArguments& args) {
  if (!args.positionals().empty() && args.positionals()[0] == kFusedNormBenchSpec &&
      !args.has("dispatch"))
    return runFusedNormBench(args);
  if (args.has("dispatch"))
    return runDispatchBench(args);
  if (args.has("instances"))
    return runInstanceSpreadBench(args);
  if (args.has("speed-of-light"))
    return runSpeedOfLightBench(args);
  for (const char* option : {"table", "every-variant", "fixed-first", "own-instances"})
    if (args.has(option))
      return usageError(std::string("--") + option + " goes with --dispatch");
  BenchOptions o;
  std::string error;
  if (!parseOptions(args, o, error))
    return usageError(error);
  if (o.spec.empty())
    return compileTimesOnly(o);
  // A misspelt spec is reported as such, before anything asks for a GPU.
  if (o.spec != "all")
    if (auto spec = loadSpec(o.spec); !spec)
      return reportError(spec.takeError());
  auto role = chooseWorldRole(args);
  if (!role)
    return reportError(role.takeError());
  BenchResults results;
  switch (role->kind) {
  case WorldRole::Launcher:
    // Compile times are measured by rank 0, which writes the results.
    return launchProcs(args, "bench",
                       o.ranksGiven ? std::optional<int>(o.compile.nranks) : std::nullopt,
                       [&](int processes) {
                         VariantPlan plan;
                         return compileVariants(o, processes, plan);
                       });
  case WorldRole::Rank:
    if (o.compileTimes && role->env.rank == 0)
      if (int status = measureAndPrintCompileTimes(o, results); status != kSuccess)
        return status;
    return benchRank(o, role->env, results);
  case WorldRole::OneProcess:
    break;
  }
  if (o.compileTimes)
    if (int status = measureAndPrintCompileTimes(o, results); status != kSuccess)
      return status;
  return benchLocal(o, results);
}

} // namespace collc::driver
