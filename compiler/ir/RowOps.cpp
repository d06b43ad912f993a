#include "compiler/ir/RowOps.h"

#include "dsl/Diagnostics.h"

namespace collc::ir {

const std::vector<RowOpInfo>& allRowOps() {
  static const std::vector<RowOpInfo> ops = {
      {RowOp::RmsNorm, "rmsnorm", {{"weight", RowParamShape::OneRow}}, "rows_rmsnorm.cuh"},
  };
  return ops;
}

const RowOpInfo& rowOpInfo(RowOp op) {
  for (const RowOpInfo& info : allRowOps())
    if (info.op == op)
      return info;
  internalError("a row operation without an entry in RowOps.cpp");
}

const RowOpInfo* findRowOp(std::string_view name) {
  for (const RowOpInfo& info : allRowOps())
    if (info.name == name)
      return &info;
  return nullptr;
}

} // namespace collc::ir
