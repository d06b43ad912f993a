// A synchronization strategy: how the reads a spec's `wait`s order are made safe in the kernel.
// Each strategy lives in one file of compiler/sync/ and owns everything about itself: when it
// applies (from the proof's facts), how it rewrites the program (barriers, polled loads, flagged
// stores, line atomics), how its scratch is stored and how many copies calls rotate through, the
// vector width its stores need, and the device helpers its operations print as. Adding one is a
// new file here, its line in the registry (COLLC_SYNC_STRATEGIES, abi/Types.h) and in the C enum
// (include/collc/collc.h), plus its tests (docs/compiler.md, "Adding a strategy", lists them).
#ifndef COLLC_COMPILER_SYNC_STRATEGY_H
#define COLLC_COMPILER_SYNC_STRATEGY_H

#include "compiler/Verifier.h"
#include "compiler/ir/IR.h"
#include "dsl/Diagnostics.h"

#include <optional>
#include <string_view>
#include <vector>

namespace collc {

/// What a strategy may need to know of the variant besides the program and the proof.
struct SyncContext {
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  bool experimentalLL128 = false; // CompileOptions::experimentalLL128
};

class SyncStrategy {
public:
  virtual ~SyncStrategy() = default;
  virtual SyncKind kind() const = 0;

  /// Runs on the spec's statements (steps expanded, not yet partitioned into element loops), for
  /// strategies that change what the statements do (ll128_atomic turns puts into line adds). The
  /// default changes nothing.
  virtual std::optional<ir::Program> rewriteStatements(const ir::Program& program,
                                                       const VerifyResult&, const SyncContext&,
                                                       Diagnostics&) const {
    return program;
  }

  /// Runs on the partitioned program: reports (and returns nullopt) every reason the strategy
  /// cannot synchronize it; otherwise returns it with the strategy's operations in place:
  /// barriers, the loads and stores of the buffers it synchronizes, their storage, the loops'
  /// shape, the number of scratch copies.
  virtual std::optional<ir::Program> lower(const ir::Program& program, const VerifyResult& proof,
                                           const SyncContext& context,
                                           Diagnostics& diags) const = 0;

  /// The bytes a thread moves per memory operation, given the requested width: a strategy whose
  /// stores carry data in fixed units (packets, lines) widens or fixes it.
  virtual int vectorBytes(int requested) const { return requested; }

  /// The device helper files (compiler/device/*.cuh) its operations print as, in order.
  virtual std::vector<std::string_view> deviceHelpers() const = 0;

  /// Its loops walk whole 128-byte lines, which a step split by rows cannot give it.
  virtual bool walksWholeLines() const { return false; }
};

/// The strategy of that kind (every kind of abi/Types.h's registry has one: RegistryTest).
const SyncStrategy& syncStrategy(SyncKind kind);

/// Each registered strategy's own, defined in compiler/sync/<Enumerator>.cpp: syncStrategyLL() in
/// LL.cpp. Declared here for every entry of COLLC_SYNC_STRATEGIES, so that a strategy registered
/// without its file does not link.
#define COLLC_DECLARE_SYNC_STRATEGY(kind, spelling, cValue, experimental)                          \
  const SyncStrategy& syncStrategy##kind();
COLLC_SYNC_STRATEGIES(COLLC_DECLARE_SYNC_STRATEGY)
#undef COLLC_DECLARE_SYNC_STRATEGY

} // namespace collc

#endif // COLLC_COMPILER_SYNC_STRATEGY_H
