// sentinel: every scratch buffer peers put into starts filled with -0.0 (0x8000 for 16-bit types,
// 0x80000000 for f32). A reader polls each element until it is no longer -0.0 and puts -0.0 back
// right after reading it, so the buffer is ready for its next use with no clearing pass; writers
// never send -0.0 (they send +0.0, after any arithmetic, so a flush-to-zero cannot hang a reader).
// Three copies rotate by epoch (in use, being cleared, ready), so a peer that runs a call ahead
// never writes a copy that is still being cleared. Full bandwidth, each element polled on its own.
#include "compiler/sync/DataArrival.h"
#include "compiler/sync/Strategy.h"

namespace collc {
namespace {

class SentinelStrategy final : public SyncStrategy {
public:
  SyncKind kind() const override { return SyncKind::Sentinel; }

  std::optional<ir::Program> lower(const ir::Program& program, const VerifyResult& proof,
                                   const SyncContext&, Diagnostics& diags) const override {
    bool ok = checkDataArrivalApplies(program, proof, "sentinel", diags);
    if (!proof.remoteDataReadOnce) {
      const llvm::SMLoc loc = program.syncLoc.isValid() ? program.syncLoc : program.loc;
      diags.error(loc, "sync strategy 'sentinel' cannot synchronize '" + program.name +
                           "': an element a peer writes is read more than once (or never) in a "
                           "call, but a reader clears each element as it reads it; use 'll'");
      ok = false;
    }
    if (!ok)
      return std::nullopt;
    ir::Program result = pollBuffers(program, proof.remotelyWritten, ir::Storage::Elements,
                                     ir::LoadKind::PollSentinel, ir::StoreKind::Sentinel);
    for (int index : proof.remotelyWritten)
      result.buffers[size_t(index)].filledWithNegativeZero = true;
    result.scratchCopies = 3;
    return result;
  }

  std::vector<std::string_view> deviceHelpers() const override { return {"sentinel.cuh"}; }
};

} // namespace

const SyncStrategy& syncStrategySentinel() {
  static const SentinelStrategy strategy;
  return strategy;
}

} // namespace collc
