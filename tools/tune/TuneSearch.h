// The search of `collc tune`, apart from how a variant is measured: which variants to try at
// which sizes, in three stages, and the tuning table the measurements make. A full cross product
// of algorithm x sync x blocks x threads x vector x unroll is far too slow to time, so:
//   stage 1: every (spec, sync) at the spec's own launch shape, at every size;
//   stage 2: balanced shapes, which give each thread about one vector at that size (blocks and
//            threads interact, so one knob at a time can stall): per size, every (spec, sync)
//            pair at the most blocks, then the best `balancedPairsPerSize` pairs so far (at
//            least `keepPerSize`) at every block count. Then the best `keepPerSize` pairs so
//            far, improved one knob at a time (blocks, then threads, then vector width, then
//            unroll, then whole stores), each knob tried at every value with the others at
//            their best so far (whole stores at every thread count too: the best threads move
//            with them);
//   stage 3: cross-check. Stage 2 refines each size on its own, so a shape it found at 4M was
//            never timed at 512K, where it may well be the fastest; and dispatch is judged
//            against every variant of the table at every size. So the `finalistsPerSize`
//            fastest variants of each size (the finalists, over all sizes) are timed at every
//            size they were not timed at yet. Then, where a size's two fastest are within
//            `retimeWithin` of each other, both are timed once more and keep the faster time.
// Stages 1 to 3 never time a (variant, size) twice; only the re-timing does, on purpose.
// A variant that fails to compile or run scores infinity and the search goes on; it is never a
// finalist where it failed. The measuring is a callback, so the search is tested against a model
// of a machine without a GPU.
#ifndef COLLC_TOOLS_TUNE_TUNESEARCH_H
#define COLLC_TOOLS_TUNE_TUNESEARCH_H

#include "runtime/TuningTable.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace collc {

struct TuneSpace {
  std::vector<std::string> specs;                         // stdlib names or paths
  std::vector<std::optional<SyncKind>> syncs;             // an unset one: the spec's own
  std::vector<int> blocks, threads, vectorBytes, unrolls; // stage 2's values; empty: not searched
  std::vector<int> wholeStores;                           // the same, of LaunchShape::wholeStores
  int keepPerSize = 2; // (spec, sync) pairs per size carried into stage 2; 0: stage 1 only
  // Stage 2 starts with the balanced shapes (needs blocks and threads to search); false: not.
  bool balancedShapes = true;
  // The balanced shapes at every block count go to at least this many pairs per size, even when
  // stage 2 keeps fewer for the knobs.
  int balancedPairsPerSize = 2;
  // Stage 3: the fastest variants per size that are timed at every other size; 0: no stage 3.
  int finalistsPerSize = 2;
  // Stage 3: re-time a size's two fastest when the second is within this fraction of the first
  // (0.03: 3%); 0: never. Only then can one timing's noise flip the table's choice.
  double retimeWithin = 0.03;
};

/// One variant at one size.
struct TuneMeasurement {
  TunedVariant variant; // resolved: the spec's defaults filled in where it compiled
  uint64_t bytes = 0;
  double us = std::numeric_limits<double>::infinity(); // infinity: refused, failed or wrong
  std::string note;                                    // why, when infinite
  bool refused = false; // the compiler refused the variant: nothing was run
};

/// Measures `variant` at each of `sizes` (bytes per rank, ascending) and returns one measurement
/// per size, in order. Calls `before(bytes)` before each size (for progress). A variant the
/// compiler refuses, or that fails, comes back with infinite times and a note; the variant of
/// a measurement is the resolved one (every knob set) wherever it compiled.
using TuneMeasureFn = std::function<std::vector<TuneMeasurement>(
    const TunedVariant& variant, const std::vector<uint64_t>& sizes,
    const std::function<void(uint64_t bytes)>& before)>;

struct TuneProgress {
  int done = 0;      // measurements made
  int total = 0;     // an estimate until the last stage's count is known
  std::string stage; // "stage 1: algorithm x sync", "stage 2: blocks", "stage 3: cross-check", ...
  std::string what;  // "allreduce_oneshot/ll 8x512 v16 u1 at 4K"
};
using TuneProgressFn = std::function<void(const TuneProgress&)>;

/// Asked before each variant is measured; true: the search measures nothing more (an interrupted
/// `collc tune` keeps what it measured).
using TuneStopFn = std::function<bool()>;

/// Runs the search over `sizes` (bytes per rank, ascending) and returns every measurement made,
/// in order. `progress` and `stop` may be empty; once `stop` says so, the measurements so far.
std::vector<TuneMeasurement> runTuneSearch(const TuneSpace& space,
                                           const std::vector<uint64_t>& sizes,
                                           const TuneMeasureFn& measure,
                                           const TuneProgressFn& progress,
                                           const TuneStopFn& stop = {});

/// The smallest number of threads a balanced shape gets (the compiler's least: one warp).
constexpr int kMinBalancedThreads = 32;

/// Stage 2's balanced shape at `bytes` for `blocks`: the power of two of threads, from
/// kMinBalancedThreads to `maxThreads`, that gives each thread about one vector of `vectorBytes`.
int balancedThreads(uint64_t bytes, int blocks, int vectorBytes, int maxThreads);

/// The most measurements stage 2's balanced shapes can make over `sizes` sizes: every pair at the
/// most blocks, then the best pairs at every block count. Zero where they are not searched (no
/// stage 2, switched off, or no blocks or threads to search).
struct BalancedShapesBound {
  int mostBlocks = 0;      // every (spec, sync) pair at the most blocks
  int everyBlockCount = 0; // max(keepPerSize, balancedPairsPerSize) pairs at every block count
  int total() const { return mostBlocks + everyBlockCount; }
};
BalancedShapesBound balancedShapesBound(const TuneSpace& space, int sizes);

/// Stage 3's finalists of `measurements`: per size, the `perSize` fastest distinct variants with a
/// finite time there, all sizes together, each once, in the order they are first found.
std::vector<TunedVariant> tuneFinalists(const std::vector<TuneMeasurement>& measurements,
                                        const std::vector<uint64_t>& sizes, int perSize);

/// The fastest finite measurement at `bytes`, or null.
const TuneMeasurement* bestAt(const std::vector<TuneMeasurement>& measurements, uint64_t bytes);

/// Table rows for `measurements` under `key`: every measurement is a row (but for variants the
/// compiler refused, which were never run: refusedVariants lists them); the row measured at
/// sizes[i] speaks for [sizes[i], sizes[i+1]) (the first from 0, the last to inf), and the
/// fastest finite one of each size is marked best. Rows ascend by size, fastest first.
std::vector<TuningRow> tuningRows(const std::vector<TuneMeasurement>& measurements,
                                  const std::vector<uint64_t>& sizes, const TuningKey& key);

/// "allreduce_ring/ll: sync strategy 'll' cannot ...", once per refused variant, in order.
std::vector<std::string> refusedVariants(const std::vector<TuneMeasurement>& measurements);

/// `table` with its rows of `key` (the same key exactly) that were measured at sizes from the
/// smallest to the largest of `rows` replaced by `rows`. Other keys' rows stay, and so do the
/// key's rows measured below or above those sizes (a sweep tuned in pieces), their ranges and
/// the new rows' clipped where they meet so that none overlap: the new rows speak from their
/// smallest size (from 0 when nothing is kept below) to the smallest size kept above (inf when
/// none is). No rows (a tune whose every variant was refused) replace nothing.
void replaceKeyRows(TuningTable& table, const TuningKey& key, std::vector<TuningRow> rows);

} // namespace collc

#endif // COLLC_TOOLS_TUNE_TUNESEARCH_H
