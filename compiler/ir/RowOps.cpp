#include "compiler/ir/RowOps.h"

#include "dsl/Diagnostics.h"

#include <algorithm>

namespace collc::ir {

namespace {
/// device/rows_nvfp4.cuh quantizes a block of 16 elements in 16 / kVec adjacent lanes.
constexpr RowQuantBlock kNvfp4Block = {16, "NVFP4"};
} // namespace

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
      {RowOp::RmsNormNvfp4,
       "rmsnorm",
       RowQuant::Nvfp4BlockScale,
       "quantize(rmsnorm, block_scale, global_scale)",
       {{"weight", RowParamShape::OneRow, std::nullopt},
        {"block scale", RowParamShape::BlocksPerRow, ElementType::F8E4M3, RowParamAccess::Written},
        {"global scale", RowParamShape::OneElement, ElementType::F32}},
       {"rows_rmsnorm.cuh", "fp8_e4m3.cuh", "quant_nvfp4.cuh", "rows_nvfp4.cuh"},
       ElementType::F4E2M1,
       kNvfp4Block},
      {RowOp::RmsNormNvfp4Swizzled,
       "rmsnorm",
       RowQuant::Nvfp4SwizzledBlockScale,
       "quantize(rmsnorm, swizzled_block_scale, global_scale)",
       {{"weight", RowParamShape::OneRow, std::nullopt},
        {"block scale", RowParamShape::SwizzledBlocks, ElementType::F8E4M3,
         RowParamAccess::Written},
        {"global scale", RowParamShape::OneElement, ElementType::F32}},
       {"rows_rmsnorm.cuh", "fp8_e4m3.cuh", "quant_nvfp4.cuh", "rows_nvfp4.cuh"},
       ElementType::F4E2M1,
       kNvfp4Block},
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

std::vector<std::string_view> quantKeywords(RowQuant quant) {
  switch (quant) {
  case RowQuant::None:
    return {};
  case RowQuant::PerTensorScale:
    return {"scale"};
  case RowQuant::PerTokenScale:
    return {"token_scale"};
  case RowQuant::Nvfp4BlockScale:
    return {"block_scale", "global_scale"};
  case RowQuant::Nvfp4SwizzledBlockScale:
    return {"swizzled_block_scale", "global_scale"};
  }
  return {};
}

namespace {
constexpr RowQuant kQuants[] = {RowQuant::PerTensorScale, RowQuant::PerTokenScale,
                                RowQuant::Nvfp4BlockScale, RowQuant::Nvfp4SwizzledBlockScale};
} // namespace

std::optional<RowQuant> findQuant(const std::vector<std::string_view>& keywords) {
  for (RowQuant quant : kQuants) {
    std::vector<std::string_view> want = quantKeywords(quant), got = keywords;
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    if (want == got)
      return quant;
  }
  return std::nullopt;
}

std::vector<RowQuant> quantsTaking(std::string_view keyword) {
  std::vector<RowQuant> quants;
  for (RowQuant quant : kQuants) {
    const std::vector<std::string_view> keywords = quantKeywords(quant);
    if (std::find(keywords.begin(), keywords.end(), keyword) != keywords.end())
      quants.push_back(quant);
  }
  return quants;
}

std::string allQuantKeywords() {
  std::vector<std::string_view> all;
  for (RowQuant quant : kQuants)
    for (std::string_view keyword : quantKeywords(quant))
      if (std::find(all.begin(), all.end(), keyword) == all.end())
        all.push_back(keyword);
  std::string text;
  for (size_t k = 0; k < all.size(); ++k)
    text += (k ? ", '" : "'") + std::string(all[k]) + "'";
  return text;
}

int64_t writtenElementsPerRow(RowParamShape shape, int64_t rowLength) {
  // Blocks per row are NVFP4's block scales, one per block of its row.
  const int64_t blocks = (rowLength + kNvfp4Block.elems - 1) / kNvfp4Block.elems;
  switch (shape) {
  case RowParamShape::OneRow:
  case RowParamShape::OneElement:
    return 0;
  case RowParamShape::OnePerRow:
    return 1;
  case RowParamShape::BlocksPerRow:
    return blocks;
  case RowParamShape::SwizzledBlocks:
    return (blocks + 3) / 4 * 4;
  }
  return 0;
}

} // namespace collc::ir
