// Stdlib variants run as co-resident ranks on GPU 0 (SharedGpuWorld): the cases of the
// many-ranks and in-place suites, compiled with as many blocks as fit next to their peers', and
// compiled once per rank count for every case of that count the process runs.
#ifndef COLLC_TESTS_GPU_CORESIDENTCASES_H
#define COLLC_TESTS_GPU_CORESIDENTCASES_H

#include "abi/CompiledCollective.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace collc::ir {
struct Program;
}
namespace collc {
class SharedGpuWorld;
}

namespace collc::gputest {

/// One stdlib variant at one rank count.
struct CoResidentCase {
  int nranks;
  std::string spec;
  SyncKind sync;
  DType dtype;
  ReduceOp op;
  int root;
  int64_t rowLength = 0; // a spec with rows: the row length; 0: the spec's default
};

/// "r8_allreduce_oneshot_ll_bf16_sum_root0": the test's parameter name.
std::string caseName(const CoResidentCase& c);
void PrintTo(const CoResidentCase& c, std::ostream* os);

/// A spec with rows (the fused RMSNorm, quantized or not) is run with whole rows, finite inputs
/// and sum.
bool hasRows(const std::string& spec);

/// A case compiled for GPU 0, or why it could not be.
struct CoResidentVariant {
  CompiledCollective compiled;
  std::shared_ptr<const ir::Program> spec; // the run harness's reference (RunOptions::reference)
  std::string cubin;
  std::string error;
};

/// The case compiled (no cubin yet); with fewer blocks than the spec's own where all ranks'
/// would not be resident at once on `multiprocessors`. A rank count the spec does not declare is
/// compiled from a copy that declares it alone (tests/SpecForRanks.h); past 32 ranks with the
/// entry point that runs every rank in one launch (runtime/RankLaunch.h).
CoResidentVariant compileCoResident(const CoResidentCase& c, int multiprocessors);

/// The variants of one suite's cases. The first case of a rank count compiles every case of that
/// count that this process runs (its filter and shard), on several threads, each compiling a spec
/// and then NVRTC on it (a rank count has tens of kernels, a few hundred ms each where the cache
/// does not have them, and at 64 or 72 ranks the proof takes seconds).
class CoResidentVariants {
public:
  explicit CoResidentVariants(std::function<std::vector<CoResidentCase>()> cases)
      : cases_(std::move(cases)) {}
  const CoResidentVariant& of(const CoResidentCase& c);

private:
  std::function<std::vector<CoResidentCase>()> cases_;
  std::map<std::string, CoResidentVariant> variants_;
  std::set<int> compiledRankCounts_;
};

/// The element counts of a case: tests/ManyRankCounts.h, in whole rows for a spec with rows.
std::vector<uint64_t> coResidentCounts(int nranks, const CompiledCollective& compiled);

/// The many-ranks check of one compiled case (GoogleTest failures, in the calling test): an
/// instance on `world`, the case's counts (coResidentCounts), each call checked against the spec
/// interpreted, then `graphCalls` calls back to back in one graph per rank, replayed: a call that
/// overtakes the previous one (a scratch copy, flag or epoch reused too early) corrupts some
/// call's output. `specialValues`: NaN and infinities among the inputs.
void checkCountsThenGraph(SharedGpuWorld& world, const CoResidentVariant& variant, int nranks,
                          uint64_t caseSeed, bool specialValues, int graphCalls);

} // namespace collc::gputest

#endif // COLLC_TESTS_GPU_CORESIDENTCASES_H
