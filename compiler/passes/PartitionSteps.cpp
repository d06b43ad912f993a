#include "compiler/RowEpilogue.h"
#include "compiler/passes/Passes.h"
#include "dsl/Diagnostics.h"

namespace collc {
namespace {

/// The bound of the element range a data statement walks: its source for transfers, its target
/// for local assignments. Loops take the bound of their body, which the split below makes a single
/// statement.
ir::Expr elementBound(const ir::Stmt& stmt) {
  switch (stmt->kind) {
  case ir::StmtKind::Put:
    return stmt->as<ir::Put>().source.region.bound;
  case ir::StmtKind::AtomicAdd:
    return stmt->as<ir::AtomicAdd>().source.region.bound;
  case ir::StmtKind::Assign:
    return stmt->as<ir::Assign>().target.bound;
  case ir::StmtKind::Row:
    return stmt->as<ir::RowStmt>().target.bound;
  case ir::StmtKind::For:
    return elementBound(stmt->as<ir::For>().body.front());
  case ir::StmtKind::If:
    return elementBound(stmt->as<ir::If>().body.front());
  default:
    internalError("statement without an element range");
  }
}

/// Splits a loop nest so that each resulting nest holds exactly one data statement (loop fission):
/// statements of one loop body may walk element ranges of different bounds.
void splitNests(const ir::Stmt& stmt, std::vector<ir::Stmt>& nests) {
  const bool isFor = stmt->kind == ir::StmtKind::For;
  if (!isFor && stmt->kind != ir::StmtKind::If) {
    nests.push_back(stmt);
    return;
  }
  const auto& body = isFor ? stmt->as<ir::For>().body : stmt->as<ir::If>().body;
  for (const auto& inner : body) {
    std::vector<ir::Stmt> innerNests;
    splitNests(inner, innerNests);
    for (auto& nest : innerNests) {
      if (isFor) {
        const auto& s = stmt->as<ir::For>();
        nests.push_back(std::make_shared<ir::For>(s.loc, s.var, s.index, s.range, s.begin, s.end,
                                                  s.value, std::vector<ir::Stmt>{nest}));
      } else {
        const auto& s = stmt->as<ir::If>();
        nests.push_back(std::make_shared<ir::If>(s.loc, s.condition, std::vector<ir::Stmt>{nest}));
      }
    }
  }
}

struct Group {
  ir::Expr bound;
  llvm::SMLoc loc;
  std::vector<ir::Stmt> stmts;
  bool rowWise = false;
};

} // namespace

ir::Program partitionSteps(const ir::Program& program) {
  ir::Program result = program;
  for (ir::Step& step : result.steps) {
    std::vector<ir::Stmt> nests;
    for (const auto& stmt : step.body)
      splitNests(stmt, nests);
    const bool byRows = hasRowStatement(step);
    std::vector<Group> groups;
    for (const auto& nest : nests) {
      ir::Expr bound = elementBound(nest);
      // A row-wise statement is a group of its own: its block must see the whole row written.
      const bool rowWise = nest->kind == ir::StmtKind::Row;
      if (!groups.empty() && !rowWise && !groups.back().rowWise &&
          ir::structurallyEqual(groups.back().bound, bound)) {
        groups.back().stmts.push_back(nest);
        continue;
      }
      groups.push_back(Group{bound, nest->loc, {nest}, rowWise});
    }
    std::vector<ir::Stmt> body;
    for (Group& group : groups) {
      if (group.rowWise)
        body.push_back(group.stmts.front());
      else
        body.push_back(std::make_shared<ir::ElementLoop>(
            group.loc, group.bound, byRows ? ir::LoopShape::RowVectors : ir::LoopShape::Vectors, 1,
            1, std::move(group.stmts)));
    }
    if (byRows)
      body = {std::make_shared<ir::RowLoop>(step.loc, 0, std::move(body))};
    step.body = std::move(body);
  }
  return result;
}

} // namespace collc
