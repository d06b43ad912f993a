// Dispatch by message size: one collective (a kind such as allreduce, or one spec) whose every
// call runs the variant the tuning table (or the built-in rule) names for its size.
//
// Two steps, so that the heap can be sized before the world exists:
//   1. A DispatchProgram: DispatchProgram::plan reads the table and makes the plan
//      (runtime/DispatchPlan.h); then every variant the plan may pick is handed in compiled, with
//      its cubin (compileDispatchProgram, pipeline/CompileDispatch.h, does both). No GPU needed.
//   2. Dispatcher::create: one CollectiveInstance per variant in the world, all made up front.
// After that a launch only picks an instance (a binary search over the plan's ranges, on the
// host) and launches it: no allocation, no lock, no host synchronization. So launches are safe
// from several threads at once (e.g. one thread per rank), and safe inside CUDA graph capture,
// where the choice is made once, at capture time, for the captured call's size.
//
// Every rank must make the same calls in the same order, as with a CollectiveInstance; since the
// choice depends only on the call's size, every rank picks the same variant for the same call.
#ifndef COLLC_RUNTIME_DISPATCHER_H
#define COLLC_RUNTIME_DISPATCHER_H

#include "abi/CompiledCollective.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/DispatchPlan.h"
#include "runtime/Span.h"
#include "runtime/Status.h"
#include "runtime/SymmetricWorld.h"
#include "runtime/Watchdog.h"

#include <cstdint>
#include <cuda_runtime_api.h>
#include <memory>
#include <string>
#include <vector>

namespace collc {

struct DispatchRequest {
  CollectiveKind collective = CollectiveKind::AllReduce;
  /// A stdlib name or path: dispatch among that spec's variants only. Empty: every stdlib spec
  /// of `collective` the table names (without a table, the built-in rule's).
  std::string spec;
  DType dtype = DType::BF16;
  ReduceOp op = ReduceOp::Sum;
  int nranks = 2;
  uint64_t maxCount = 0; // the largest call, in elements per rank
  /// The table: a path; empty for defaultTuningTablePath() ($COLLC_TUNING_TABLE, ...); "none" for
  /// the built-in rule alone. A missing file at the default path means the built-in rule; a
  /// missing file named here (or by $COLLC_TUNING_TABLE), or a malformed one, is an error.
  std::string table;
  /// The key's machine: the GPU model as the table writes it (gpuModelKey) and the topology.
  /// Empty: found from GPU 0 and the peer links of the first nranks GPUs (localTopologyName).
  std::string gpu, topology;
  /// NVRTC target; empty: GPU 0's architecture, or sm_90 without a GPU.
  std::string arch;
};

/// One variant of the plan, compiled, with its cubin.
struct DispatchVariant {
  TunedVariant variant;
  CompiledCollective compiled;
  std::string cubin;
};

/// Step 1: everything that needs no GPU.
class DispatchProgram {
public:
  /// Reads the table and makes the plan; no variant is compiled yet (setVariants).
  /// `declaredRanks`: DispatchQuery::declaredRanks, for the built-in rule.
  static Expected<DispatchProgram>
  plan(const DispatchRequest& request,
       std::function<std::optional<std::pair<int, int>>(const std::string&)> declaredRanks = {});
  /// Hands in the plan's variants compiled: one per plan().variants, in that order, each of the
  /// request's kind, element type, operator and rank count. An error names the first that is not.
  Error setVariants(std::vector<DispatchVariant> variants);

  const DispatchPlan& plan() const { return plan_; }
  /// Empty until setVariants.
  const std::vector<DispatchVariant>& variants() const { return variants_; }
  const DispatchRequest& request() const { return request_; }
  /// The key (GPU, ranks, topology, ...) the plan was chosen for, and the table read, if any.
  const DispatchQuery& query() const { return query_; }
  const std::optional<TuningTable>& table() const { return table_; }
  /// Symmetric heap per rank that Dispatcher::create takes from the world (for the variants set).
  uint64_t heapBytes() const;
  /// Where the plan came from and which variant runs where, for logs.
  std::string description() const;

private:
  DispatchRequest request_;
  DispatchQuery query_;
  std::optional<TuningTable> table_;
  DispatchPlan plan_;
  std::vector<DispatchVariant> variants_;
};

/// Step 2: the instances, and the launch.
class Dispatcher {
public:
  /// `program` must have its variants set.
  static Expected<std::unique_ptr<Dispatcher>>
  create(SymmetricWorld& world, DispatchProgram program,
         uint64_t timeoutNs = defaultWatchdogTimeoutNs());
  /// Nothing launched through it may still run, nor be replayed later from a graph.
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  /// Enqueues rank's part of one call of `count` elements (<= maxCount) on `stream`, running the
  /// variant the plan names for count's size. As CollectiveInstance::launch otherwise.
  Error launch(int rank, const void* in, void* out, uint64_t count, cudaStream_t stream) const;

  /// The index into program().variants() that a call of `count` elements runs.
  size_t variantFor(uint64_t count) const;
  /// The instance that a call of `count` elements runs (to time or check it on its own).
  CollectiveInstance& instanceFor(uint64_t count) const { return *instances_[variantFor(count)]; }
  CollectiveInstance& instance(size_t variant) const { return *instances_[variant]; }
  const DispatchProgram& program() const { return program_; }
  uint64_t maxCount() const { return program_.request().maxCount; }

  /// Waits for the streams and checks every instance's watchdogs (CollectiveInstance::
  /// synchronize for each).
  Error synchronize(Span<const cudaStream_t> streams, double extraSeconds = 0) const;

private:
  explicit Dispatcher(DispatchProgram program) : program_(std::move(program)) {}

  DispatchProgram program_;
  std::vector<std::unique_ptr<CollectiveInstance>> instances_; // one per variant
};

/// "nvlink-p2p" when every pair of `devices` has peer access with native atomics (NVLink),
/// "pcie-p2p" when every pair has peer access without them, "no-p2p" otherwise; "unknown"
/// without a GPU.
std::string localTopologyName(const std::vector<int>& devices);

} // namespace collc

#endif // COLLC_RUNTIME_DISPATCHER_H
