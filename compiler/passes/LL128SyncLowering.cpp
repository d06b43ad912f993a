#include "compiler/passes/DataArrival.h"
#include "compiler/passes/Passes.h"

#include <functional>

namespace collc {
namespace {

using ir::ExprKind;

/// Calls `visit` with every region a statement (and the statements nested in it) reads or writes.
void forEachRegion(const ir::Stmt& stmt, const std::function<void(const ir::Region&)>& visit) {
  if (stmt.kind == ir::StmtKind::Loop) {
    for (const auto& inner : stmt.body)
      forEachRegion(*inner, visit);
    return;
  }
  visit(stmt.target);
  for (const auto& source : stmt.sources)
    visit(source);
  for (const auto& operand : stmt.operands)
    visit(operand.region);
}

bool isZero(const ir::Expr& e) {
  return e && e->kind == ExprKind::Const && e->value == 0;
}

/// `x[s].chunk(k)`: the region is chunk k of a whole slot of its buffer.
bool isChunkOfSlot(const ir::Region& region) {
  const ir::Expr& offset = region.offset;
  return offset && offset->kind == ExprKind::ChunkBegin &&
         ir::structurallyEqual(offset->a, region.buffer->slotElems);
}

} // namespace

bool lowerLL128Sync(ir::Program& program, const VerifyResult& proof, Diagnostics& diags) {
  if (!checkDataArrivalApplies(program, proof, "ll128", diags))
    return false;
  // A line is stored and polled by 8 threads at once, so the threads that handle one line must
  // handle the same line of every buffer they touch: every region of a line buffer has to begin
  // on a line. Lines are laid out per slot, or per chunk when the buffer is only used in chunks;
  // any other offset would split a line between regions.
  bool ok = true;
  for (int index : proof.remotelyWritten) {
    ir::Buffer& buffer = *program.buffers[index];
    const ir::Region* wholeSlot = nullptr;
    const ir::Region* chunk = nullptr;
    for (const auto& step : program.steps)
      for (const auto& stmt : step.body)
        forEachRegion(*stmt, [&](const ir::Region& region) {
          if (region.buffer != &buffer)
            return;
          if (isZero(region.offset)) {
            wholeSlot = wholeSlot ? wholeSlot : &region;
          } else if (isChunkOfSlot(region)) {
            chunk = chunk ? chunk : &region;
          } else {
            diags.error(region.loc, "sync strategy 'll128' cannot synchronize '" + program.name +
                                        "': '" + region.text +
                                        "' does not start at a slot or at a chunk of a slot "
                                        "of '" +
                                        buffer.name +
                                        "', so its 120-byte lines would not line up with the "
                                        "writer's; use 'll'");
            ok = false;
          }
        });
    if (wholeSlot && chunk) {
      diags.error(chunk->loc, "sync strategy 'll128' cannot synchronize '" + program.name +
                                  "': scratch '" + buffer.name +
                                  "' is used both as whole slots and in chunks, so its lines "
                                  "cannot start at both; use 'll'");
      diags.note(wholeSlot->loc, "used as a whole slot here");
      ok = false;
    }
    buffer.linesPerChunk = chunk != nullptr;
  }
  if (!ok)
    return false;
  markPolledBuffers(program, proof, ir::BufferAccess::LL128);
  program.lineLoops = true;
  // The flag in each line is the call's epoch, as with LL: two copies by parity, never a reset.
  program.scratchCopies = 2;
  return true;
}

} // namespace collc
