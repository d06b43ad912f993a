#include "compiler/RowEpilogue.h"
#include "compiler/passes/Passes.h"

namespace collc {
namespace {

/// The bound of the element range a data statement walks: its source for transfers to peers, its
/// target for local assignments. Loops take the bound of their body, which the split below makes a
/// single statement.
ir::Expr elementBound(const ir::Stmt& stmt) {
  switch (stmt.kind) {
  case ir::StmtKind::Put:
  case ir::StmtKind::AtomicAdd:
  case ir::StmtKind::AtomicLineAdd:
    return stmt.sources[0].bound;
  case ir::StmtKind::Copy:
  case ir::StmtKind::Reduce:
  case ir::StmtKind::RowNorm:
    return stmt.target.bound;
  case ir::StmtKind::Loop:
    return elementBound(*stmt.body.front());
  }
  internalError("statement without an element range");
}

/// Splits a loop nest so that each resulting nest holds exactly one data statement (loop fission):
/// statements of one loop body may walk element ranges of different bounds.
void splitNests(const ir::StmtPtr& stmt, std::vector<ir::StmtPtr>& nests) {
  if (stmt->kind != ir::StmtKind::Loop) {
    nests.push_back(stmt);
    return;
  }
  for (const auto& inner : stmt->body) {
    std::vector<ir::StmtPtr> innerNests;
    splitNests(inner, innerNests);
    for (auto& nest : innerNests) {
      auto loop = std::make_shared<ir::Stmt>(*stmt);
      loop->body = {nest};
      nests.push_back(loop);
    }
  }
}

} // namespace

void partitionSteps(ir::Program& program) {
  for (auto& step : program.steps) {
    std::vector<ir::StmtPtr> nests;
    for (const auto& stmt : step.body)
      splitNests(stmt, nests);
    step.loops.clear();
    // Whole rows to a block, so the block can reduce over the row it has just computed.
    step.byRows = hasRowStatement(step);
    for (const auto& nest : nests) {
      ir::Expr bound = elementBound(*nest);
      // A row-wise statement is a loop of its own: its block must see the whole row written.
      const bool rowWise = nest->kind == ir::StmtKind::RowNorm;
      const bool afterRowWise =
          !step.loops.empty() && step.loops.back().stmts.back()->kind == ir::StmtKind::RowNorm;
      if (!step.loops.empty() && !rowWise && !afterRowWise &&
          ir::structurallyEqual(step.loops.back().bound, bound)) {
        step.loops.back().stmts.push_back(nest);
        continue;
      }
      ir::ElementLoop loop;
      loop.bound = bound;
      loop.stmts.push_back(nest);
      step.loops.push_back(std::move(loop));
    }
  }
}

} // namespace collc
