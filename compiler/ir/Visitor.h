// Walking and rewriting statements. A Visitor reads a tree (the default for a node with a body
// visits the body); a Mutator builds a new one (the default rebuilds a node from its mutated
// parts: expressions, regions, operands, body). Passes override the cases they care about.
#ifndef COLLC_COMPILER_IR_VISITOR_H
#define COLLC_COMPILER_IR_VISITOR_H

#include "compiler/ir/IR.h"

#include <functional>

namespace collc::ir {

class Visitor {
public:
  virtual ~Visitor() = default;
  void visit(const Stmt& stmt);
  void visitAll(const std::vector<Stmt>& body);

protected:
  virtual void visitFor(const For& s) { visitAll(s.body); }
  virtual void visitIf(const If& s) { visitAll(s.body); }
  virtual void visitPut(const Put&) {}
  virtual void visitAtomicAdd(const AtomicAdd&) {}
  virtual void visitAssign(const Assign&) {}
  virtual void visitRow(const RowStmt&) {}
  virtual void visitElementLoop(const ElementLoop& s) { visitAll(s.body); }
  virtual void visitRowLoop(const RowLoop& s) { visitAll(s.body); }
  virtual void visitBarrier(const Barrier&) {}
  virtual void visitLet(const Let&) {}
};

/// Calls `visit` with every region a statement and the statements nested in it read or write.
void forEachRegion(const Stmt& stmt, const std::function<void(const Region&)>& visit);
void forEachRegion(const std::vector<Stmt>& body, const std::function<void(const Region&)>& visit);

class Mutator {
public:
  virtual ~Mutator() = default;
  /// The rewritten statement; null drops it.
  Stmt mutate(const Stmt& stmt);
  /// Appends what `stmt` becomes to `out`: by default mutate(stmt) unless null. Override to turn
  /// one statement into several (an `if` whose condition became true becomes its body).
  virtual void mutateInto(const Stmt& stmt, std::vector<Stmt>& out);
  std::vector<Stmt> mutateAll(const std::vector<Stmt>& body);

protected:
  virtual Expr mutateExpr(const Expr& e) { return e; }
  virtual Region mutateRegion(const Region& region);
  virtual Operand mutateOperand(const Operand& operand);

  virtual Stmt mutateFor(const For& s);
  virtual Stmt mutateIf(const If& s);
  virtual Stmt mutatePut(const Put& s);
  virtual Stmt mutateAtomicAdd(const AtomicAdd& s);
  virtual Stmt mutateAssign(const Assign& s);
  virtual Stmt mutateRow(const RowStmt& s);
  virtual Stmt mutateElementLoop(const ElementLoop& s);
  virtual Stmt mutateRowLoop(const RowLoop& s);
  virtual Stmt mutateBarrier(const Barrier& s);
  virtual Stmt mutateLet(const Let& s);

  std::vector<Operand> mutateOperands(const std::vector<Operand>& operands);
};

/// `program` with every step's body rewritten by `mutator`.
Program mutateSteps(const Program& program, Mutator& mutator);

} // namespace collc::ir

#endif // COLLC_COMPILER_IR_VISITOR_H
