// Runs a collective on every rank of a SymmetricWorld and checks it: what `collc run` and the GPU
// tests call. Correctness first (fresh random inputs, poisoned outputs, a float64 reference), then
// per-operation latency measured as docs/performance.md says: one CUDA graph of many
// back-to-back operations per rank, replayed, the median replay divided by the operations.
//
// Each process drives its own ranks (all of them in a LocalWorld, one in a ProcessWorld). Every
// rank's input is generated from (seed, round, rank) alone, so each process can build every
// rank's input and compute the float64 reference itself, without exchanging data; only the
// verdicts and timings are gathered (SymmetricWorld::allGatherRanks). In a ProcessWorld these
// functions are collective: every process calls them with the same arguments.
#ifndef COLLC_TOOLS_HARNESS_RUNHARNESS_H
#define COLLC_TOOLS_HARNESS_RUNHARNESS_H

#include "abi/CompiledCollective.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Status.h"
#include "runtime/SymmetricWorld.h"
#include "tools/harness/BufferSharing.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collc {

namespace ir {
struct Program;
}

struct RunOptions {
  uint64_t count = 0;         // elements per call (<= the instance's maxCount)
  int graphOps = 50;          // operations captured back to back in the timed graph
  int replays = 7;            // timed replays; the median counts
  uint64_t seed = 1;          // for the random inputs
  bool time = true;           // false: check correctness only
  int checks = 3;             // eager calls checked before timing (3 covers every scratch copy)
  bool specialValues = false; // inputs include -0.0, subnormals, NaN, +-inf, large magnitudes
  /// The spec's program (CompileOptions::specProgram in compiler/Compile.h), interpreted in
  /// float64 as the reference of every call checked (InterpretedReference.h). Required.
  std::shared_ptr<const ir::Program> reference;
  /// Buffers passed as one memory (BufferSharing.h): only what the compiled variant allows; a
  /// request it does not allow is an error before anything runs. The references are computed
  /// from host copies of the inputs taken before the call, and the results read back from the
  /// shared memory.
  BufferSharing sharing;
};

struct RunReport {
  bool correct = false;               // on every rank of the world
  std::string firstMismatches;        // empty when correct; this process's ranks in detail
  double usPerOp = 0;                 // median over replays of (max over ranks of replay / ops)
  std::vector<double> usPerOpPerRank; // per rank, median over replays of replay / ops
  int checkedCalls = 0;               // calls whose output was compared on every rank
  // This process's ranks only: how much was wrong, for a measurement that counts it.
  uint64_t wrongRankCalls = 0;  // (rank, call) pairs with at least one wrong element
  uint64_t wrongElements = 0;   // wrong elements over every checked call
  uint64_t checkedElements = 0; // elements compared over every checked call
  /// Quantized elements of every rank of the world, over every checked call, within the fp32
  /// computation's error of a rounding boundary (as the reference finds them): held to either
  /// neighbouring code there, bit for bit everywhere else.
  uint64_t nearRoundingBoundary = 0;
  bool quantized = false; // the variant has an E4M3 or E2M1 output or aux buffer
};

/// Checks `options.checks` eager calls, then (if options.time) times a graph of
/// options.graphOps calls per rank over options.replays replays with fresh inputs before each,
/// and checks the graph's last call. Every call checked is compared with options.reference
/// interpreted in float64 on the call's own data (InterpretedReference.h): the output and every
/// aux buffer the kernel writes, each element within the bound of its rounding. A spec with aux
/// buffers gets fresh random data in those it reads with every set of inputs; options.count must
/// then be whole rows, and special values are refused (one NaN poisons a whole row's norm). A
/// wrong result is reported in the RunReport; an error means the run itself failed (no spec
/// program, CUDA error, watchdog, hang).
/// With options.sharing, each eager call runs in place (or aliased) on fresh inputs; the timed
/// graph's calls run in place one after another on one set of buffers (each reducing the last
/// one's result, unchecked), except its last call, which runs in place on buffers of its own
/// that hold fresh inputs, and is checked.
Expected<RunReport> runAndCheck(SymmetricWorld& world, CollectiveInstance& instance,
                                const CompiledCollective& compiled, const RunOptions& options);

/// One graph per rank of `calls` back-to-back calls, call j reading its own input buffer j and
/// writing its own output buffer j (each with different random data), replayed once; then every
/// call's output is checked on every rank. This is what catches a call that overtakes the
/// previous one (a parity or epoch bug) where one-call-at-a-time tests cannot. usPerOp is the
/// slowest rank's replay time divided by `calls`. With `sharing`, call j runs in place (or
/// aliased) on its own buffers j. `reference` as RunOptions::reference (required).
Expected<RunReport> runGraphStress(SymmetricWorld& world, CollectiveInstance& instance,
                                   const CompiledCollective& compiled, uint64_t count, int calls,
                                   uint64_t seed, const ir::Program* reference,
                                   bool specialValues = false, BufferSharing sharing = {});

/// The seed of rank `rank`'s input in round `round` of a run seeded with `seed` (a round is one
/// set of inputs: one eager call, one replay, one stress graph). Distinct for distinct arguments
/// in practice (SplitMix64 over all three), and the same in every process.
uint64_t rankInputSeed(uint64_t seed, uint64_t round, int rank);

} // namespace collc

#endif // COLLC_TOOLS_HARNESS_RUNHARNESS_H
