// ll: the arrival of data is the signal. Every scratch buffer peers put into becomes a buffer of
// 16-byte packets {data0, flag, data1, flag} that carry 8 bytes of data and the call's epoch
// twice, written with one 16-byte store; a reader polls a packet until both flags equal its epoch.
// No barrier and no reset: packets of calls k and k + 2 share a copy but never a flag, and two
// copies by parity keep call k + 1 from overwriting call k's packets before they are read. Twice
// the bytes on the wire: best for small messages.
#include "compiler/sync/DataArrival.h"
#include "compiler/sync/Strategy.h"

#include <algorithm>

namespace collc {
namespace {

class LLStrategy final : public SyncStrategy {
public:
  SyncKind kind() const override { return SyncKind::LL; }

  std::optional<ir::Program> lower(const ir::Program& program, const VerifyResult& proof,
                                   const SyncContext&, Diagnostics& diags) const override {
    if (!checkDataArrivalApplies(program, proof, "ll", diags))
      return std::nullopt;
    ir::Program result = pollBuffers(program, proof.remotelyWritten, ir::Storage::Packets,
                                     ir::LoadKind::PollPacket, ir::StoreKind::FlaggedPacket);
    result.scratchCopies = 2;
    return result;
  }

  /// A packet carries 8 bytes of data: a thread fills whole packet halves, or two threads would
  /// write one packet.
  int vectorBytes(int requested) const override { return std::max(requested, 8); }

  std::vector<std::string_view> deviceHelpers() const override { return {"ll.cuh"}; }
};

} // namespace

const SyncStrategy& syncStrategyLL() {
  static const LLStrategy strategy;
  return strategy;
}

} // namespace collc
