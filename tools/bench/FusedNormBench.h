// `collc bench allreduce_rmsnorm`: the fused AllReduce + residual add + RMSNorm kernel against
// what it replaces, allreduce_oneshot (same type and sync) followed by a plain add + RMSNorm
// kernel (PlainRmsNorm.h), per token count, in one process driving every rank of a LocalWorld.
// Both are checked against the fused spec interpreted (InterpretedReference.h) before their times
// count,
// and both are timed the same way: a CUDA graph of back-to-back operations per rank, replayed,
// the median over replays of the slowest rank's time divided by the operations.
#ifndef COLLC_TOOLS_BENCH_FUSEDNORMBENCH_H
#define COLLC_TOOLS_BENCH_FUSEDNORMBENCH_H

#include "abi/CompiledCollective.h"
#include "runtime/LocalWorld.h"
#include "runtime/Status.h"
#include "runtime/Watchdog.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collc {

namespace ir {
struct Program;
}

/// A compiled collective, its image for the world's GPUs, and the spec's program it was lowered
/// from (CompileOptions::specProgram): the reference its results are checked against.
struct JittedCollective {
  CompiledCollective compiled;
  std::string image;
  std::shared_ptr<const ir::Program> spec;
};

struct FusedNormBenchSettings {
  std::vector<uint64_t> tokens; // rows per call
  int graphOps = 50;
  int replays = 7;
  uint64_t seed = 1;
  uint64_t timeoutNs = defaultWatchdogTimeoutNs();
};

struct FusedNormPoint {
  uint64_t tokens = 0;
  double fusedUs = 0;   // per operation
  double unfusedUs = 0; // allreduce_oneshot + the plain kernel, per operation
};

/// `fused` is allreduce_rmsnorm and `allReduce` allreduce_oneshot (sum, the same type) for the
/// world's ranks; `plainImage` is the image of plainRmsNormKernel(fused.compiled). A wrong result
/// of either side is an error naming the first mismatches.
Expected<std::vector<FusedNormPoint>> benchFusedRmsNorm(LocalWorld& world,
                                                        const JittedCollective& fused,
                                                        const JittedCollective& allReduce,
                                                        const std::string& plainImage,
                                                        const FusedNormBenchSettings& settings);

} // namespace collc

#endif // COLLC_TOOLS_BENCH_FUSEDNORMBENCH_H
