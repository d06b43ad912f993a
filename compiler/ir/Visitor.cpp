#include "compiler/ir/Visitor.h"

#include "dsl/Diagnostics.h"

namespace collc::ir {

void Visitor::visit(const Stmt& stmt) {
  switch (stmt->kind) {
  case StmtKind::For:
    return visitFor(stmt->as<For>());
  case StmtKind::If:
    return visitIf(stmt->as<If>());
  case StmtKind::Put:
    return visitPut(stmt->as<Put>());
  case StmtKind::AtomicAdd:
    return visitAtomicAdd(stmt->as<AtomicAdd>());
  case StmtKind::Assign:
    return visitAssign(stmt->as<Assign>());
  case StmtKind::Row:
    return visitRow(stmt->as<RowStmt>());
  case StmtKind::ElementLoop:
    return visitElementLoop(stmt->as<ElementLoop>());
  case StmtKind::RowLoop:
    return visitRowLoop(stmt->as<RowLoop>());
  case StmtKind::Barrier:
    return visitBarrier(stmt->as<Barrier>());
  case StmtKind::Let:
    return visitLet(stmt->as<Let>());
  }
}

void Visitor::visitAll(const std::vector<Stmt>& body) {
  for (const Stmt& stmt : body)
    visit(stmt);
}

namespace {

class RegionVisitor : public Visitor {
public:
  explicit RegionVisitor(const std::function<void(const Region&)>& f) : f_(f) {}

private:
  void operand(const Operand& o) { f_(o.region); }
  void visitPut(const Put& s) override {
    f_(s.target);
    operand(s.source);
  }
  void visitAtomicAdd(const AtomicAdd& s) override {
    f_(s.target);
    operand(s.source);
  }
  void visitAssign(const Assign& s) override {
    f_(s.target);
    for (const Operand& o : s.operands)
      operand(o);
    for (const Operand& o : s.addends)
      operand(o);
  }
  void visitRow(const RowStmt& s) override {
    f_(s.target);
    operand(s.rows);
    for (const Operand& o : s.params)
      operand(o);
  }
  void visitLet(const Let& s) override { operand(s.value); }
  const std::function<void(const Region&)>& f_;
};

} // namespace

void forEachRegion(const Stmt& stmt, const std::function<void(const Region&)>& visit) {
  RegionVisitor visitor(visit);
  visitor.visit(stmt);
}

void forEachRegion(const std::vector<Stmt>& body, const std::function<void(const Region&)>& visit) {
  RegionVisitor visitor(visit);
  visitor.visitAll(body);
}

Stmt Mutator::mutate(const Stmt& stmt) {
  switch (stmt->kind) {
  case StmtKind::For:
    return mutateFor(stmt->as<For>());
  case StmtKind::If:
    return mutateIf(stmt->as<If>());
  case StmtKind::Put:
    return mutatePut(stmt->as<Put>());
  case StmtKind::AtomicAdd:
    return mutateAtomicAdd(stmt->as<AtomicAdd>());
  case StmtKind::Assign:
    return mutateAssign(stmt->as<Assign>());
  case StmtKind::Row:
    return mutateRow(stmt->as<RowStmt>());
  case StmtKind::ElementLoop:
    return mutateElementLoop(stmt->as<ElementLoop>());
  case StmtKind::RowLoop:
    return mutateRowLoop(stmt->as<RowLoop>());
  case StmtKind::Barrier:
    return mutateBarrier(stmt->as<Barrier>());
  case StmtKind::Let:
    return mutateLet(stmt->as<Let>());
  }
  internalError("unknown statement kind");
}

void Mutator::mutateInto(const Stmt& stmt, std::vector<Stmt>& out) {
  if (Stmt result = mutate(stmt))
    out.push_back(std::move(result));
}

std::vector<Stmt> Mutator::mutateAll(const std::vector<Stmt>& body) {
  std::vector<Stmt> out;
  for (const Stmt& stmt : body)
    mutateInto(stmt, out);
  return out;
}

Region Mutator::mutateRegion(const Region& region) {
  Region r = region;
  auto expr = [&](Expr& e) {
    if (e)
      e = mutateExpr(e);
  };
  expr(r.owner);
  expr(r.slot);
  expr(r.offset);
  expr(r.length);
  expr(r.bound);
  return r;
}

Operand Mutator::mutateOperand(const Operand& operand) {
  Operand o = operand;
  o.region = mutateRegion(operand.region);
  return o;
}

std::vector<Operand> Mutator::mutateOperands(const std::vector<Operand>& operands) {
  std::vector<Operand> out;
  for (const Operand& o : operands)
    out.push_back(mutateOperand(o));
  return out;
}

Stmt Mutator::mutateFor(const For& s) {
  return std::make_shared<For>(s.loc, s.var, s.index, s.range, mutateExpr(s.begin),
                               mutateExpr(s.end), mutateExpr(s.value), mutateAll(s.body));
}

Stmt Mutator::mutateIf(const If& s) {
  return std::make_shared<If>(s.loc, mutateExpr(s.condition), mutateAll(s.body));
}

Stmt Mutator::mutatePut(const Put& s) {
  return std::make_shared<Put>(s.loc, mutateOperand(s.source), mutateRegion(s.target), s.store);
}

Stmt Mutator::mutateAtomicAdd(const AtomicAdd& s) {
  return std::make_shared<AtomicAdd>(s.loc, mutateOperand(s.source), mutateRegion(s.target));
}

Stmt Mutator::mutateAssign(const Assign& s) {
  return std::make_shared<Assign>(s.loc, mutateRegion(s.target), s.reduce,
                                  mutateOperands(s.operands), mutateOperands(s.addends), s.store,
                                  s.keep);
}

Stmt Mutator::mutateRow(const RowStmt& s) {
  return std::make_shared<RowStmt>(s.loc, s.op, mutateRegion(s.target), mutateOperand(s.rows),
                                   mutateOperands(s.params), s.store);
}

Stmt Mutator::mutateElementLoop(const ElementLoop& s) {
  return std::make_shared<ElementLoop>(s.loc, mutateExpr(s.bound), s.shape, s.vectorElems, s.unroll,
                                       mutateAll(s.body));
}

Stmt Mutator::mutateRowLoop(const RowLoop& s) {
  return std::make_shared<RowLoop>(s.loc, s.cachedVectors, mutateAll(s.body));
}

Stmt Mutator::mutateBarrier(const Barrier& s) {
  return std::make_shared<Barrier>(s.loc, s.index, s.scope, s.orders);
}

Stmt Mutator::mutateLet(const Let& s) {
  return std::make_shared<Let>(s.loc, s.reg, mutateOperand(s.value));
}

Program mutateSteps(const Program& program, Mutator& mutator) {
  Program result = program;
  for (Step& step : result.steps)
    step.body = mutator.mutateAll(step.body);
  return result;
}

} // namespace collc::ir
