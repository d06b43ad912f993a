// ll128_atomic (sum only): applies to a reduce-scatter written as one put into per-sender slots
// followed by one reduce of this rank's part with every slot (`put Y -> p.inbox[rank]` ... `T =
// reduce(X, inbox[peers])`, as both stdlib AllReduces are). The slots become one accumulation
// buffer (scratch shrinks from nranks slots to one, plus one "line head" per 8 elements), and every
// rank adds its part into the owner's buffer with 16-byte vector atomics, 8 threads per 128-byte
// line. The first element of a line counts the adds: its value goes to the line heads first (a
// system fence orders the two) and a 1 is added in its place, so the owner takes the line once the
// count reaches nranks, restores the first element, and zeroes the line for the call after next.
// Everything else peers write (the all-gather) is synchronized as LL. The sum is not deterministic
// (the order of the atomic adds varies), and with f16/bf16 it is accumulated in the element type.
#include "compiler/ir/Visitor.h"
#include "compiler/sync/DataArrival.h"
#include "compiler/sync/Strategy.h"

namespace collc {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::ExprNode;

bool isZero(const Expr& e) {
  return e && e->kind == ExprKind::Const && e->value == 0;
}

/// The reduce-scatter this strategy replaces: peers put their part of this rank's chunk into
/// per-sender slots of `slots` (`for p in peers { put Y -> p.slots[rank] }`), and one reduce
/// combines this rank's own part with every slot (`T = reduce(X, slots[peers])`, either order).
struct ReduceScatter {
  ir::BufferId slots = -1;
  int reduceStep = -1;
  size_t reduceIndex = 0; // position of the reduce in its step's body
  size_t own = 0;         // the operand that is this rank's own part
  int putStep = -1;
  size_t putIndex = 0; // position of the `for p in peers` holding the put
};

class Accesses : public ir::Visitor {
public:
  explicit Accesses(ir::BufferId buffer) : buffer_(buffer) {}
  bool reads = false, writes = false;

private:
  void operand(const ir::Operand& o) { reads |= o.region.buffer == buffer_; }
  void target(const ir::Region& r) { writes |= r.buffer == buffer_; }
  void visitPut(const ir::Put& s) override {
    operand(s.source);
    target(s.target);
  }
  void visitAtomicAdd(const ir::AtomicAdd& s) override {
    operand(s.source);
    target(s.target);
  }
  void visitAssign(const ir::Assign& s) override {
    for (const auto& o : s.operands)
      operand(o);
    for (const auto& o : s.addends)
      operand(o);
    target(s.target);
  }
  void visitRow(const ir::RowStmt& s) override {
    operand(s.rows);
    for (const auto& o : s.params)
      operand(o);
    target(s.target);
  }
  ir::BufferId buffer_;
};

std::string prefix(const ir::Program& program) {
  return "sync strategy 'll128_atomic' cannot synchronize '" + program.name + "': ";
}

const char* const kPatternRule =
    "it needs a reduce-scatter written as one put into per-sender slots ('for p in peers { put "
    "Y -> p.inbox[rank] }') and one reduce of this rank's part with every slot ('T = reduce(X, "
    "inbox[peers])', the operands in either order), as in allreduce_twoshot";

/// Finds the reduce of the pattern; nullopt if the spec has none.
std::optional<ReduceScatter> findReduce(const ir::Program& program) {
  for (const auto& step : program.steps) {
    for (size_t k = 0; k < step.body.size(); ++k) {
      if (step.body[k]->kind != ir::StmtKind::Assign)
        continue;
      const auto& assign = step.body[k]->as<ir::Assign>();
      if (!assign.reduce || assign.operands.size() != 2)
        continue;
      for (size_t own = 0; own < 2; ++own) {
        const ir::Operand& mine = assign.operands[own];
        const ir::Operand& peers = assign.operands[1 - own];
        if (mine.set || mine.region.owner || !peers.set || *peers.set != ir::LoopRange::Peers)
          continue;
        const ir::Buffer& buffer = program.buffer(peers.region);
        if (buffer.role != ir::BufferRole::Scratch || !isZero(peers.region.offset) ||
            !peers.region.slot || peers.region.slot->kind != ExprKind::Var)
          continue;
        ReduceScatter found;
        found.slots = peers.region.buffer;
        found.reduceStep = step.index;
        found.reduceIndex = k;
        found.own = own;
        return found;
      }
    }
  }
  return std::nullopt;
}

/// The one put into the slots: `for p in peers { put Y -> p.slots[rank] }` at the top of a step
/// before the reduce, with nothing else reading or writing the slots. False if it is not so.
bool findPut(const ir::Program& program, ReduceScatter& rs) {
  for (const auto& step : program.steps) {
    for (size_t k = 0; k < step.body.size(); ++k) {
      if (step.index == rs.reduceStep && k == rs.reduceIndex)
        continue;
      Accesses accesses(rs.slots);
      accesses.visit(step.body[k]);
      if (accesses.reads)
        return false;
      if (!accesses.writes)
        continue;
      if (rs.putStep >= 0 || step.index >= rs.reduceStep || step.body[k]->kind != ir::StmtKind::For)
        return false; // a second writer, or one after the reduce, or not in a peer loop
      const auto& loop = step.body[k]->as<ir::For>();
      if (loop.range != ir::LoopRange::Peers || loop.body.size() != 1 ||
          loop.body[0]->kind != ir::StmtKind::Put)
        return false;
      const auto& put = loop.body[0]->as<ir::Put>();
      const Expr& owner = put.target.owner;
      if (!owner || owner->kind != ExprKind::Var || owner->name != loop.var ||
          put.target.slot->kind != ExprKind::Rank || !isZero(put.target.offset))
        return false;
      rs.putStep = step.index;
      rs.putIndex = k;
    }
  }
  return rs.putStep >= 0;
}

/// True if any statement writes `buffer`.
bool written(const ir::Program& program, ir::BufferId buffer) {
  Accesses accesses(buffer);
  for (const auto& step : program.steps)
    accesses.visitAll(step.body);
  return accesses.writes;
}

class LL128AtomicStrategy final : public SyncStrategy {
public:
  SyncKind kind() const override { return SyncKind::LL128Atomic; }

