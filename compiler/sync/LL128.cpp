// ll128 (experimental): every scratch buffer peers put into becomes 128-byte lines of 120 bytes of
// data and the call's 8-byte flag; the 8 threads of a line store it with one warp instruction and
// read it the same way, and the line is taken once its flag is the call's epoch. Element loops walk
// whole lines, so that a line's threads always act together. Its correctness rests on a line's 8
// stores (and 8 loads) acting as one, which the hardware does not promise and collc cannot check,
// so it compiles only with CompileOptions::experimentalLL128 (--experimental-ll128).
#include "compiler/ir/Visitor.h"
#include "compiler/sync/DataArrival.h"
#include "compiler/sync/Strategy.h"

namespace collc {
namespace {

bool isZero(const ir::Expr& e) {
  return e && e->kind == ir::ExprKind::Const && e->value == 0;
}

/// `x[s].chunk(k)`: the region is chunk k of a whole slot of its buffer.
bool isChunkOfSlot(const ir::Program& program, const ir::Region& region) {
  const ir::Expr& offset = region.offset;
  return offset && offset->kind == ir::ExprKind::ChunkBegin &&
         ir::structurallyEqual(offset->a, program.buffer(region).slotElems);
}

class LL128Strategy final : public SyncStrategy {
public:
  SyncKind kind() const override { return SyncKind::LL128; }

  std::optional<ir::Program> lower(const ir::Program& program, const VerifyResult& proof,
                                   const SyncContext& context, Diagnostics& diags) const override {
    if (!context.experimentalLL128) {
      diags.error(program.syncLoc.isValid() ? program.syncLoc : program.loc,
                  "sync strategy 'll128' is disabled: its correctness rests on a 128-byte "
                  "line's 8 stores arriving together, which the hardware does not promise and "
                  "collc cannot prove; use 'll' or 'sentinel' (--experimental-ll128 compiles "
                  "it anyway, to investigate)");
      return std::nullopt;
    }
    if (!checkDataArrivalApplies(program, proof, "ll128", diags))
      return std::nullopt;
    ir::Program result = program;
    std::vector<int> perChunk;
    if (!placeLines(result, proof, diags, perChunk))
      return std::nullopt;
    result = pollBuffers(result, proof.remotelyWritten, ir::Storage::LL128Lines,
                         ir::LoadKind::PollLine, ir::StoreKind::FlaggedLine);
    for (int index : perChunk)
      result.buffers[size_t(index)].storage = ir::Storage::LL128LinesPerChunk;
    result = shapeLoops(result, ir::LoopShape::LL128Lines);
    // The flag in each line is the call's epoch, as with LL: two copies by parity, never a reset.
    result.scratchCopies = 2;
    return result;
  }

  /// A line is moved 16 bytes per thread, 8 threads per 128-byte line.
  int vectorBytes(int) const override { return 16; }
  bool walksWholeLines() const override { return true; }

  std::vector<std::string_view> deviceHelpers() const override { return {"ll128.cuh"}; }

private:
  /// A line is stored and polled by 8 threads at once, so the threads that handle one line must
  /// handle the same line of every buffer they touch: every region of a line buffer has to begin
  /// on a line. Lines are laid out per slot, or per chunk when the buffer is only used in chunks;
  /// any other offset would split a line between regions. The buffers only used in chunks go to
  /// `perChunk`.
  static bool placeLines(const ir::Program& program, const VerifyResult& proof, Diagnostics& diags,
                         std::vector<int>& perChunk) {
    bool ok = true;
    for (int index : proof.remotelyWritten) {
      const ir::Buffer& buffer = program.buffers[size_t(index)];
      const ir::Region* wholeSlot = nullptr;
      const ir::Region* chunk = nullptr;
      std::vector<ir::Region> regions;
      for (const auto& step : program.steps)
        ir::forEachRegion(step.body, [&](const ir::Region& region) {
          if (region.buffer == index)
            regions.push_back(region);
        });
      for (const ir::Region& region : regions) {
        if (isZero(region.offset)) {
          wholeSlot = wholeSlot ? wholeSlot : &region;
        } else if (isChunkOfSlot(program, region)) {
          chunk = chunk ? chunk : &region;
        } else {
          diags.error(region.loc, "sync strategy 'll128' cannot synchronize '" + program.name +
                                      "': '" + region.text +
                                      "' does not start at a slot or at a chunk of a slot of '" +
                                      buffer.name +
                                      "', so its 120-byte lines would not line up with the "
                                      "writer's; use 'll'");
          ok = false;
        }
      }
      if (wholeSlot && chunk) {
        diags.error(chunk->loc, "sync strategy 'll128' cannot synchronize '" + program.name +
                                    "': scratch '" + buffer.name +
                                    "' is used both as whole slots and in chunks, so its lines "
                                    "cannot start at both; use 'll'");
        diags.note(wholeSlot->loc, "used as a whole slot here");
        ok = false;
      }
      if (chunk)
        perChunk.push_back(index);
    }
    return ok;
  }
};

} // namespace

const SyncStrategy& syncStrategyLL128() {
  static const LL128Strategy strategy;
  return strategy;
}

} // namespace collc
