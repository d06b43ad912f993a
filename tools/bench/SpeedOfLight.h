// What this machine allows any collective, measured the way `collc bench` measures collectives
// (docs/performance.md: per rank a CUDA graph of back-to-back launches, replayed; the slowest
// rank's median replay / launches), so that a collective's time can be read against the floor
// under it instead of against a figure from elsewhere:
//   - empty: a kernel that only waits for its predecessor and releases its successor (programmatic
//     dependent launch, as collc's kernels are launched): the cost of one kernel in a graph;
//   - exchange: each rank's block 0 stores a flag into every peer's memory and waits for the
//     peers' flags: the least any collective costs in which every rank hears from every other;
//   - exchange after a read: the same, but each flag carries a word of the input that thread 0
//     reads after the wait, as a collective's first data must be read (the previous kernel may
//     have written it): the least a collective costs that sends anything of its input;
//   - the same, writing what arrived: after the peers' flags arrive, block 0 stores them into its
//     own output, as a collective writes a result that depends on its peers' data (the kernel
//     ends, and the next one's wait returns, only once that store is done): the least a
//     collective costs that reads its input, sends it and writes a result from what it received;
//   - copy + signal at each size: every rank stores `bytes` into every peer's memory with 16-byte
//     vector stores, then each block fences and signals its peer block and waits for the peer's
//     signal: the data movement of a one-shot AllReduce without its reduction (a two-shot moves
//     the same bytes per direction on 2 ranks, in two halves). The best of a few grids counts;
//   - sentinel copy at each size: the same bytes, but the data is its own signal, as in collc's
//     sentinel strategy (a received word reads 0 until it lands; the reader checks it and puts 0
//     back; scratch rotates through three copies by epoch): a one-shot AllReduce without the
//     reduction and without a separate flag. At its best grid the probe also runs with a trace
//     (a separate kernel, so that the timed one carries none): block 0's thread 0 records when
//     each call passed its points, and every block and warp its own, and the means say where a
//     call's time goes (waiting for the previous kernel, pushing, waiting for the data, ending),
//     for one thread and for the whole grid (how far apart the blocks start, how far apart the
//     data arrives).
//   - hand-written AllReduce at each size: the sentinel copy at its best grid, each thread also
//     adding what it received to its own input (bf16, the first vector kept in registers from the
//     push) and storing the sum into its output, checked after timing: a one-shot sentinel
//     AllReduce of bf16 sum as lean as it can be written, against which collc's generated one
//     reads;
//   - copy engine at each size: every rank's stream copies `bytes` into every peer's memory
//     with cudaMemcpyAsync (the copy engines, no SM), all ranks at once and without any signal:
//     the link's bandwidth with both directions loaded, for a copy engine, which no kernel's
//     stores are held to. A bound on bandwidth only: it has no flag and no reduction;
//   - copy engine between two exchanges: the same copies, each between two launches of the flag
//     exchange (before: every rank's input is ready; after: every rank knows its peers' bytes
//     landed), the least a collective costs whose data the copy engines move and whose kernels
//     must know it: what a graph charges to go from a kernel to a copy and back;
//   - split at each size: the copy engines move a share of the bytes and the SMs (a plain copy
//     kernel at the copy + signal's best grid) the rest, side by side on two branches of each
//     rank's graph. Unordered, each engine's copies run back to back on its branch: whether both
//     together move bytes faster than either alone. Between two exchanges, as the copy engines'
//     copy above: the least a collective costs that splits its bytes between them. The best of a
//     few shares counts.
// The probes are hand-written CUDA on the collc_params ABI, compiled with NVRTC; every wait is
// bounded by the watchdog's timeout, and a probe that times out is an error, not a figure.
#ifndef COLLC_TOOLS_BENCH_SPEEDOFLIGHT_H
#define COLLC_TOOLS_BENCH_SPEEDOFLIGHT_H

#include "runtime/Status.h"
#include "runtime/Watchdog.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace collc {

struct SpeedOfLightGrid {
  int blocks = 1;
  int threads = 128;
};

/// The grids the copy probe tries at every size: one small block for latency, many blocks of few
/// threads (one vector per thread at 16-64 KiB), up to one block per multiprocessor of an H200
/// for bandwidth.
const std::vector<SpeedOfLightGrid>& speedOfLightGrids();

struct SpeedOfLightSettings {
  std::vector<uint64_t> sizes; // bytes per rank sent to each peer, ascending, multiples of 16
  int graphOps = 50;           // launches captured back to back in each rank's graph
  int replays = 7;             // timed replays after one untimed warm-up; the median counts
  uint64_t timeoutNs =
      defaultWatchdogTimeoutNs(); // a probe's wait gives up after this long: an error
  /// Called before each measurement with what it is ("copy 64K 32x512"); may be empty.
  std::function<void(const std::string& what)> progress;
};

