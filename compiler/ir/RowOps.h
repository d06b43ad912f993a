// The row operations (ir::RowOp), one entry each: everything the passes need to know about an op
// without knowing what it computes. Adding an op: an entry here, its lowering in CudaCodeGen.cpp
// (with its device files in compiler/device/), its float64 meaning in the interpreter, and its
// spelling in the parser.
#ifndef COLLC_COMPILER_IR_ROWOPS_H
#define COLLC_COMPILER_IR_ROWOPS_H

#include "compiler/ir/IR.h"

#include <optional>
#include <string_view>
#include <vector>

namespace collc::ir {

/// How many elements a parameter of a row operation has.
enum class RowParamShape {
  OneRow,     // a row long (rmsnorm's weight): `NAME: T[ROWS]` in the header
  OneElement, // one element (a per-tensor quantization scale): `NAME: f32[1]`
  OnePerRow,  // one element per row of the target (a per-token scale): `NAME: f32[n / ROWS]`
};

/// Whether the statement reads a parameter (whole, by every row) or writes it: element t by the
/// block that owns row t, from row t's values, after the row's complete read. A written
/// parameter is a second output of the statement: no other statement may name its buffer, and
/// it is never in place with the target, the rows or another parameter.
enum class RowParamAccess { Read, Written };

struct RowParam {
  std::string_view name; // in messages and IR dumps ("weight")
  RowParamShape shape;
  std::optional<ElementType> type; // the element type it must have; nullopt: `T`
  RowParamAccess access = RowParamAccess::Read;
};

/// How a row statement's result is stored: as computed (rounded once to the target's `T`), or
/// quantized with a scale (`quantize(ROWOP, scale=S)`).
enum class RowQuant {
  None,
  PerTensorScale, // q = e4m3(x / S[0]), S a caller's f32[1] (read only)
  PerTokenScale,  // q = e4m3(x / S[t]), S[t] from row t's values, written (f32[n / ROWS])
};

struct RowOpInfo {
  RowOp op;
  std::string_view name;                     // the spec's row function ("rmsnorm")
  RowQuant quant;                            // and the quantization around it
  std::string_view displayName;              // in messages ("rmsnorm", "quantize(rmsnorm, scale)")
  std::vector<RowParam> params;              // after the rows, in the order the spec gives them
  std::vector<std::string_view> helperFiles; // its device files, pasted after rows.cuh (helper
                                             // files outside the strategies' lists go in name
                                             // order)
  std::optional<ElementType> targetType;     // the element type its target must have; nullopt: `T`
};

/// Every entry, in the order of ir::RowOp.
const std::vector<RowOpInfo>& allRowOps();

/// The entry of `op`.
const RowOpInfo& rowOpInfo(RowOp op);

/// The op a spec names (its row function and its quantization), or nullptr.
const RowOpInfo* findRowOp(std::string_view name, RowQuant quant = RowQuant::None);

/// The spelling of a quantization's keyword argument ("scale"), or "" for RowQuant::None.
std::string_view quantKeyword(RowQuant quant);

/// The quantization a keyword names, or nullopt.
std::optional<RowQuant> findQuantKeyword(std::string_view keyword);

} // namespace collc::ir

#endif // COLLC_COMPILER_IR_ROWOPS_H
