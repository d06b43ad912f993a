// The row operations (ir::RowOp), one entry each: everything the passes need to know about an op
// without knowing what it computes. Adding an op: an entry here, its lowering in CudaCodeGen.cpp
// (with its device file in compiler/device/), its float64 meaning in the interpreter, and its
// name in the parser.
#ifndef COLLC_COMPILER_IR_ROWOPS_H
#define COLLC_COMPILER_IR_ROWOPS_H

#include "compiler/ir/IR.h"

#include <string_view>
#include <vector>

namespace collc::ir {

/// How many elements a parameter of a row operation has; it is always read whole.
enum class RowParamShape {
  OneRow, // a row long (rmsnorm's weight): `NAME: T[ROWS]` in the header
};

struct RowParam {
  std::string_view name; // in messages and IR dumps ("weight")
  RowParamShape shape;
};

struct RowOpInfo {
  RowOp op;
  std::string_view name;        // the spec's function name ("rmsnorm")
  std::vector<RowParam> params; // after the rows, in the order the spec gives them
  std::string_view helperFile;  // its device file, pasted after rows.cuh (helper files outside
                                // the strategies' lists go in name order)
};

/// Every entry, in the order of ir::RowOp.
const std::vector<RowOpInfo>& allRowOps();

/// The entry of `op`.
const RowOpInfo& rowOpInfo(RowOp op);

/// The op a spec names, or nullptr.
const RowOpInfo* findRowOp(std::string_view name);

} // namespace collc::ir

#endif // COLLC_COMPILER_IR_ROWOPS_H
