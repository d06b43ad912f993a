// The rule that keeps a collective's kernels from waiting on blocks that never run: every block of
// every rank on one GPU polls for the others, so all of them must be resident at once. One block
// per multiprocessor is what can be promised (CollectiveInstance checks that a block fits on one
// at all), so the blocks of all ranks that share a GPU may number at most its multiprocessors.
// With one rank per GPU that is the rank's own blocks; in a SharedGpuWorld, where several ranks
// run as co-resident kernels on one GPU, it is their sum. Pure arithmetic: tested without a GPU.
#ifndef COLLC_RUNTIME_CORESIDENCY_H
#define COLLC_RUNTIME_CORESIDENCY_H

#include "runtime/Span.h"

#include <string>
#include <vector>

namespace collc {

/// How many of the ranks a process drives run on one GPU.
struct GpuRanks {
  int device = 0;
  int ranks = 0;
};

/// `devices[i]` is the GPU of the i-th local rank; one entry per distinct GPU, in order of first
/// appearance.
std::vector<GpuRanks> ranksPerGpu(Span<const int> devices);

/// True when some GPU runs more than one of the ranks (a SharedGpuWorld).
bool ranksShareAGpu(Span<const GpuRanks> gpus);

/// The most blocks per rank that `ranks` ranks sharing a GPU of `multiprocessors` can all keep
/// resident: multiprocessors / ranks (0 when not even one block each fits).
int maxCoResidentBlocksPerRank(int multiprocessors, int ranks);

/// Empty when `ranks` ranks of `blocksPerRank` blocks each fit on `device` (with
/// `multiprocessors` SMs) all at once; otherwise why not, with the numbers and what to change.
std::string coResidencyProblem(int blocksPerRank, int ranks, int device, int multiprocessors);

} // namespace collc

#endif // COLLC_RUNTIME_CORESIDENCY_H
