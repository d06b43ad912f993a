#include "compiler/ir/RowOps.h"

#include "dsl/Diagnostics.h"

namespace collc::ir {

const std::vector<RowOpInfo>& allRowOps() {
  static const std::vector<RowOpInfo> ops = {
      {RowOp::RmsNorm,
       "rmsnorm",
       RowQuant::None,
       "rmsnorm",
       {{"weight", RowParamShape::OneRow, std::nullopt}},
       {"rows_rmsnorm.cuh"},
       std::nullopt},
      {RowOp::RmsNormFp8,
       "rmsnorm",
       RowQuant::PerTensorScale,
       "quantize(rmsnorm, scale)",
       {{"weight", RowParamShape::OneRow, std::nullopt},
        {"scale", RowParamShape::OneElement, ElementType::F32}},
       {"rows_rmsnorm.cuh", "fp8_e4m3.cuh", "rows_rmsnorm_fp8.cuh"},
       ElementType::F8E4M3},
      {RowOp::RmsNormFp8PerToken,
       "rmsnorm",
       RowQuant::PerTokenScale,
       "quantize(rmsnorm, token_scale)",
       {{"weight", RowParamShape::OneRow, std::nullopt},
        {"token scale", RowParamShape::OnePerRow, ElementType::F32, RowParamAccess::Written}},
       {"rows_rmsnorm.cuh", "fp8_e4m3.cuh", "fp8_per_token.cuh", "rows_fp8_per_token.cuh"},
       ElementType::F8E4M3},
  };
  return ops;
}

const RowOpInfo& rowOpInfo(RowOp op) {
  for (const RowOpInfo& info : allRowOps())
    if (info.op == op)
      return info;
  internalError("a row operation without an entry in RowOps.cpp");
}

const RowOpInfo* findRowOp(std::string_view name, RowQuant quant) {
  for (const RowOpInfo& info : allRowOps())
    if (info.name == name && info.quant == quant)
      return &info;
  return nullptr;
}

std::string_view quantKeyword(RowQuant quant) {
  switch (quant) {
  case RowQuant::None:
    return "";
  case RowQuant::PerTensorScale:
    return "scale";
  case RowQuant::PerTokenScale:
    return "token_scale";
  }
  return "";
}

std::optional<RowQuant> findQuantKeyword(std::string_view keyword) {
  if (keyword == "scale")
    return RowQuant::PerTensorScale;
  if (keyword == "token_scale")
    return RowQuant::PerTokenScale;
  return std::nullopt;
}

} // namespace collc::ir
