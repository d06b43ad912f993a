#include "tools/bench/SpeedOfLightBench.h"

#include "abi/collc_abi.h"
#include "runtime/Devices.h"
#include "runtime/Watchdog.h"
#include "tools/bench/SpeedOfLight.h"
#include "tools/bench/SweepOptions.h"
#include "tools/command/CommandSupport.h"
#include "tools/command/GpuCommand.h"

#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>

namespace collc::driver {

std::vector<OptionSpec> speedOfLightBenchOptions() {
  return {{"speed-of-light", "",
           "measure this machine's floors (empty kernel, flag exchange, copy to the peers per "
           "size) instead of a spec"}};
}

namespace {

// What the probes have no use for: they run no spec and no NCCL, in one process.
constexpr const char* kSpecOnlyOptions[] = {
    "sync",    "dtype",  "op",       "root",  "blocks", "threads",       "vector",
    "unroll",  "hidden", "csv",      "json",  "plot",   "watchdog-cost", "compile-times",
    "no-nccl", "procs",  "dispatch", "table", "seed",   "whole-stores"};

std::string sizeText(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
    return fmt::format("{}M", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0)
    return fmt::format("{}K", bytes >> 10);
  return fmt::format("{}", bytes);
}

std::string gridText(const SpeedOfLightGrid& grid) {
  return fmt::format("{}x{}", grid.blocks, grid.threads);
}

/// "a, b and c".
std::string listText(const std::vector<std::string>& items) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i)
    text += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return text;
}

/// The copies of every size: the SMs' (copy + signal, sentinel) and the copy engines'.
void printCopyFloors(llvm::raw_ostream& out, const SpeedOfLightReport& report) {
  out << fmt::format("{:>8} {:>15} {:>9} {:>18} {:>17} {:>9} {:>13} {:>15} {:>18} {:>18}\n",
                     "bytes", "copy+signal_us", "grid", "GB/s_per_direction", "sentinel_copy_us",
                     "grid", "allreduce_us", "copy_engine_us", "GB/s_per_direction",
                     "ce_exchanged_us");
  for (const CopyFloor& floor : report.copies)
    out << fmt::format("{:>8} {:>15.2f} {:>9} {:>18.1f} {:>17.2f} {:>9} {:>13.2f} {:>15.2f} "
                       "{:>18.1f} {:>18.2f}\n",
                       sizeText(floor.bytes), floor.us, gridText(floor.grid),
                       double(floor.bytes) / floor.us / 1e3, floor.sentinelUs,
                       gridText(floor.sentinelGrid), floor.handWrittenAllReduceUs,
                       floor.copyEngineUs, double(floor.bytes) / floor.copyEngineUs / 1e3,
                       floor.copyEngineOrderedUs);
  out << "\ncopy+signal: every rank stores BYTES into every peer's memory (16-byte vectors), "
         "each "
         "block fences and\nsignals its peer block and waits for the peer's signal: a one-shot "
         "AllReduce without its reduction,\nand on 2 ranks the bytes a two-shot moves per "
         "direction. sentinel copy: the same bytes, the data its own\nsignal (a received word "
         "is 0 until it lands; the reader checks it and puts 0 back), as collc's sentinel\n"
         "strategy moves them. allreduce: the sentinel copy at its grid, each thread also adding "
         "what it took\nto its own input (bf16) and storing the sum, checked: a one-shot "
         "AllReduce "
         "written by hand, as lean\nas it can be, against which collc's own reads. "
         "copy engine: the same bytes copied by cudaMemcpyAsync, every "
         "rank at once, no\nsignal and no SM: the link's bandwidth with both directions loaded "
         "(a bound on bandwidth, not on\nlatency). ce_exchanged: "
         "the same copies, each between two flag exchanges (before: the inputs\nare ready; "
         "after: the bytes landed), the least a collective costs whose copy engines move the "
         "data\nand whose kernels must know it. The kernels are each the best of the grids ";
  std::vector<std::string> grids;
  for (const SpeedOfLightGrid& grid : speedOfLightGrids())
    grids.push_back(gridText(grid));
  out << listText(grids) << ".\n";
}

