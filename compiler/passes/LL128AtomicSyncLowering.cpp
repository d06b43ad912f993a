#include "compiler/passes/DataArrival.h"
#include "compiler/passes/Passes.h"

namespace collc {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::ExprNode;

/// The reduce-scatter this strategy replaces: peers put their part of this rank's chunk into
/// per-sender slots of `slots` (`put Y -> p.slots[rank]`), and one reduce combines this rank's own
/// part with every slot (`T = reduce(X, slots[peers])`).
struct ReduceScatter {
  ir::Buffer* slots = nullptr;
  int reduceStep = -1;
  size_t reduceIndex = 0;                   // position of the reduce in its step's body
  std::vector<std::pair<int, size_t>> puts; // (step, position) of the top-level statements
};

bool isRank(const Expr& e) {
  return e && e->kind == ExprKind::Rank;
}
bool isZero(const Expr& e) {
  return e && e->kind == ExprKind::Const && e->value == 0;
}

/// The single data statement inside a (possibly nested) loop, or the statement itself.
const ir::Stmt* innermost(const ir::Stmt& stmt) {
  const ir::Stmt* s = &stmt;
  while (s->kind == ir::StmtKind::Loop) {
    if (s->body.size() != 1)
      return nullptr;
    s = s->body.front().get();
  }
  return s;
}

bool writesTo(const ir::Stmt& stmt, const ir::Buffer* buffer) {
  if (stmt.kind == ir::StmtKind::Loop) {
    for (const auto& inner : stmt.body)
      if (writesTo(*inner, buffer))
        return true;
    return false;
  }
  return stmt.target.buffer == buffer;
}

bool readsFrom(const ir::Stmt& stmt, const ir::Buffer* buffer) {
  if (stmt.kind == ir::StmtKind::Loop) {
    for (const auto& inner : stmt.body)
      if (readsFrom(*inner, buffer))
        return true;
    return false;
  }
  for (const auto& source : stmt.sources)
    if (source.buffer == buffer)
      return true;
  for (const auto& operand : stmt.operands)
    if (operand.region.buffer == buffer)
      return true;
  return false;
}

/// Finds the pattern; empty `slots` if the spec has none (or it is used in any other way).
ReduceScatter findReduceScatter(ir::Program& program) {
  ReduceScatter found;
  for (auto& step : program.steps) {
    for (size_t k = 0; k < step.body.size(); ++k) {
      const ir::Stmt& stmt = *step.body[k];
      if (stmt.kind != ir::StmtKind::Reduce || stmt.operands.size() != 2)
        continue;
      const ir::ReduceOperand& own = stmt.operands[0];
      const ir::ReduceOperand& peers = stmt.operands[1];
      if (own.set || !peers.set || *peers.set != ir::LoopRange::Peers || own.region.owner)
        continue;
      const ir::Buffer* buffer = peers.region.buffer;
      if (buffer->role != ir::BufferRole::Scratch || !isZero(peers.region.offset) ||
          !peers.region.slot || peers.region.slot->kind != ExprKind::Var)
        continue;
      found.slots = nullptr;
      for (auto& candidate : program.buffers)
        if (candidate.get() == buffer)
          found.slots = candidate.get();
      found.reduceStep = step.index;
      found.reduceIndex = k;
      return found;
    }
  }
  return found;
}

/// Checks that every write to the slots is `put Y -> p.slots[rank]` at the top of an earlier step
/// and that nothing but the reduce reads them; collects the puts.
bool collectPuts(const ir::Program& program, ReduceScatter& rs) {
  for (const auto& step : program.steps) {
    for (size_t k = 0; k < step.body.size(); ++k) {
      const ir::Stmt& stmt = *step.body[k];
      if (step.index == rs.reduceStep && k == rs.reduceIndex)
        continue;
      if (readsFrom(stmt, rs.slots))
        return false;
      if (!writesTo(stmt, rs.slots))
        continue;
      const ir::Stmt* put = innermost(stmt);
      if (!put || put->kind != ir::StmtKind::Put || !isRank(put->target.slot) ||
          !isZero(put->target.offset) || step.index >= rs.reduceStep)
        return false;
      rs.puts.push_back({step.index, k});
    }
  }
  return !rs.puts.empty();
}

/// `stmt` with its innermost put turned into an atomic line add into `acc` (slot 0).
ir::StmtPtr rewritePut(const ir::Stmt& stmt, const ir::Buffer* acc) {
  auto copy = std::make_shared<ir::Stmt>(stmt);
  if (stmt.kind == ir::StmtKind::Loop) {
    copy->body = {rewritePut(*stmt.body.front(), acc)};
    return copy;
  }
  copy->kind = ir::StmtKind::AtomicLineAdd;
  copy->target.buffer = acc;
  copy->target.slot = ExprNode::constant(0);
  copy->target.text = stmt.target.text + " (accumulated)";
  return copy;
}

} // namespace

