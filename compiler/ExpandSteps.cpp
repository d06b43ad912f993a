#include "compiler/ExpandSteps.h"

#include "compiler/ir/Visitor.h"

namespace collc {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::ExprNode;

/// `e` with the variable `var` replaced by `value`, folded again.
Expr substitute(const Expr& e, const std::string& var, int64_t value) {
  if (!e)
    return e;
  switch (e->kind) {
  case ExprKind::Var:
    return e->name == var ? ExprNode::constant(value) : e;
  case ExprKind::Const:
  case ExprKind::Rank:
  case ExprKind::NRanks:
  case ExprKind::Count:
  case ExprKind::Root:
  case ExprKind::RowLength:
    return e;
  case ExprKind::ChunkSize:
    return ExprNode::chunkSize(substitute(e->a, var, value));
  case ExprKind::ChunkBegin:
    return ExprNode::chunkBegin(substitute(e->a, var, value), substitute(e->b, var, value));
  case ExprKind::ChunkLength:
    return ExprNode::chunkLength(substitute(e->a, var, value), substitute(e->b, var, value));
  default:
    return ExprNode::binary(e->kind, substitute(e->a, var, value), substitute(e->b, var, value));
  }
}

/// Replaces the repetition variable by its value everywhere; an `if` whose condition became 1 is
/// replaced by its body, one whose condition became 0 disappears.
class Substitution : public ir::Mutator {
public:
  Substitution(std::string var, int64_t value) : var_(std::move(var)), value_(value) {}

  void mutateInto(const ir::Stmt& stmt, std::vector<ir::Stmt>& out) override {
    if (stmt->kind == ir::StmtKind::If) {
      const auto& s = stmt->as<ir::If>();
      Expr condition = mutateExpr(s.condition);
      if (condition->kind == ExprKind::Const) {
        if (condition->value != 0)
          for (const ir::Stmt& inner : s.body)
            mutateInto(inner, out);
        return;
      }
    }
    ir::Mutator::mutateInto(stmt, out);
  }

private:
  Expr mutateExpr(const Expr& e) override { return substitute(e, var_, value_); }
  std::string var_;
  int64_t value_;
};

} // namespace

std::optional<std::vector<ir::Step>> expandRepeatedSteps(const ir::Program& program, int nranks,
                                                         Diagnostics& diags) {
  std::vector<ir::Step> steps;
  // expanded[t]: the indices of the steps template step t became.
  std::vector<std::vector<int>> expanded(program.steps.size());
  for (const ir::Step& step : program.steps) {
    int64_t begin = 0, end = 1;
    const bool repeated = !step.repeatVar.empty();
    if (repeated) {
      ir::Env env;
      env.nranks = nranks;
      std::string why;
      auto b = ir::evaluate(step.repeatBegin, env, &why);
      auto e = b ? ir::evaluate(step.repeatEnd, env, &why) : std::nullopt;
      if (!b || !e) {
        diags.error(step.loc, "cannot evaluate the repetitions of step '" + step.name +
                                  "': " + why + " (nranks=" + std::to_string(nranks) + ")");
        return std::nullopt;
      }
      begin = *b;
      end = std::max(*b, *e);
      if (end - begin > kMaxStepRepetitions) {
        diags.error(step.loc, "step '" + step.name + "' repeats " + std::to_string(end - begin) +
                                  " times; at most " + std::to_string(kMaxStepRepetitions) +
                                  " are supported (nranks=" + std::to_string(nranks) + ")");
        return std::nullopt;
      }
    }
    for (int64_t value = begin; value < end; ++value) {
      ir::Step copy;
      copy.name = repeated ? step.name + "[" + step.repeatVar + "=" + std::to_string(value) + "]"
                           : step.name;
      copy.index = int(steps.size());
      copy.loc = step.loc;
      for (const ir::Wait& wait : step.waits) {
        if (wait.step == step.index) {
          if (value > begin)
            copy.waits.push_back({copy.index - 1, wait.loc});
          continue;
        }
        for (int target : expanded[wait.step])
          copy.waits.push_back({target, wait.loc});
      }
      Substitution substitution(repeated ? step.repeatVar : std::string(), value);
      copy.body = substitution.mutateAll(step.body);
      expanded[step.index].push_back(copy.index);
      steps.push_back(std::move(copy));
    }
  }
  return steps;
}

} // namespace collc