/// The copy engines and the SMs at once: the best share of every size, then every share.
void printSplitFloors(llvm::raw_ostream& out, const SpeedOfLightReport& report) {
  out << "\ncopy engines and SMs at once: the copy engines move a share of each copy "
         "(cudaMemcpyAsync on a second\nbranch of the graph), a plain copy kernel at the "
         "copy+signal's grid moves the rest\n";
  out << fmt::format("{:>8} {:>9} {:>9} {:>18} {:>21} {:>9}\n", "bytes", "split_us", "ce_share",
                     "GB/s_per_direction", "split_exchanged_us", "ce_share");
  auto shareText = [](double share) { return fmt::format("{:.1f}%", share * 100); };
  for (const CopyFloor& floor : report.copies) {
    if (floor.split.us <= 0) {
      out << fmt::format("{:>8} {:>9} (fewer than two vectors: not split)\n", sizeText(floor.bytes),
                         "-");
      continue;
    }
    out << fmt::format("{:>8} {:>9.2f} {:>9} {:>18.1f} {:>21.2f} {:>9}\n", sizeText(floor.bytes),
                       floor.split.us, shareText(floor.split.share),
                       double(floor.bytes) / floor.split.us / 1e3, floor.splitOrdered.us,
                       shareText(floor.splitOrdered.share));
  }
  std::vector<std::string> shares;
  for (double share : splitEngineShares())
    shares.push_back(shareText(share));
  out << "split: each engine's copies back to back on its own branch, the branches meeting only "
         "at the graph's end:\nwhether both engines together move bytes faster than either "
         "alone. split_exchanged: per operation a\nflag exchange, both copies side by side, an "
         "exchange after both: the least a collective costs that\nsplits its bytes between the "
         "engines. Each at the fastest share of "
      << listText(shares) << " for the copy engines.\n";

  out << "\nthe split at every share of the copy engines: unordered / between two exchanges, in "
         "us\n";
  out << fmt::format("{:>8}", "bytes");
  for (const std::string& share : shares)
    out << fmt::format(" {:>17}", share);
  out << "\n";
  for (const CopyFloor& floor : report.copies) {
    out << fmt::format("{:>8}", sizeText(floor.bytes));
    if (floor.splits.empty())
      out << " (not split)";
    for (const SplitTiming& timing : floor.splits)
      out << fmt::format(" {:>17}", fmt::format("{:.2f} / {:.2f}", timing.us, timing.orderedUs));
    out << "\n";
  }
}

/// Where a sentinel copy's call goes, per size and rank.
void printSentinelTraces(llvm::raw_ostream& out, const SpeedOfLightReport& report) {
  out << "\nwhere a sentinel copy's call goes, at its best grid: means over the calls of one "
         "traced graph, block 0's\nthread 0, each GPU's own clock (globaltimer), in us\n";
  out << fmt::format("{:>8} {:>5} {:>7} {:>14} {:>16} {:>15} {:>20} {:>7}\n", "bytes", "rank",
                     "calls", "wait->pushed", "pushed->arrived", "arrived->ended",
                     "ended->next_waited", "sum");
  for (const CopyFloor& floor : report.copies)
    for (size_t r = 0; r < floor.breakdown.size(); ++r) {
      const CallBreakdown& b = floor.breakdown[r];
      out << fmt::format("{:>8} {:>5} {:>7} {:>14.2f} {:>16.2f} {:>15.2f} {:>20.2f} {:>7.2f}\n",
                         sizeText(floor.bytes), r, b.calls, b.waitedToPushedUs, b.pushedToArrivedUs,
                         b.arrivedToEndedUs, b.endedToNextWaitedUs,
                         b.waitedToPushedUs + b.pushedToArrivedUs + b.arrivedToEndedUs +
                             b.endedToNextWaitedUs);
    }
  out << "wait->pushed: the input read and the stores issued (not landed; the epoch was read "
         "before the wait,\nas collc's kernels read it); pushed->arrived: until the thread's "
         "vectors from every peer landed;\narrived->ended: the rest of the thread's work; "
         "ended->next_waited: from that end until the next\ncall's wait for it returned, the "
         "kernel boundary. The sum is one call's period on that rank.\n";
  out << "\nthe same calls over the whole grid: first and last block or thread at each point, in "
         "us\n";
  out << fmt::format("{:>8} {:>5} {:>8} {:>11} {:>22} {:>15} {:>20} {:>22} {:>7}\n", "bytes",
                     "rank", "release", "last_push", "first_wait->first_in", "first->last_in",
                     "last_in->last_ended", "last_ended->next_wait", "sum");
  for (const CopyFloor& floor : report.copies)
    for (size_t r = 0; r < floor.breakdown.size(); ++r) {
      const GridBreakdown& g = floor.breakdown[r].grid;
      out << fmt::format("{:>8} {:>5} {:>8.2f} {:>11.2f} {:>22.2f} {:>15.2f} {:>20.2f} {:>22.2f} "
                         "{:>7.2f}\n",
                         sizeText(floor.bytes), r, g.releaseSpreadUs, g.firstWaitedToLastPushedUs,
                         g.firstWaitedToFirstArrivedUs, g.arrivalSpreadUs,
                         g.lastArrivedToLastEndedUs, g.lastEndedToNextWaitedUs, gridPeriodUs(g));
    }
  out << "release: from the first block's wait returning to the last's; last_push: from the "
         "first block's\nwait to the last thread's stores issued (both within the next column);\n"
         "first_wait->first_in: from the first block's wait to the first thread whose "
         "vectors from every\npeer had landed; first->last_in: to the last such thread; "
         "last_in->last_ended: until the last\nblock ended; last_ended->next_wait: until the "
         "next "
         "call's first wait returned. The sum is one\ncall's period on that rank. Each block "
         "writes its records after its end is taken, so what the\ntrace costs falls in "
         "last_ended->next_wait. Columns that compare times of different warps can\nbe off by "
         "a few hundredths: the warps' readings of the timer disagree by that much.\n";
}

} // namespace