/// The same calls over the whole grid: when the first and the last block or thread passed each
/// point. The last four follow each other, so they sum to a call's period as block 0's four do;
/// the first two lie beside them, inside the first of the four.
struct GridBreakdown {
  double releaseSpreadUs = 0;             // from the first block's wait returning to the last's
  double firstWaitedToLastPushedUs = 0;   // from the first block's wait to the last thread's stores
                                          // issued
  double firstWaitedToFirstArrivedUs = 0; // from the first block's wait to the first thread's
                                          // vectors from every peer landed
  double arrivalSpreadUs = 0;             // from there until the last thread's had
  double lastArrivedToLastEndedUs = 0;    // from there until the last block ended
  double lastEndedToNextWaitedUs = 0;     // from there until the next call's first wait returned
};

/// A call's period as the whole grid's chain measures it.
inline double gridPeriodUs(const GridBreakdown& g) {
  return g.firstWaitedToFirstArrivedUs + g.arrivalSpreadUs + g.lastArrivedToLastEndedUs +
         g.lastEndedToNextWaitedUs;
}

/// Where one rank's calls of the sentinel copy spend their time: means over consecutive calls, in
/// µs, of block 0's thread 0 and of the whole grid (globaltimer, so each figure is on one GPU's
/// clock).
struct CallBreakdown {
  int calls = 0;                  // consecutive calls the means are over (0: no trace)
  double waitedToPushedUs = 0;    // from the previous kernel's end being seen to own stores issued
  double pushedToArrivedUs = 0;   // from there until its own vectors from every peer arrived
  double arrivedToEndedUs = 0;    // from there until the block's end
  double endedToNextWaitedUs = 0; // from that end to the next call's wait returning
  GridBreakdown grid;             // the same calls, the whole grid
};

/// The copy engines and the SMs moving one copy between them at once, at one share of the bytes
/// for the copy engines, or at the share that was fastest.
struct SplitFloor {
  double us = 0;    // per operation; 0: not measured (fewer than two vectors)
  double share = 0; // of the bytes, the copy engines'
};

/// The split copy at one share, both ways.
struct SplitTiming {
  double share = 0;     // of the bytes, the copy engines'
  double us = 0;        // unordered, per operation
  double orderedUs = 0; // between two flag exchanges, per operation
};

struct CopyFloor {
  uint64_t bytes = 0;
  double us = 0;                        // per operation, the best grid's
  SpeedOfLightGrid grid;                // that grid
  double sentinelUs = 0;                // the sentinel copy per operation, its best grid's
  SpeedOfLightGrid sentinelGrid;        // that grid
  double handWrittenAllReduceUs = 0;    // the sentinel copy with a bf16 sum and its output, there
  std::vector<CallBreakdown> breakdown; // per rank, the sentinel copy at its grid, traced
  double copyEngineUs = 0;              // the copy engines' copy per operation
  double copyEngineOrderedUs = 0;       // the same between two flag exchanges, per operation
  SplitFloor split;                     // copy engines and SMs (at `grid`) at once, unordered
  SplitFloor splitOrdered;              // the same, each operation between two flag exchanges
  std::vector<SplitTiming> splits;      // every share measured, ascending
};

struct SpeedOfLightReport {
  double emptyUs = 0;        // per launch of an empty kernel in a graph
  double exchangeUs = 0;     // per flag exchange between every pair of ranks
  double exchangeReadUs = 0; // the same, each flag carrying a word of input read after the wait
  double exchangeReadWriteUs = 0; // the same, then storing what arrived into a local output
  std::vector<CopyFloor> copies;
};

/// The shares of a copy's bytes the split probe gives the copy engines (the SMs move the rest).
const std::vector<double>& splitEngineShares();
/// The copy engines' bytes of a split copy of `bytes` at `share`: whole 16-byte vectors, at
/// least one and leaving the SMs at least one; 0 where `bytes` holds fewer than two vectors.
uint64_t splitEngineBytes(uint64_t bytes, double share);

/// The CUDA source of the probes (kernels sol_empty, sol_exchange, sol_exchange_read,
/// sol_exchange_read_write, sol_copy, sol_copy_signal, sol_copy_sentinel,
/// sol_copy_sentinel_traced, sol_allreduce_sentinel).
std::string speedOfLightSource();

/// Measures the probes on `devices` (one process drives them all, peer access between every
/// pair). Errors say which probe failed and why (no GPU, NVRTC, a launch, a wait that timed out).
Expected<SpeedOfLightReport> measureSpeedOfLight(const std::vector<int>& devices,
                                                 const SpeedOfLightSettings& settings);

} // namespace collc

#endif // COLLC_TOOLS_BENCH_SPEEDOFLIGHT_H
