// The row operations (ir::RowOp), one entry each: everything the passes need to know about an op
// without knowing what it computes. Adding an op: an entry here, its lowering in CudaCodeGen.cpp
// (with its device files in compiler/device/), its float64 meaning in the interpreter, and its
// spelling in the parser.
#ifndef COLLC_COMPILER_IR_ROWOPS_H
#define COLLC_COMPILER_IR_ROWOPS_H

#include "compiler/ir/IR.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collc::ir {

/// How many elements a parameter of a row operation has.
enum class RowParamShape {
  OneRow,     // a row long (rmsnorm's weight): `NAME: T[ROWS]` in the header
  OneElement, // one element (a per-tensor quantization scale): `NAME: f32[1]`
  OnePerRow,  // one element per row of the target (a per-token scale): `NAME: f32[n / ROWS]`
  /// ceil_div(ROWS, 16) elements per row, row t's block b at t * ceil_div(ROWS, 16) + b (NVFP4's
  /// block scales, linear): `NAME: fp8e4m3[n / ROWS * ceil_div(ROWS, 16)]`
  BlocksPerRow,
  /// The 128x4-swizzled matrix of those blocks the block-scaled GEMMs read: rows padded to 128,
  /// blocks per row to 4 (interpret/Float4.h's nvfp4SwizzledOffset):
  /// `NAME: fp8e4m3[round_up(n / ROWS, 128) * round_up(ceil_div(ROWS, 16), 4)]`
  SwizzledBlocks,
};

/// The elements of a parameter of `shape` that row t writes: 1 for OnePerRow, the row's blocks,
/// or for SwizzledBlocks its padded blocks (which the verifier places at their swizzled offsets
/// where the count is a number, and as the run of this many at t times it where it is symbolic:
/// the swizzle is a one-to-one renaming of those elements); 0 for a shape that is read.
int64_t writtenElementsPerRow(RowParamShape shape, int64_t rowLength);

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
  /// NVFP4 (interpret/Float4.h): q = e2m1(x * GS / SF), SF = e4m3(GS * amax(block) / 6) per 16
  /// elements of a row, written; GS a caller's f32[1] (read only)
  Nvfp4BlockScale,         // the block scales linear (`block_scale=BS, global_scale=GS`)
  Nvfp4SwizzledBlockScale, // 128x4-swizzled (`swizzled_block_scale=BS, global_scale=GS`)
};

/// The blocks a quantizing op cuts each row into, each quantized whole by adjacent lanes of a
/// kernel: the row length must be a multiple of `elems`, and a vector must divide a block.
struct RowQuantBlock {
  int64_t elems = 0;       // elements of a block; 0: the op quantizes no blocks
  std::string_view format; // the format's name in messages ("NVFP4")
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
  RowQuantBlock quantBlock = {};             // its blocks, if it quantizes blocks of a row
};

/// Every entry, in the order of ir::RowOp.
const std::vector<RowOpInfo>& allRowOps();

/// The entry of `op`.
const RowOpInfo& rowOpInfo(RowOp op);

/// The op a spec names (its row function and its quantization), or nullptr.
const RowOpInfo* findRowOp(std::string_view name, RowQuant quant = RowQuant::None);

/// The keyword arguments of a quantization, naming the op's parameters after the first (the
/// weight) in their order: {"scale"}, {"block_scale", "global_scale"}; none for RowQuant::None.
std::vector<std::string_view> quantKeywords(RowQuant quant);

/// The quantization whose keywords are exactly `keywords` (in any order), or nullopt.
std::optional<RowQuant> findQuant(const std::vector<std::string_view>& keywords);

/// Every quantization that takes `keyword`.
std::vector<RowQuant> quantsTaking(std::string_view keyword);

/// Every quantization keyword, for messages: "'scale', 'token_scale', ...".
std::string allQuantKeywords();

} // namespace collc::ir

#endif // COLLC_COMPILER_IR_ROWOPS_H
