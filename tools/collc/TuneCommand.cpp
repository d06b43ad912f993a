// `collc tune`: searches the variants of a collective on this machine's GPUs
// (tools/tune/TuneSearch.h decides what to try, tools/bench/Benchmark.h times each as `collc bench`
// does) and writes every timing to the tuning table (runtime/TuningTable.h) that dispatch reads.
#include "compiler/DiagnosticText.h"
#include "pipeline/TunedOptions.h"
#include "runtime/Devices.h"
#include "runtime/Dispatcher.h"
#include "runtime/HeapSize.h"
#include "runtime/LocalWorld.h"
#include "runtime/Watchdog.h"
#include "tools/bench/Benchmark.h"
#include "tools/bench/SweepOptions.h"
#include "tools/collc/Commands.h"
#include "tools/command/GpuCommand.h"
#include "tools/tune/TuneProgressBar.h"
#include "tools/tune/TuneSearch.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <ctime>
#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>
#include <map>

namespace collc::driver {

namespace {

std::vector<OptionSpec> tuneOptions() {
  std::vector<OptionSpec> options = {
      {"ranks", "R", "ranks, one per GPU (default: every GPU, at least 2)"},
      {"dtype", "T", "element type: " + nameList<DType>() + " (default bf16)"},
      {"op", "O", "reduction: " + nameList<ReduceOp>() + " (default sum)"},
      {"sync", "S", "sync strategy to search, or 'all' (default all)"}};
  for (const OptionSpec& option : sweepOptions())
    options.push_back(option);
  options.insert(
      options.end(),
      {{"o", "TABLE", "the tuning table to write (default: see below)"},
       {"keep", "K", "(algorithm, sync) pairs per size that stage 2 refines (default 2)"},
       {"quick", "", "a shorter search: 1 pair per size, blocks and threads only, 5 replays"},
       {"dry-run", "", "print what would be searched and which variants compile; no GPU needed"}});
  for (const OptionSpec& option : timingOptions())
    options.push_back(option);
  options.push_back({"help", "", "show this help"});
  return options;
}

} // namespace

const Command kTuneCommand{
    "tune",
    "tune SPEC|all [--ranks=R] [--dtype=T] [--op=O] [-b 1K] [-e 64M] [-f 2] [-o TABLE]\n"
    "                  [--sync=S|all] [--keep=K] [--quick] [--dry-run]",
    "Search the variants of an AllReduce on this machine's GPUs and write every timing to the\n"
    "tuning table that dispatch by size reads (docs/tuning.md).",
    "Variants: the algorithm (every stdlib allreduce spec for 'all', or SPEC), the sync "
    "strategy\n"
    "(every one the spec accepts for --sync all; one it refuses is recorded as inf), and the\n"
    "launch shape: blocks (1, 2, 4, ..., 64 and the GPU's multiprocessor count: every block of "
    "a\n"
    "rank must be resident), threads (128, 256, 512, 1024; 32 and 64 in balanced shapes),\n"
    "vector width (4, 8, 16 bytes), unroll (1, 2) and whole stores (0, 1: a vector stored by "
    "one\n"
    "instruction). The search has three stages, not the full cross product:\n"
    "  stage 1: every algorithm x sync at the spec's own launch shape, at every size;\n"
    "  stage 2: balanced shapes, with the threads that give each thread about one vector\n"
    "           (blocks and threads interact): per size, every pair at the most blocks, then\n"
    "           the best two pairs so far (or --keep, if more) at every block count; then the\n"
    "           best --keep pairs so far improved one knob at a time (blocks, threads, vector,\n"
    "           unroll, whole stores), each knob tried at every value with the others at their\n"
    "           best so far (whole stores at every thread count too);\n"
    "  stage 3: cross-check: the two fastest variants of every size, timed at every size they\n"
    "           were not timed at (stage 2 refines each size on its own); then where a size's\n"
    "           two fastest are within 3%, both timed once more, keeping the faster time.\n"
    "--quick does not search vector and unroll, but keeps whole stores and stage 3.\n"
    "Each variant is timed as 'collc bench' times it: checked against a float64 reference on\n"
    "fresh data, then a CUDA graph of --graph-ops calls replayed --replays times, the slowest\n"
    "rank's median counting. One that fails to compile, fails to run or gives a wrong result\n"
    "scores inf (its row says why) and the search goes on.\n"
    "\n"
    "The table: -o TABLE, else $COLLC_TUNING_TABLE, else $XDG_CONFIG_HOME/collc/tuning.tsv, "
    "else\n"
    "~/.config/collc/tuning.tsv. Its rows for this machine's key (GPU model, ranks, topology,\n"
    "allreduce, dtype, op) at the sizes swept are replaced; rows of other keys, and of this key\n"
    "below or above the sweep (a sweep tuned in pieces), are kept. Every measurement is a\n"
    "row; the fastest of each size is marked '*'. A malformed existing table is reported\n"
    "(file:line) and left as it is.\n"
    "\n"
    "Progress goes to stderr with the time left: one line redrawn on a terminal, a line per\n"
    "tenth of the work otherwise. The winners per size are printed on stdout at the end.\n"
    "Ctrl-C (SIGINT) or SIGTERM stops the search after the variant being timed and writes the\n"
    "table with what was measured (its header says so; with nothing measured, it is left as it\n"
    "was); a second one stops at once.\n"
    "One process drives every GPU (no --procs). Exit status: 0 the table was written; 1 a user\n"
    "or environment error (a bad option, no GPU, a table that cannot be read or written); 2 no\n"
    "variant was correct at some size; 130 or 143 stopped by SIGINT or SIGTERM (the table was\n"
    "written).\n",
    tuneOptions(),
    1,
    0};

namespace {

struct TuneOptions {
  std::string spec;
  CompileOptions compile; // dtype, op, nranks
  bool ranksGiven = false;
  std::vector<std::optional<SyncKind>> syncs;
  RunOptions run;
  double timeoutSeconds = defaultWatchdogTimeoutNs() / 1e9;
  uint64_t begin = 1024, end = uint64_t(64) << 20, factor = 2;
  std::string output;
  int keep = 2;
  bool quick = false, dryRun = false;
};

bool parseOptions(const ParsedArguments& args, TuneOptions& o, std::string& error) {
  o.spec = args.positionals()[0];
  o.compile.dtype = DType::BF16;
  o.ranksGiven = args.has("ranks");
  if (!parseVariant(args, o.compile, error, /*syncMayBeAll=*/true))
    return false;
  if (!args.get("sync") || *args.get("sync") == "all")
    o.syncs.assign(std::begin(kAllSyncKinds), std::end(kAllSyncKinds));
  else
    o.syncs = {o.compile.sync};
  o.quick = args.has("quick");
  o.dryRun = args.has("dry-run");
  if (o.quick)
    o.run.replays = 5;
  if (!parseTimingOptions(args, o.run, o.timeoutSeconds, error))
    return false;
  if (o.run.graphOps < 50 || o.run.replays < 5)
    return error = "--graph-ops must be at least 50 and --replays at least 5 "
                   "(docs/performance.md)",
           false;
  if (!parseSweep(args, o.begin, o.end, o.factor, "tune", error))
    return false;
  o.keep = o.quick ? 1 : 2;
  if (auto text = args.get("keep")) {
    auto value = parseSize(*text);
    if (!value || *value > 16)
      return error = "--keep takes a number from 0 to 16, not '" + *text + "'", false;
    o.keep = int(*value);
  }
  o.output = args.get("o").value_or(defaultTuningTablePath());
  if (o.output.empty())
    return error = "no place for the table: give -o TABLE, or set COLLC_TUNING_TABLE or HOME",
           false;
  return true;
}

/// The specs to search: SPEC, or every stdlib spec that is an AllReduce.
Expected<std::vector<std::string>> searchedSpecs(const TuneOptions& o) {
  if (o.spec != "all") {
    if (auto spec = loadSpec(o.spec); !spec)
      return spec.takeError();
    return std::vector<std::string>{o.spec};
  }
  std::vector<std::string> specs;
  for (const std::string& name : stdlibNames()) {
    auto source = loadSpec(name);
    if (!source)
      return source.takeError();
    CompileOptions options = o.compile;
    options.sync.reset();
    std::string ignored;
    DiagnosticText diag(ignored);
    auto compiled = compileCollective(*source, options, diag);
    // A fused epilogue (aux buffers) is not an AllReduce the dispatch can stand in for.
    if (compiled && compiled->kind == CollectiveKind::AllReduce && compiled->aux.empty())
      specs.push_back(name);
    else if (!compiled)
      consumeError(compiled.takeError());
  }
  return specs;
}

/// A variant compiled (front end and NVRTC), or why not; compiled once per process.
struct Prepared {
  BenchVariant bench;
  TunedVariant resolved;
  std::string refusal; // non-empty: not measurable
};

class VariantCompiler {
public:
  VariantCompiler(const TuneOptions& o, int device) : o_(o), device_(device) {}