int runSpeedOfLightBench(const ParsedArguments& args) {
  if (!args.positionals().empty())
    return usageError("--speed-of-light measures the machine, not a spec: leave out '" +
                      args.positionals()[0] + "'");
  for (const char* option : kSpecOnlyOptions)
    if (args.has(option))
      return usageError(fmt::format("--{} does not apply to --speed-of-light", option));
  uint64_t begin = 1024, end = 64ull << 20, factor = 4;
  std::string error;
  if (!parseSweep(args, begin, end, factor, "copy sizes", error))
    return usageError(error);
  RunOptions run;
  double timeoutSeconds = defaultWatchdogTimeoutNs() / 1e9;
  if (!parseTimingOptions(args, run, timeoutSeconds, error))
    return usageError(error);

  SpeedOfLightSettings settings;
  for (uint64_t bytes = begin; bytes <= end; bytes *= factor) {
    if (bytes % 16 != 0)
      return usageError(fmt::format("--speed-of-light copies 16-byte vectors: {} bytes is not a "
                                    "multiple of 16",
                                    bytes));
    settings.sizes.push_back(bytes);
    if (factor == 1)
      break;
  }
  settings.graphOps = run.graphOps;
  settings.replays = run.replays;
  settings.timeoutNs = uint64_t(timeoutSeconds * 1e9);
  settings.progress = [](const std::string& what) {
    llvm::errs() << "\r\x1b[Kmeasuring " << what;
    llvm::errs().flush();
  };

  std::vector<int> devices;
  int nranks = 0;
  if (auto ranks = args.get("ranks")) {
    auto value = parseSize(*ranks);
    if (!value || *value < 2 || *value > COLLC_MAX_RANKS)
      return usageError(
          fmt::format("--ranks takes a number of GPUs from 2 to {}", COLLC_MAX_RANKS));
    nranks = int(*value);
  }
  if (int status = chooseLocalDevices("bench --speed-of-light", "(the probes need 2 or more GPUs)",
                                      /*ranksGiven=*/args.has("ranks"), nranks, devices);
      status != kSuccess)
    return status;
  auto report = measureSpeedOfLight(devices, settings);
  llvm::errs() << "\r\x1b[K";
  if (!report)
    return reportError(report.takeError());

  auto& out = llvm::outs();
  out << fmt::format("speed of light on {} x {}, one process drives every GPU; per operation in a "
                     "CUDA graph of {} launches, median of {} replays, slowest rank; every "
                     "kernel a programmatic dependent launch\n",
                     devices.size(), gpuName(devices[0]), settings.graphOps, settings.replays);
  out << fmt::format("empty kernel:                        {:8.2f} us\n", report->emptyUs);
  out << fmt::format("flag exchange (every pair of ranks): {:8.2f} us\n", report->exchangeUs);
  out << fmt::format("the same after an input read:        {:8.2f} us (each flag carries a word "
                     "of the input, read after the wait)\n",
                     report->exchangeReadUs);
  out << fmt::format("the same, writing what it received:  {:8.2f} us (a local store after the "
                     "peer's flag arrived, which\n{:46}the next kernel waits for: the least any "
                     "collective with a result costs)\n\n",
                     report->exchangeReadWriteUs, "");
  printCopyFloors(out, *report);
  printSplitFloors(out, *report);
  printSentinelTraces(out, *report);
  return kSuccess;
}

} // namespace collc::driver