  /// The puts into the slots become line adds into the owner's accumulation buffer; this rank
  /// adds its own part too; the reduce becomes the take of the completed lines (plus its addends).
  std::optional<ir::Program> rewriteStatements(const ir::Program& program, const VerifyResult&,
                                               const SyncContext& context,
                                               Diagnostics& diags) const override {
    const llvm::SMLoc loc = program.syncLoc.isValid() ? program.syncLoc : program.loc;
    if (context.op != ReduceOp::Sum) {
      diags.error(loc, prefix(program) +
                           "it reduces with the GPU's atomic add, which computes a sum; the "
                           "variant asks for '" +
                           std::string(name(context.op)) + "'");
      return std::nullopt;
    }
    std::optional<ReduceScatter> rs = findReduce(program);
    if (!rs || !findPut(program, *rs)) {
      diags.error(loc, prefix(program) + kPatternRule);
      return std::nullopt;
    }
    ir::Program result = program;
    const auto& reduce =
        program.steps[size_t(rs->reduceStep)].body[rs->reduceIndex]->as<ir::Assign>();
    const ir::Operand& own = reduce.operands[rs->own];
    const ir::Operand& peers = reduce.operands[1 - rs->own];

    // The slots become one accumulation buffer and a side buffer with each line's first element.
    const ir::Buffer& slots = program.buffer(rs->slots);
    ir::Buffer side;
    side.name = slots.name + ".line_heads";
    side.generated = true;
    side.role = ir::BufferRole::Scratch;
    side.slots = ExprNode::constant(1);
    side.slotElems = slots.slotElems;
    side.storage = ir::Storage::LineHeads;
    side.loc = slots.loc;
    side.scratchIndex = int(result.scratchBuffers().size());
    ir::Buffer& acc = result.buffers[size_t(rs->slots)];
    acc.slots = ExprNode::constant(1);
    acc.storage = ir::Storage::AtomicLines;
    acc.side = int(result.buffers.size());
    result.buffers.push_back(side);

    // Every put into the slots adds into the owner's lines instead.
    const auto& loop = program.steps[size_t(rs->putStep)].body[rs->putIndex]->as<ir::For>();
    const auto& put = loop.body[0]->as<ir::Put>();
    ir::Region accumulated = put.target;
    accumulated.slot = ExprNode::constant(0);
    accumulated.text = put.target.text + " (accumulated)";
    auto add = std::make_shared<ir::Put>(put.loc, put.source, accumulated, ir::StoreKind::LineAdd);
    result.steps[size_t(rs->putStep)].body[rs->putIndex] =
        std::make_shared<ir::For>(loop.loc, loop.var, loop.index, loop.range, loop.begin, loop.end,
                                  loop.value, std::vector<ir::Stmt>{add});

    // This rank adds its own part where it is ready: with the puts when nothing writes it (the
    // input), else right before the take, in the reduce's step.
    ir::Region mine = peers.region;
    mine.slot = ExprNode::constant(0);
    mine.owner = nullptr;
    mine.text = slots.name + " (this rank's own part)";
    auto ownAdd = std::make_shared<ir::Put>(reduce.loc, own, mine, ir::StoreKind::LineAdd);
    const bool ownReadyEarly = !written(program, own.region.buffer);

    // The reduce takes the completed lines, then adds its addends.
    ir::Operand lines;
    lines.region = peers.region;
    lines.region.slot = ExprNode::constant(0);
    lines.region.text = slots.name + " (completed lines)";
    lines.load = ir::LoadKind::TakeLine;
    auto take = std::make_shared<ir::Assign>(reduce.loc, reduce.target, !reduce.addends.empty(),
                                             std::vector<ir::Operand>{lines}, reduce.addends);
    auto& reduceBody = result.steps[size_t(rs->reduceStep)].body;
    reduceBody[rs->reduceIndex] = take;
    if (ownReadyEarly)
      result.steps[size_t(rs->putStep)].body.push_back(ownAdd);
    else
      reduceBody.insert(reduceBody.begin() + long(rs->reduceIndex), ownAdd);
    return result;
  }