  const Prepared& get(const TunedVariant& variant) {
    auto [it, inserted] = cache_.try_emplace(variant);
    if (inserted) {
      it->second = prepare(variant);
      // Stage 3's re-timing may ask for a stage-1 variant in its resolved form (every knob set,
      // as its measurements name it): the spec's defaults spelled out, the same kernel, so it
      // is not compiled a second time.
      if (it->second.refusal.empty() && it->second.resolved != variant)
        cache_.try_emplace(it->second.resolved, it->second);
    }
    return it->second;
  }

  /// Front end only: whether the compiler accepts the variant, and its resolved form.
  Prepared frontEnd(const TunedVariant& variant) const {
    Prepared prepared;
    prepared.resolved = variant;
    auto source = loadSpec(variant.spec);
    if (!source) {
      prepared.refusal = "refused: " + toString(source.takeError());
      return prepared;
    }
    CompileOptions options = o_.compile;
    applyTunedVariant(variant, options);
    options.specProgram = &prepared.bench.reference;
    std::string diagnostics;
    DiagnosticText diag(diagnostics);
    auto compiled = compileCollective(*source, options, diag);
    if (!compiled) {
      consumeError(compiled.takeError());
      prepared.refusal = "refused: " + firstError(diag.str());
      return prepared;
    }
    const LaunchShape& shape = compiled->launch;
    prepared.resolved = TunedVariant(variant.spec, compiled->sync, shape.blocks, shape.threads,
                                     shape.vectorBytes, shape.unroll, shape.wholeStores);
    prepared.bench.spec = variant.spec;
    prepared.bench.sync = std::string(name(compiled->sync));
    prepared.bench.compiled = std::move(*compiled);
    return prepared;
  }

private:
  Prepared prepare(const TunedVariant& variant) {
    Prepared prepared = frontEnd(variant);
    if (!prepared.refusal.empty())
      return prepared;
    auto image = compileForDevice(prepared.bench.compiled, device_);
    if (!image)
      prepared.refusal = "NVRTC failed: " + toString(image.takeError());
    else
      prepared.bench.cubin = std::move(image->image);
    return prepared;
  }

