// The measuring half of `collc bench`: sweeps over message sizes for a list of compiled variants,
// and NCCL's same collective at the same sizes, all the way docs/performance.md says (the harness
// of tools/harness/RunHarness.h for collc, tools/bench/NcclBaseline.h or the same harness for
// NCCL): every size's result is checked against a float64 reference on fresh data before its time
// counts. What comes out is plain data (tools/bench/BenchResults.h) for the writers of
// tools/bench/BenchReport.h.
#ifndef COLLC_TOOLS_BENCH_BENCHMARK_H
#define COLLC_TOOLS_BENCH_BENCHMARK_H

#include "abi/CompiledCollective.h"
#include "runtime/NcclCollective.h"
#include "runtime/Status.h"
#include "runtime/SymmetricWorld.h"
#include "runtime/Watchdog.h"
#include "tools/bench/BenchResults.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace collc {

namespace ir {
struct Program;
}

/// One variant to measure: a compiled collective and its cubin.
struct BenchVariant {
  std::string spec, sync;
  CompiledCollective compiled;
  /// The spec's program (CompileOptions::specProgram): the reference of every measurement.
  std::shared_ptr<const ir::Program> reference;
  std::string cubin;
  /// The same variant compiled with CompileOptions::watchdog = false, to measure what the
  /// watchdog's bound costs; an empty cubin: not measured.
  CompiledCollective unbounded;
  std::string unboundedCubin;

  bool measuresWatchdogCost() const { return !unboundedCubin.empty(); }
};

struct BenchSettings {
  std::vector<uint64_t> counts;                    // elements per rank, one per size, ascending
  int graphOps = 50;                               // operations per timed graph
  int replays = 7;                                 // timed replays; the median counts
  uint64_t seed = 1;                               // of the random inputs
  uint64_t timeoutNs = defaultWatchdogTimeoutNs(); // the watchdog's bound on every wait
  /// Called before each measurement with what is about to run ("allreduce_oneshot/ll 64 KiB");
  /// may be empty.
  std::function<void(const std::string& what)> progress;
  /// Called with each collc row once it is final (measured, wrong, failed or given up), in
  /// order: to show rows while the benchmark goes on. May be empty.
  std::function<void(const BenchRow& row)> rowDone;
};

/// Symmetric heap per rank that benchVariants needs for `variants` at up to `maxCount`
/// elements: the variants are measured one after the other, each with its unbounded twin.
uint64_t benchHeapBytes(const std::vector<BenchVariant>& variants, uint64_t maxCount);

/// Measures every variant at every count of `settings` in `world` (sized by benchHeapBytes).
/// Each variant gets one instance (and one for its unbounded twin) made for the largest count
/// and reused across sizes, the twins measured one after the other at each size so that drift
/// between them stays small. Rows come variant-major, sizes ascending.
///
/// A wrong result is recorded in its row and the sweep goes on. An error (CUDA, watchdog) ends
/// that variant's sweep, since its instance may be broken, and is recorded in its row; later
/// rows of the variant stay NotRun. In a world shared with other processes an error is returned
/// instead: the processes could no longer be sure to make the same calls. Collective there.
Expected<std::vector<BenchRow>> benchVariants(SymmetricWorld& world,
                                              const std::vector<BenchVariant>& variants,
                                              const BenchSettings& settings);

/// NCCL's version of each of `collectives` (runtime/NcclCollective.h: its kind's NCCL call, type,
/// operator and root) with one process driving `devices` (NcclBaseline, one set of
/// communicators for all of them), plain buffers and symmetric windows, at every count: points
/// collective-major, sizes ascending, each with its kind. Nothing else may hold the GPUs' memory
/// that NCCL needs. An error only when NCCL cannot be set up at all (not found, no GPU); a
/// measurement that fails is recorded in its point, and after a hang the rest are recorded as
/// failed too. references[i] is the program of a collc spec that computes collectives[i] (for the
/// same ranks, type, operator and root): NCCL's results are checked against it interpreted.
Expected<std::vector<NcclPoint>>
benchNcclBaseline(const std::vector<int>& devices, const std::vector<NcclCollective>& collectives,
                  const std::vector<std::shared_ptr<const ir::Program>>& references,
                  const BenchSettings& settings);

/// NCCL's version of `like`'s collective (its kind's NCCL call, type, operator, root and rank
/// count) on the communicator of a process-per-GPU world (CollectiveInstance::createNccl) at every
/// count, timed and checked by the same harness as collc's kernels: plain buffers only; points
/// carry like's kind. Collective. An error when NCCL cannot be set up; a measurement that fails is
/// recorded in its point and ends the sweep (the processes may be out of step), so later sizes
/// have no point. `reference`: like's spec program, which NCCL's results are checked against.
Expected<std::vector<NcclPoint>> benchNcclInWorld(SymmetricWorld& world,
                                                  const CompiledCollective& like,
                                                  std::shared_ptr<const ir::Program> reference,
                                                  const BenchSettings& settings);

} // namespace collc

#endif // COLLC_TOOLS_BENCH_BENCHMARK_H
