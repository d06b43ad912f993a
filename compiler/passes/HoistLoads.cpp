#include "compiler/ir/Visitor.h"
#include "compiler/passes/Passes.h"

#include <functional>

namespace collc {
namespace {

bool mentions(const ir::Expr& e, const std::string& var) {
  if (!e)
    return false;
  if (e->kind == ir::ExprKind::Var && e->name == var)
    return true;
  return mentions(e->a, var) || mentions(e->b, var);
}

bool regionMentions(const ir::Region& r, const std::string& var) {
  return mentions(r.owner, var) || mentions(r.slot, var) || mentions(r.offset, var) ||
         mentions(r.length, var);
}

/// The put a peer loop holds (alone), if the loop runs more than once and the put's source is the
/// same for every value of the loop's variable: a plain load of this rank's memory that nothing
/// in the loop writes.
const ir::Put* invariantPut(const ir::For& loop, int nranks) {
  const int trips = loop.range == ir::LoopRange::Peers ? nranks - 1 : nranks;
  if (loop.range == ir::LoopRange::Interval || trips < 2 || loop.body.size() != 1 ||
      loop.body[0]->kind != ir::StmtKind::Put)
    return nullptr;
  const auto& put = loop.body[0]->as<ir::Put>();
  const ir::Region& source = put.source.region;
  if (put.source.load != ir::LoadKind::Plain || source.owner || regionMentions(source, loop.var) ||
      regionMentions(source, loop.index) || put.target.buffer == source.buffer)
    return nullptr;
  return &put;
}

/// In an element loop, a peer loop of puts that all send the same vector loads it once, before
/// the loop, into a register (peer loops run at least once: nranks >= 2).
class Hoisting : public ir::Mutator {
public:
  explicit Hoisting(int nranks) : nranks_(nranks) {}

private:
  ir::Stmt mutateElementLoop(const ir::ElementLoop& s) override {
    if (s.shape == ir::LoopShape::RowVectors)
      return std::make_shared<ir::ElementLoop>(s);
    std::vector<ir::Stmt> body;
    for (const auto& stmt : s.body) {
      const ir::Put* put =
          stmt->kind == ir::StmtKind::For ? invariantPut(stmt->as<ir::For>(), nranks_) : nullptr;
      if (!put) {
        body.push_back(stmt);
        continue;
      }
      const auto& loop = stmt->as<ir::For>();
      const std::string reg = "hoisted_" + std::to_string(count_++);
      body.push_back(std::make_shared<ir::Let>(put->loc, reg, put->source));
      ir::Operand fromRegister = put->source;
      fromRegister.load = ir::LoadKind::Register;
      fromRegister.reg = reg;
      auto send = std::make_shared<ir::Put>(put->loc, fromRegister, put->target, put->store);
      body.push_back(std::make_shared<ir::For>(loop.loc, loop.var, loop.index, loop.range,
                                               loop.begin, loop.end, loop.value,
                                               std::vector<ir::Stmt>{send}));
    }
    return std::make_shared<ir::ElementLoop>(s.loc, s.bound, s.shape, s.vectorElems, s.unroll,
                                             std::move(body));
  }
  int nranks_;
  int count_ = 0; // names each register of the kernel apart
};

} // namespace

ir::Program hoistLoads(const ir::Program& program, int nranks) {
  Hoisting hoisting(nranks);
  return ir::mutateSteps(program, hoisting);
}

} // namespace collc