  const TuneOptions& o_;
  int device_;
  std::map<TunedVariant, Prepared> cache_;
};

TuneSpace makeSpace(const TuneOptions& o, std::vector<std::string> specs, int multiprocessors) {
  TuneSpace space;
  space.specs = std::move(specs);
  space.syncs = o.syncs;
  space.keepPerSize = o.keep;
  for (int blocks : {1, 2, 4, 8, 16, 32, 64})
    if (multiprocessors <= 0 || blocks < multiprocessors)
      space.blocks.push_back(blocks);
  if (multiprocessors > 0)
    space.blocks.push_back(multiprocessors);
  space.threads = {128, 256, 512, 1024};
  // Whole stores even in a quick search: the one knob past the grid measured to move a time by
  // more than its noise (8% at 1M-4M one way, 3% at 64K the other; docs/tuning.md).
  space.wholeStores = {0, 1};
  if (!o.quick) {
    space.vectorBytes = {4, 8, 16};
    space.unrolls = {1, 2};
  }
  return space;
}

std::string orFailed(const std::string& why) {
  return why.empty() ? "failed" : why;
}

/// Times `variant` at `sizes` with benchVariants (the way `collc bench` does).
std::vector<TuneMeasurement> measureInWorld(LocalWorld& world, VariantCompiler& compiler,
                                            const TuneOptions& o, const TunedVariant& variant,
                                            const std::vector<uint64_t>& sizes,
                                            const std::function<void(uint64_t)>& before) {
  const Prepared& prepared = compiler.get(variant);
  std::vector<TuneMeasurement> out;
  auto allFail = [&](const std::string& why) {
    for (uint64_t bytes : sizes) {
      before(bytes);
      TuneMeasurement m;
      m.variant = prepared.resolved;
      m.bytes = bytes;
      m.note = why;
      m.refused = why.rfind("refused: ", 0) == 0;
      out.push_back(std::move(m));
    }
    return out;
  };
  if (!prepared.refusal.empty())
    return allFail(prepared.refusal);
  const uint64_t elementBytes = sizeOf(o.compile.dtype);
  const uint64_t need = heapBytesFor(prepared.bench.compiled, sizes.back() / elementBytes);
  if (need > world.heapBytes() - world.heapUsed())
    return allFail(fmt::format("FAILED: needs {} bytes of symmetric heap; {} are free", need,
                               world.heapBytes() - world.heapUsed()));
  BenchSettings settings;
  for (uint64_t bytes : sizes)
    settings.counts.push_back(bytes / elementBytes);
  settings.graphOps = o.run.graphOps;
  settings.replays = o.run.replays;
  settings.seed = o.run.seed;
  settings.timeoutNs = uint64_t(o.timeoutSeconds * 1e9);
  size_t next = 0;
  settings.progress = [&](const std::string&) {
    if (next < sizes.size())
      before(sizes[next++]);
  };
  auto rows = benchVariants(world, {prepared.bench}, settings);
  if (!rows)
    return allFail("FAILED: " + toString(rows.takeError()));
  while (next < sizes.size()) // sizes not measured after a failure still count as done
    before(sizes[next++]);
  for (const BenchRow& row : *rows) {
    TuneMeasurement m;
    m.variant = prepared.resolved;
    m.bytes = row.bytes;
    switch (row.collc.status) {
    case BenchTiming::Status::Ok:
      m.us = row.collc.us;
      break;
    case BenchTiming::Status::Wrong:
      m.note = "WRONG: " + orFailed(row.collc.note);
      break;
    case BenchTiming::Status::Failed:
      m.note = "FAILED: " + orFailed(row.collc.note);
      break;
    case BenchTiming::Status::NotRun:
      m.note = orFailed(row.collc.note);
      break;
    }
    out.push_back(std::move(m));
  }
  return out;
}

/// The signal that asked the running tune to stop (SIGINT or SIGTERM), 0 while none has.
volatile std::sig_atomic_t gStopSignal = 0;

extern "C" void requestTuneStop(int signal) {
  gStopSignal = signal;
}

/// While alive, SIGINT (Ctrl-C) and SIGTERM (a time limit) ask the search to stop before its next
/// variant, so that the table keeps what was measured; a second one ends the process at once, as
/// it would have without this.
class StopOnSignal {
public:
  StopOnSignal() {
    gStopSignal = 0;
    install(SIGINT, oldInterrupt_);
    install(SIGTERM, oldTerminate_);
  }
  ~StopOnSignal() {
    sigaction(SIGINT, &oldInterrupt_, nullptr);
    sigaction(SIGTERM, &oldTerminate_, nullptr);
  }
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

