#include "compiler/ir/Visitor.h"
#include "compiler/passes/Passes.h"

namespace collc {
namespace {

bool sameElements(const ir::Region& a, const ir::Region& b) {
  return a.buffer == b.buffer && !a.owner && !b.owner && ir::structurallyEqual(a.slot, b.slot) &&
         ir::structurallyEqual(a.offset, b.offset);
}

/// The region a transfer reads and the length it moves: a put moves its source's length, a copy
/// its target's.
struct Transfer {
  const ir::Operand* source = nullptr;
  const ir::Region* target = nullptr;
  ir::Expr length;
};

std::optional<Transfer> transfer(const ir::Stmt& stmt) {
  if (stmt->kind == ir::StmtKind::Put) {
    const auto& put = stmt->as<ir::Put>();
    return Transfer{&put.source, &put.target, put.source.region.length};
  }
  if (stmt->kind == ir::StmtKind::Assign) {
    const auto& assign = stmt->as<ir::Assign>();
    if (!assign.reduce && assign.operands.size() == 1 && !assign.operands[0].set)
      return Transfer{&assign.operands[0], &assign.target, assign.target.length};
  }
  return std::nullopt;
}

/// True if `stmt` only copies what `reduce` stored elsewhere (puts or copies, possibly in loops)
/// and writes nothing of the buffer it was stored to.
bool onlySends(const ir::Stmt& stmt, const ir::Assign& reduce) {
  if (stmt->kind == ir::StmtKind::For || stmt->kind == ir::StmtKind::If) {
    const auto& body =
        stmt->kind == ir::StmtKind::For ? stmt->as<ir::For>().body : stmt->as<ir::If>().body;
    for (const auto& inner : body)
      if (!onlySends(inner, reduce))
        return false;
    return !body.empty();
  }
  auto t = transfer(stmt);
  return t && t->target->buffer != reduce.target.buffer && t->source->load == ir::LoadKind::Plain &&
         sameElements(t->source->region, reduce.target) &&
         ir::structurallyEqual(t->length, reduce.target.length);
}

/// The sends read `reg` instead of memory.
class ReadRegister : public ir::Mutator {
public:
  explicit ReadRegister(std::string reg) : reg_(std::move(reg)) {}

private:
  ir::Stmt mutatePut(const ir::Put& s) override {
    return std::make_shared<ir::Put>(s.loc, fromRegister(s.source), s.target, s.store);
  }
  ir::Stmt mutateAssign(const ir::Assign& s) override {
    return std::make_shared<ir::Assign>(s.loc, s.target, s.reduce,
                                        std::vector<ir::Operand>{fromRegister(s.operands[0])},
                                        s.addends, s.store, s.keep);
  }
  ir::Operand fromRegister(const ir::Operand& operand) const {
    ir::Operand o = operand;
    o.load = ir::LoadKind::Register;
    o.reg = reg_;
    return o;
  }
  std::string reg_;
};

class Forwarding : public ir::Mutator {
private:
  ir::Stmt mutateElementLoop(const ir::ElementLoop& s) override {
    if (s.shape == ir::LoopShape::RowVectors)
      return std::make_shared<ir::ElementLoop>(s);
    std::vector<ir::Stmt> body;
    for (size_t k = 0; k < s.body.size(); ++k) {
      const ir::Stmt& stmt = s.body[k];
      if (stmt->kind == ir::StmtKind::Assign && k + 1 < s.body.size()) {
        const auto& reduce = stmt->as<ir::Assign>();
        if (reduce.reduce && reduce.store == ir::StoreKind::Plain && reduce.keep.empty() &&
            onlySends(s.body[k + 1], reduce)) {
          const std::string reg = "reduced_" + std::to_string(count_++);
          body.push_back(std::make_shared<ir::Assign>(
              reduce.loc, reduce.target, true, reduce.operands, reduce.addends, reduce.store, reg));
          ReadRegister read(reg);
          body.push_back(read.mutate(s.body[k + 1]));
          ++k;
          continue;
        }
      }
      body.push_back(stmt);
    }
    return std::make_shared<ir::ElementLoop>(s.loc, s.bound, s.shape, s.vectorElems, s.unroll,
                                             std::move(body));
  }
  int count_ = 0; // names each register of the kernel apart
};

} // namespace

ir::Program forwardRegisters(const ir::Program& program) {
  Forwarding forwarding;
  return ir::mutateSteps(program, forwarding);
}

} // namespace collc