bool lowerLL128AtomicSync(ir::Program& program, const VerifyResult& proof, ReduceOp op,
                          Diagnostics& diags) {
  const llvm::SMLoc loc = program.syncLoc.isValid() ? program.syncLoc : program.loc;
  const std::string prefix =
      "sync strategy 'll128_atomic' cannot synchronize '" + program.name + "': ";
  if (op != ReduceOp::Sum) {
    diags.error(loc, prefix +
                         "it reduces with the GPU's atomic add, which computes a sum; the "
                         "variant asks for '" +
                         std::string(name(op)) + "'");
    return false;
  }
  ReduceScatter rs = findReduceScatter(program);
  if (!rs.slots || !collectPuts(program, rs)) {
    diags.error(loc, prefix +
                         "it needs a reduce-scatter written as puts into per-sender slots "
                         "('put Y -> p.inbox[rank]') and one reduce of this rank's part with "
                         "every slot ('T = reduce(X, inbox[peers])'), as in allreduce_twoshot");
    return false;
  }
  // The rest of the collective (the all-gather) synchronizes by data arrival, as LL does.
  if (!checkDataArrivalApplies(program, proof, "ll128_atomic", diags))
    return false;

  // The per-sender slots become one accumulation buffer (1/nranks of the scratch) and a side
  // buffer with the first element of every line.
  ir::Buffer* acc = rs.slots;
  acc->slots = ExprNode::constant(1);
  acc->access = ir::BufferAccess::AtomicLines;
  auto side = std::make_unique<ir::Buffer>();
  side->name = acc->name + "_line_heads";
  side->role = ir::BufferRole::Scratch;
  side->slots = ExprNode::constant(1);
  // One element per 128-byte line of the accumulation buffer (LineHeads storage).
  side->slotElems = acc->slotElems;
  side->access = ir::BufferAccess::LineHeads;
  side->loc = acc->loc;
  int scratchCount = 0;
  for (const auto& buffer : program.buffers)
    scratchCount += buffer->role == ir::BufferRole::Scratch;
  side->scratchIndex = scratchCount;
  acc->side = side.get();

  // Every put into the slots adds into the owner's accumulation lines instead; the owner adds its
  // own part in the first put's step; the reduce takes the completed lines.
  const ir::StmtPtr reduceStmt = program.steps[rs.reduceStep].body[rs.reduceIndex];
  const ir::Stmt& reduce = *reduceStmt;
  const ir::Region own = reduce.operands[0].region;
  for (auto [step, index] : rs.puts)
    program.steps[step].body[index] = rewritePut(*program.steps[step].body[index], acc);
  auto ownAdd = std::make_shared<ir::Stmt>();
  ownAdd->kind = ir::StmtKind::AtomicLineAdd;
  ownAdd->loc = reduce.loc;
  ownAdd->sources = {own};
  ownAdd->target = reduce.operands[1].region;
  ownAdd->target.slot = ExprNode::constant(0);
  ownAdd->target.owner = nullptr; // this rank
  ownAdd->target.text = acc->name + " (this rank's own part)";
  program.steps[rs.puts.front().first].body.push_back(ownAdd);
  auto take = std::make_shared<ir::Stmt>();
  take->kind = ir::StmtKind::Copy;
  take->loc = reduce.loc;
  take->target = reduce.target;
  ir::Region lines = reduce.operands[1].region;
  lines.slot = ExprNode::constant(0);
  lines.text = acc->name + " (completed lines)";
  take->sources = {lines};
  program.steps[rs.reduceStep].body[rs.reduceIndex] = take;
  program.buffers.push_back(std::move(side));

  // The remaining buffers other ranks write (the all-gather's) become LL packet buffers.
  for (int index : proof.remotelyWritten)
    if (program.buffers[index].get() != acc)
      program.buffers[index]->access = ir::BufferAccess::LL;
  for (auto& step : program.steps)
    step.syncPointBefore = -1;
  program.syncPoints = 0;
  program.scratchCopies = 2;
  return true;
}

} // namespace collc