  int signal() const { return gStopSignal; }

private:
  static void install(int signal, struct sigaction& old) {
    struct sigaction action {};
    action.sa_handler = requestTuneStop;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND; // the second signal takes the default action
    sigaction(signal, &action, &old);
  }
  struct sigaction oldInterrupt_ = {};
  struct sigaction oldTerminate_ = {};
};

/// The table at `path` with `rows` replacing its rows of `key`, written through a temporary
/// file and a rename. An existing table that does not parse is left alone: an error.
int writeTable(const std::string& path, const TuningKey& key, std::vector<TuningRow> rows,
               const std::string& command, const std::vector<std::string>& refused) {
  TuningTable table;
  table.path = path;
  if (llvm::sys::fs::exists(path)) {
    auto existing = readTuningTable(path);
    if (!existing) {
      llvm::errs() << "collc tune: " << toString(existing.takeError()) << "\n";
      return usageError("the existing table " + path +
                        " is malformed; fix it or give another -o (nothing was written)");
    }
    table = std::move(*existing);
  }
  if (table.header.empty())
    table.header = {"collc tuning table: every timing `collc tune` measured; the fastest of each",
                    "range is marked * in 'best'. A row speaks for from <= bytes per rank < to.",
                    "Columns are separated by spaces or tabs; '*' in a key column matches any",
                    "value, '-' in a launch column is the spec's own. Edit freely: see",
                    "docs/tuning.md in the collc sources."};
  table.header.push_back(fmt::format("{}: {} (collc {}, commit {})", utcNow(), command,
                                     COLLC_VERSION, COLLC_GIT_COMMIT));
  // The refusals of the last run only: they are the same every run.
  const std::string refusedPrefix = "not run, the compiler refused it: ";
  table.header.erase(
      std::remove_if(table.header.begin(), table.header.end(),
                     [&](const std::string& line) { return line.rfind(refusedPrefix, 0) == 0; }),
      table.header.end());
  for (const std::string& line : refused)
    table.header.push_back(refusedPrefix + line);
  replaceKeyRows(table, key, std::move(rows));
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (!dir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(dir))
      return usageError("cannot make the directory " + std::string(dir) + ": " + ec.message());
  const std::string temporary = path + ".tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(temporary, ec);
    if (ec)
      return usageError("cannot write " + temporary + ": " + ec.message());
    out << tuningTableText(table);
    out.close();
    if (out.has_error()) {
      out.clear_error();
      return usageError("cannot write " + temporary);
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path))
    return usageError("cannot rename " + temporary + " to " + path + ": " + ec.message());
  return kSuccess;
}

/// The winners per size on stdout, against the best of stage 1 (the specs' own shapes).
int printWinners(const std::vector<TuneMeasurement>& all, const std::vector<uint64_t>& sizes,
                 size_t stage1) {
  std::vector<TuneMeasurement> first(all.begin(), all.begin() + std::min(stage1, all.size()));
  llvm::outs() << fmt::format("{:>10}  {:<44} {:>10} {:>14} {:>8}\n", "bytes", "best variant",
                              "us/op", "own-shape us", "gain");
  int missing = 0;
  for (uint64_t bytes : sizes) {
    const TuneMeasurement* best = bestAt(all, bytes);
    const TuneMeasurement* own = bestAt(first, bytes);
    if (!best) {
      ++missing;
      llvm::outs() << fmt::format("{:>10}  {:<44}\n", formatTableBytes(bytes),
                                  "no variant was correct");
      continue;
    }
    llvm::outs() << fmt::format("{:>10}  {:<44} {:>10.2f} {:>14} {:>8}\n", formatTableBytes(bytes),
                                best->variant.text(), best->us,
                                own ? fmt::format("{:.2f}", own->us) : "-",
                                own ? fmt::format("{:.1f}%", (own->us / best->us - 1) * 100) : "-");
  }
  return missing;
}

/// --dry-run: the space, and which stage-1 variants compile, without a GPU.
int dryRun(const TuneOptions& o, const TuneSpace& space, const std::vector<uint64_t>& sizes) {
  VariantCompiler compiler(o, 0);
  llvm::outs() << fmt::format("tune {} for {} ranks, {} {}, {} sizes from {} to {}\n", o.spec,
                              o.compile.nranks, name(o.compile.dtype), name(o.compile.op),
                              sizes.size(), formatTableBytes(sizes.front()),
                              formatTableBytes(sizes.back()));
  int compiles = 0;
  llvm::outs() << "stage 1 (algorithm x sync, at each spec's own launch shape):\n";
  for (const std::string& spec : space.specs)
    for (const std::optional<SyncKind>& sync : space.syncs) {
      Prepared prepared = compiler.frontEnd(TunedVariant(spec, sync));
      compiles += prepared.refusal.empty();
      llvm::outs() << "  " << prepared.resolved.text() << ": "
                   << (prepared.refusal.empty() ? "compiles" : prepared.refusal) << "\n";
    }
  auto list = [](const std::vector<int>& values) {
    return values.empty() ? std::string("not searched")
                          : fmt::format("{}", fmt::join(values, ", "));
  };
  llvm::outs() << fmt::format(
      "stage 2 (balanced shapes, then the best {} pairs per size one knob at a time):\n"
      "  balanced shapes: the threads that give each thread about one vector, for every pair at\n"
      "    the most blocks, then for the best {} pairs per size at every block count\n"
      "  blocks: {} (up to the GPU's multiprocessors)\n"
      "  threads: {}\n  vector: {}\n  unroll: {}\n  whole stores: {} (each at every thread "
      "count)\n",
      space.keepPerSize, std::max(space.keepPerSize, space.balancedPairsPerSize),
      list(space.blocks), list(space.threads), list(space.vectorBytes), list(space.unrolls),
      list(space.wholeStores));
  const size_t n = sizes.size();
  const size_t stage2 = size_t(balancedShapesBound(space, int(n)).total()) +
                        n * size_t(space.keepPerSize) *
                            (space.blocks.size() + space.threads.size() + space.vectorBytes.size() +
                             space.unrolls.size() +
                             space.wholeStores.size() * std::max<size_t>(1, space.threads.size()));
  // Stage 3 runs only after stage 2 (keep 0: neither), and adds no compiles: its variants were
  // compiled for stages 1 and 2.
  const size_t finalists = space.keepPerSize > 0 ? size_t(space.finalistsPerSize) : 0;
  const size_t retime = finalists > 0 && space.retimeWithin > 0 ? 2 * n : 0;
  const size_t stage3 = finalists * n * (n - 1) + retime;
  if (finalists > 0)
    llvm::outs() << fmt::format(
        "stage 3 (cross-check: the fastest {} of each size, timed at every other size{})\n",
        finalists,
        retime ? fmt::format("; a size's first two re-timed when within {:g}%",
                             space.retimeWithin * 100)
               : "");
  llvm::outs() << fmt::format("at most {} measurements ({} in stage 1, {} in stage 3); table: "
                              "{}\n",
                              space.specs.size() * space.syncs.size() * n + stage2 + stage3,
                              space.specs.size() * space.syncs.size() * n, stage3, o.output);
  return compiles > 0 ? int(kSuccess) : usageError("no variant compiles");
}

} // namespace

