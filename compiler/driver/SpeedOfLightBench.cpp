#include "SpeedOfLightBench.h"

#include "Commands.h"
#include "GpuCommand.h"
#include "runtime/Devices.h"
#include "runtime/SpeedOfLight.h"
#include "runtime/collc_abi.h"

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
  double timeoutSeconds = 5;
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
                     "of the input, read after the wait)\n\n",
                     report->exchangeReadUs);
  auto gridText = [](const SpeedOfLightGrid& grid) {
    return fmt::format("{}x{}", grid.blocks, grid.threads);
  };
  out << fmt::format("{:>8} {:>15} {:>9} {:>18} {:>17} {:>9} {:>15} {:>18} {:>18}\n", "bytes",
                     "copy+signal_us", "grid", "GB/s_per_direction", "sentinel_copy_us", "grid",
                     "copy_engine_us", "GB/s_per_direction", "ce_exchanged_us");
  for (const CopyFloor& floor : report->copies)
    out << fmt::format(
        "{:>8} {:>15.2f} {:>9} {:>18.1f} {:>17.2f} {:>9} {:>15.2f} {:>18.1f} {:>18.2f}\n",
        sizeText(floor.bytes), floor.us, gridText(floor.grid), double(floor.bytes) / floor.us / 1e3,
        floor.sentinelUs, gridText(floor.sentinelGrid), floor.copyEngineUs,
        double(floor.bytes) / floor.copyEngineUs / 1e3, floor.copyEngineOrderedUs);
  out << "\ncopy+signal: every rank stores BYTES into every peer's memory (16-byte vectors), each "
         "block fences and\nsignals its peer block and waits for the peer's signal: a one-shot "
         "AllReduce without its reduction,\nand on 2 ranks the bytes a two-shot moves per "
         "direction. sentinel copy: the same bytes, the data its own\nsignal (a received word "
         "is 0 until it lands; the reader checks it and puts 0 back), as collc's sentinel\n"
         "strategy moves them. copy engine: the same bytes copied by cudaMemcpyAsync, every "
         "rank at once, no\nsignal and no SM: the link's bandwidth with both directions loaded "
         "(a bound on bandwidth, not on\nlatency). ce_exchanged: "
         "the same copies, each between two flag exchanges (before: the inputs\nare ready; "
         "after: the bytes landed), the least a collective costs whose copy engines move the "
         "data\nand whose kernels must know it. The kernels are each the best of the grids ";
  const auto& grids = speedOfLightGrids();
  for (size_t i = 0; i < grids.size(); ++i)
    out << (i == 0 ? "" : i + 1 == grids.size() ? " and " : ", ") << gridText(grids[i]);
  out << ".\n";

  out << "\nwhere a sentinel copy's call goes, at its best grid: means over the calls of one "
         "traced graph, block 0's\nthread 0, each GPU's own clock (globaltimer), in us\n";
  out << fmt::format("{:>8} {:>5} {:>7} {:>14} {:>16} {:>15} {:>20} {:>7}\n", "bytes", "rank",
                     "calls", "wait->pushed", "pushed->arrived", "arrived->ended",
                     "ended->next_waited", "sum");
  for (const CopyFloor& floor : report->copies)
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
  return kSuccess;
}

} // namespace collc::driver