  std::optional<ir::Program> lower(const ir::Program& program, const VerifyResult& proof,
                                   const SyncContext&, Diagnostics& diags) const override {
    // The rest of the collective (the all-gather) synchronizes by data arrival, as LL does.
    if (!checkDataArrivalApplies(program, proof, "ll128_atomic", diags))
      return std::nullopt;
    std::set<int> packets;
    for (int index : proof.remotelyWritten)
      if (program.buffers[size_t(index)].storage != ir::Storage::AtomicLines)
        packets.insert(index);
    ir::Program result = pollBuffers(program, packets, ir::Storage::Packets,
                                     ir::LoadKind::PollPacket, ir::StoreKind::FlaggedPacket);
    // Loops run to whole lines, so that the 8 threads of a line always act together.
    result = shapeLoops(result, ir::LoopShape::WholeLines);
    result.scratchCopies = 2;
    return result;
  }

  /// A line is added 16 bytes per thread, 8 threads per 128-byte line.
  int vectorBytes(int) const override { return 16; }
  bool walksWholeLines() const override { return true; }

  std::vector<std::string_view> deviceHelpers() const override {
    return {"ll.cuh", "atomic_lines.cuh"};
  }
};

} // namespace

const SyncStrategy& syncStrategyLL128Atomic() {
  static const LL128AtomicStrategy strategy;
  return strategy;
}

} // namespace collc