int runTune(const ParsedArguments& args) {
  TuneOptions o;
  std::string error;
  if (!parseOptions(args, o, error))
    return usageError(error);
  auto specs = searchedSpecs(o);
  if (!specs)
    return reportError(specs.takeError());
  if (specs->empty())
    return usageError("no stdlib spec is an allreduce");
  const uint64_t elementBytes = sizeOf(o.compile.dtype);
  std::vector<uint64_t> sizes;
  for (uint64_t bytes : sweepSizes(o.begin, o.end, o.factor)) {
    if (bytes % elementBytes == 0)
      sizes.push_back(bytes);
    else
      llvm::errs() << fmt::format("collc tune: left out {} bytes: not a whole number of {} "
                                  "elements\n",
                                  bytes, name(o.compile.dtype));
  }
  if (sizes.empty())
    return usageError("no size of the sweep is a whole number of elements");

  if (o.dryRun) {
    if (!o.ranksGiven)
      o.compile.nranks = 2;
    return dryRun(o, makeSpace(o, *specs, 0), sizes);
  }
  int nranks = o.compile.nranks;
  std::vector<int> devices;
  if (int status = chooseLocalDevices("tune", "(collc tune --dry-run shows the search without one)",
                                      o.ranksGiven, nranks, devices);
      status != kSuccess)
    return status;
  o.compile.nranks = nranks;
  TuneSpace space = makeSpace(o, *specs, multiprocessorCount(devices[0]));

  // The heap: the largest of stage 1's variants at the largest size; stage 2 varies the launch
  // shape only, which moves the flags (a few KiB), not the scratch, and stage 3 times stage 2's
  // shapes at sizes up to the largest as well.
  VariantCompiler compiler(o, devices[0]);
  uint64_t heap = 0;
  for (const std::string& spec : space.specs)
    for (const std::optional<SyncKind>& sync : space.syncs) {
      Prepared prepared = compiler.frontEnd(TunedVariant(spec, sync));
      if (prepared.refusal.empty())
        heap = std::max(heap, heapBytesFor(prepared.bench.compiled, sizes.back() / elementBytes));
    }
  heap += uint64_t(1) << 20;
  auto world = LocalWorld::create(devices, heap);
  if (!world)
    return reportError(world.takeError());
  const TuningKey key{gpuModelKey(gpuName(devices[0])), nranks,          localTopologyName(devices),
                      CollectiveKind::AllReduce,        o.compile.dtype, o.compile.op};
  llvm::errs() << fmt::format("collc tune: {} on {} x {} ({}), {} {}, {} sizes; table {}\n", o.spec,
                              nranks, key.gpu, key.topology, name(o.compile.dtype),
                              name(o.compile.op), sizes.size(), o.output);

  TuneProgressBar bar;
  StopOnSignal stopOnSignal;
  std::vector<TuneMeasurement> all = runTuneSearch(
      space, sizes,
      [&](const TunedVariant& variant, const std::vector<uint64_t>& at,
          const std::function<void(uint64_t)>& before) {
        return measureInWorld(**world, compiler, o, variant, at, before);
      },
      [&](const TuneProgress& progress) { bar.update(progress); },
      [&] { return stopOnSignal.signal() != 0; });
  bar.finish();
  const int stoppedBy = stopOnSignal.signal();
  if (stoppedBy) {
    const char* signal = stoppedBy == SIGINT ? "SIGINT" : "SIGTERM";
    if (all.empty()) {
      llvm::errs() << fmt::format("collc tune: stopped by {} before anything was measured; the "
                                  "table was left as it was\n",
                                  signal);
      return 128 + stoppedBy;
    }
    llvm::errs() << fmt::format("collc tune: stopped by {} after {} measurements; the table keeps "
                                "them, its marks are the fastest of what was measured\n",
                                signal, all.size());
  }
  const size_t stage1 = space.specs.size() * space.syncs.size() * sizes.size();
  int missing = printWinners(all, sizes, stage1);
  std::string command = "collc tune " + o.spec;
  for (const char* option : {"ranks", "dtype", "op", "sync", "b", "e", "f", "keep"})
    if (auto value = args.get(option))
      command += std::string(option).size() == 1 // the sweep's -b -e -f, as nccl-tests spells them
                     ? fmt::format(" -{} {}", option, *value)
                     : fmt::format(" --{}={}", option, *value);
  if (o.quick)
    command += " --quick";
  if (stoppedBy)
    command += fmt::format(" (stopped after {} measurements, before the search ended)", all.size());
  // A variant timed twice at one size is one row (its faster time), so rows <= measurements.
  const std::vector<TuningRow> rows = tuningRows(all, sizes, key);
  if (int status = writeTable(o.output, key, rows, command, refusedVariants(all));
      status != kSuccess)
    return status;
  llvm::outs() << fmt::format("wrote {} rows ({} measurements) for {} ranks={} {} allreduce {} {} "
                              "to {}{}\n",
                              rows.size(), all.size(), key.gpu, nranks, key.topology,
                              name(o.compile.dtype), name(o.compile.op), o.output,
                              rows.empty() ? " (nothing was measured: the rows it had are kept)"
                                           : "");
  if (stoppedBy)
    return 128 + stoppedBy; // as a shell reports a command a signal ended
  return missing > 0 ? int(kInternalError) : int(kSuccess);
}

} // namespace collc::driver
