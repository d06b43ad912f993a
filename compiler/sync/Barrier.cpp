// barrier: each step that waits opens with one barrier. Flags live in symmetric memory, one per
// (block, rank); a rank's block raises its flags on every peer with a release store after its
// writes and polls its own with acquire loads. Flag values grow with the call's epoch, so no flag
// is ever reset. Where the proof found every dependency index-aligned, block b waits only for block
// b of each peer. Works for every spec the verifier accepts; two scratch copies alternate by
// parity, so call k+1 cannot overwrite what a slower peer still reads of call k.
#include "compiler/ir/Visitor.h"
#include "compiler/sync/Strategy.h"

namespace collc {
namespace {

class BarrierStrategy final : public SyncStrategy {
public:
  SyncKind kind() const override { return SyncKind::Barrier; }

  std::optional<ir::Program> lower(const ir::Program& program, const VerifyResult& proof,
                                   const SyncContext&, Diagnostics&) const override {
    ir::Program result = program;
    const ir::BarrierScope scope =
        proof.indexAligned ? ir::BarrierScope::Matched : ir::BarrierScope::Full;
    int barriers = 0;
    for (ir::Step& step : result.steps) {
      // One barrier orders everything before it, which covers all the step's waits at once.
      if (step.waits.empty())
        continue;
      std::vector<int> orders;
      for (const ir::Wait& wait : step.waits)
        orders.push_back(wait.step);
      step.body.insert(step.body.begin(), std::make_shared<ir::Barrier>(step.waits.front().loc,
                                                                        barriers++, scope, orders));
    }
    result.barriers = barriers;
    result.scratchCopies = 2;
    return result;
  }

  std::vector<std::string_view> deviceHelpers() const override { return {"barrier.cuh"}; }
};

} // namespace

const SyncStrategy& syncStrategyBarrier() {
  static const BarrierStrategy strategy;
  return strategy;
}

} // namespace collc
