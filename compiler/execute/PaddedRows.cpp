#include "compiler/execute/PaddedRows.h"

#include "compiler/ir/RowOps.h"
#include "compiler/ir/Visitor.h"

#include <map>
#include <tuple>

namespace collc::execute {
namespace {

using ir::ExprKind;
using ir::ExprNode;

/// n / L * round_up(ceil_div(L, 16), 4): every row's padded blocks, without the padding rows.
ir::Expr rowsAlone() {
  return ExprNode::binary(
      ExprKind::Mul, ExprNode::binary(ExprKind::Div, ExprNode::count(), ExprNode::rowLength()),
      ExprNode::binary(
          ExprKind::RoundUp,
          ExprNode::binary(ExprKind::CeilDiv, ExprNode::rowLength(), ExprNode::constant(16)),
          ExprNode::constant(4)));
}

/// round_up(n / L, 128) * round_up(ceil_div(L, 16), 4): the size Sema requires (RowEpilogue.cpp).
ir::Expr padded() {
  return ExprNode::binary(
      ExprKind::Mul,
      ExprNode::binary(ExprKind::RoundUp,
                       ExprNode::binary(ExprKind::Div, ExprNode::count(), ExprNode::rowLength()),
                       ExprNode::constant(128)),
      rowsAlone()->b);
}

/// Every region of `program` with the statement naming it.
struct Named {
  const ir::Region* region;
  const ir::RowStmt* row; // the row statement it is a parameter of, k its index; else null
  size_t k;
};

/// The row statements' parameters, for namedRegions.
class RowParams : public ir::Visitor {
public:
  std::map<const ir::Region*, std::pair<const ir::RowStmt*, size_t>> of;

private:
  void visitRow(const ir::RowStmt& s) override {
    for (size_t k = 0; k < s.params.size(); ++k)
      of[&s.params[k].region] = {&s, k};
  }
};

std::vector<Named> namedRegions(const ir::Program& program) {
  RowParams params;
  std::vector<Named> named;
  for (const auto& step : program.steps) {
    params.visitAll(step.body);
    ir::forEachRegion(step.body, [&](const ir::Region& region) {
      named.push_back({&region, nullptr, 0});
    });
  }
  for (Named& each : named)
    if (auto it = params.of.find(each.region); it != params.of.end())
      std::tie(each.row, each.k) = it->second;
  return named;
}

const ir::RowParam* paramOf(const Named& named) {
  if (!named.row)
    return nullptr;
  const ir::RowOpInfo& info = ir::rowOpInfo(named.row->op);
  return named.k < info.params.size() ? &info.params[named.k] : nullptr;
}

bool written(const Named& named) {
  const ir::RowParam* param = paramOf(named);
  return param && param->access == ir::RowParamAccess::Written;
}

bool isZero(const ir::Expr& e) {
  return ir::structurallyEqual(e, ExprNode::constant(0));
}

} // namespace

std::vector<ir::Expr> unpaddedSizes(const ir::Program& program) {
  std::vector<ir::Expr> sizes(program.buffers.size());
  const std::vector<Named> regions = namedRegions(program);
  std::vector<int> names(program.buffers.size(), 0);
  for (const Named& named : regions)
    if (named.region->buffer >= 0 && size_t(named.region->buffer) < names.size())
      ++names[size_t(named.region->buffer)];
  for (const Named& named : regions) {
    const ir::RowParam* param = paramOf(named);
    if (!written(named) || param->shape != ir::RowParamShape::SwizzledBlocks)
      continue;
    const ir::Region& region = *named.region;
    const ir::Buffer& buffer = program.buffer(region);
    if (names[size_t(region.buffer)] != 1 || region.owner || !isZero(region.slot) ||
        !isZero(region.offset) || !ir::structurallyEqual(buffer.slots, ExprNode::constant(1)) ||
        !ir::structurallyEqual(buffer.slotElems, padded()) ||
        !ir::structurallyEqual(region.length, buffer.slotElems) ||
        !ir::structurallyEqual(region.bound, buffer.slotElems))
      continue;
    sizes[size_t(region.buffer)] = rowsAlone();
  }
  return sizes;
}

const ir::Region* writtenParamNamedElsewhere(const ir::Program& program, std::string* writer) {
  const std::vector<Named> regions = namedRegions(program);
  for (const Named& param : regions) {
    if (!written(param))
      continue;
    for (const Named& other : regions)
      if (other.region != param.region && other.region->buffer == param.region->buffer) {
        if (writer)
          *writer = std::string(ir::rowOpInfo(param.row->op).displayName);
        return other.region;
      }
  }
  return nullptr;
}

} // namespace collc::execute
