// Per-rank CUDA graphs and timing events for the ranks this process drives in a SymmetricWorld:
// the pieces RunHarness (and a benchmark) time collectives with. Every rank's graph holds only its
// own work, captured on its own stream, as one process per GPU would capture it.
#ifndef COLLC_TOOLS_HARNESS_RANKGRAPHS_H
#define COLLC_TOOLS_HARNESS_RANKGRAPHS_H

#include "runtime/Span.h"
#include "runtime/Status.h"
#include "runtime/SymmetricWorld.h"

#include <chrono>
#include <cuda_runtime_api.h>
#include <llvm/ADT/STLExtras.h>
#include <memory>
#include <vector>

namespace collc {

/// One instantiated graph per local rank, destroyed with this object.
class RankGraphs {
public:
  explicit RankGraphs(const SymmetricWorld& world)
      : world_(world), execs_(world.localRanks().size(), nullptr),
        empty_(world.localRanks().size(), false) {}
  ~RankGraphs();
  RankGraphs(const RankGraphs&) = delete;
  RankGraphs& operator=(const RankGraphs&) = delete;

  /// Captures what `enqueue` launches on `rank`'s stream into that rank's graph (thread-local
  /// capture mode: only this thread's unsafe calls can break it).
  Error capture(int rank, llvm::function_ref<Error()> enqueue);
  /// Launches rank's graph on rank's stream (nothing for a capture that enqueued nothing).
  Error launch(int rank);

private:
  const SymmetricWorld& world_;
  std::vector<cudaGraphExec_t> execs_; // per local rank
  std::vector<bool> empty_;            // per local rank: its capture enqueued nothing
};

/// A start and a stop event per local rank, on that rank's GPU.
class RankTimers {
public:
  static Expected<std::unique_ptr<RankTimers>> create(const SymmetricWorld& world);
  ~RankTimers();
  RankTimers(const RankTimers&) = delete;
  RankTimers& operator=(const RankTimers&) = delete;

  Error start(int rank) { return record(rank, true); }
  Error stop(int rank) { return record(rank, false); }
  /// Microseconds between start and stop of rank; both must have completed.
  Expected<double> elapsedUs(int rank);

private:
  explicit RankTimers(const SymmetricWorld& world) : world_(world) {}
  Error record(int rank, bool start);

  const SymmetricWorld& world_;
  std::vector<cudaEvent_t> starts_, stops_; // per local rank
};

/// The median of `values` (0 for none): how every timing, collc's and NCCL's, reduces its
/// replays.
double median(std::vector<double> values);

/// How a benchmark times captured graphs (docs/performance.md, how collc measures): every local
/// rank's graph is launched between its two events `replays + 1` times, the first untimed (it
/// uploads the graph and warms caches and clocks), `wait()` bounding each round; returns the median
/// over the timed replays of the slowest rank's replay time / `opsPerGraph`, in µs. `beforeReplay`
/// (may be empty) runs before each round, e.g. to refresh inputs.
Expected<double> medianSlowestReplayUs(const SymmetricWorld& world, RankGraphs& graphs,
                                       int opsPerGraph, int replays,
                                       llvm::function_ref<Error()> wait,
                                       llvm::function_ref<Error()> beforeReplay = nullptr);

} // namespace collc

#endif // COLLC_TOOLS_HARNESS_RANKGRAPHS_H
