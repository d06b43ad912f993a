// NVFP4 on the CPU: `quantize(rmsnorm(...), block_scale=BS, global_scale=GS)` and its swizzled
// form write e2m1 codes and a second buffer of E4M3 block scales; the rules that keep that buffer
// the statement's own (its type and size form, no other statement naming it, never in place),
// the proof of both stdlib specs, and their float64 meaning: each block's scale and codes as
// interpret/Float4.h's quantizeNvfp4 defines them, in either layout.
#include "compiler/Compile.h"
#include "compiler/Sema.h"
#include "compiler/Verifier.h"
#include "compiler/execute/PaddedRows.h"
#include "compiler/interpret/Float4.h"
#include "compiler/interpret/Float8.h"
#include "compiler/interpret/Interpreter.h"
#include "dsl/Parser.h"
#include "tests/compiler/QuantizeSpecs.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>

namespace collc {
namespace {

using namespace tests;

const char* const kLinear = "out: fp4e2m1[n], residual: T[n], residual_out: T[n], "
                            "weight: T[hidden], bs: fp8e4m3[n / hidden * ceil_div(hidden, 16)], "
                            "gs: f32[1]";
const char* const kSwizzled =
    "out: fp4e2m1[n], residual: T[n], residual_out: T[n], weight: T[hidden], "
    "bs: fp8e4m3[round_up(n / hidden, 128) * round_up(ceil_div(hidden, 16), 4)], gs: f32[1]";
const char* const kReduce = "    residual_out = reduce(in, slot[peers]) + residual\n";
const char* const kQuantize =
    "    out = quantize(rmsnorm(residual_out, weight), block_scale=bs, global_scale=gs)\n";
const char* const kQuantizeSwizzled = "    out = quantize(rmsnorm(residual_out, weight), "
                                      "swizzled_block_scale=bs, global_scale=gs)\n";

TEST(QuantizeNvfp4, SpecsAreProvedInEitherLayoutAndKeywordOrder) {
  EXPECT_EQ(check(quantSpec(kLinear, std::string(kReduce) + kQuantize)), "");
  EXPECT_EQ(check(quantSpec(kSwizzled, std::string(kReduce) + kQuantizeSwizzled)), "");
  EXPECT_EQ(check(quantSpec(kLinear, std::string(kReduce) +
                                         "    out = quantize(rmsnorm(residual_out, weight), "
                                         "global_scale=gs, block_scale=bs)\n")),
            "");
  for (const char* name : {"allreduce_rmsnorm_nvfp4", "allreduce_rmsnorm_nvfp4_linear"}) {
    auto source = loadSpec(name);
    ASSERT_TRUE(bool(source)) << toString(source.takeError());
    EXPECT_EQ(check(source->text), "") << name;
  }
}

TEST(QuantizeNvfp4, AnIncompleteRowIsRefusedAsForRmsNorm) {
  for (const char* quantize : {kQuantize, kQuantizeSwizzled}) {
    const std::string d =
        check(quantSpec(quantize == kQuantize ? kLinear : kSwizzled,
                        std::string("    residual_out = in + residual\n") + quantize));
    EXPECT_NE(d.find("before the row is complete"), std::string::npos) << d;
  }
}

TEST(QuantizeNvfp4, TheBlockScaleIsTheStatementsOwnAndRefusedAtItsPlace) {
  const std::string reduce = kReduce;
  const Refusal cases[] = {
      {"a block scale of one per row",
       "out: fp4e2m1[n], residual: T[n], residual_out: T[n], weight: T[hidden], "
       "bs: fp8e4m3[n / hidden], gs: f32[1]",
       reduce + kQuantize,
       "q.coll:11:63: error: the block scale 'bs' must hold one scale per 16 elements of every "
       "row: declare it as 'bs: fp8e4m3[n / hidden * ceil_div(hidden, 16)]'"},
      {"a swizzled block scale of the linear size", kLinear, reduce + kQuantizeSwizzled,
       "q.coll:11:72: error: the block scale 'bs' must hold the 128x4-swizzled matrix"},
      {"a linear block scale of the swizzled size", kSwizzled, reduce + kQuantize,
       "q.coll:11:63: error: the block scale 'bs' must hold one scale per 16 elements"},
      {"a block scale of T",
       "out: fp4e2m1[n], residual: T[n], residual_out: T[n], weight: T[hidden], "
       "bs: T[n / hidden * ceil_div(hidden, 16)], gs: f32[1]",
       reduce + kQuantize,
       "error: 'bs' holds T elements, but the block scale of 'quantize(rmsnorm, block_scale, "
       "global_scale)' must hold fp8e4m3"},
      {"a global scale of T",
       "out: fp4e2m1[n], residual: T[n], residual_out: T[n], weight: T[hidden], "
       "bs: fp8e4m3[n / hidden * ceil_div(hidden, 16)], gs: T[1]",
       reduce + kQuantize,
       "error: 'gs' holds T elements, but the global scale of 'quantize(rmsnorm, block_scale, "
       "global_scale)' must hold f32"},
      {"an fp8 target",
       "out: fp8e4m3[n], residual: T[n], residual_out: T[n], weight: T[hidden], "
       "bs: fp8e4m3[n / hidden * ceil_div(hidden, 16)], gs: f32[1]",
       reduce + kQuantize,
       "q.coll:11:5: error: the target 'out' holds fp8e4m3 elements, but 'quantize(rmsnorm, "
       "block_scale, global_scale)' writes fp4e2m1"},
      {"an fp4 target of FP8's quantization",
       "out: fp4e2m1[n], residual: T[n], residual_out: T[n], weight: T[hidden], scale: f32[1]",
       reduce + "    out = quantize(rmsnorm(residual_out, weight), scale=scale)\n",
       "error: the target 'out' holds fp4e2m1 elements, but 'quantize(rmsnorm, scale)' writes "
       "fp8e4m3"},
      {"the block scale read by another statement", kLinear,
       reduce + kQuantize + "    residual_out = bs\n",
       "q.coll:12:20: error: 'bs' is written by 'quantize(rmsnorm, block_scale, global_scale)' "
       "(bs); no other statement may read or write it"},
      {"the block scale the output", kLinear,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), block_scale=out, "
                "global_scale=gs)\n",
       "error: the block scale 'out' is written by 'quantize(rmsnorm, block_scale, "
       "global_scale)': it must be a buffer of its own in 'buffers', not the output"},
      {"the block scale in place with the global scale", kLinear,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), block_scale=gs, "
                "global_scale=gs)\n",
       "error: the block scale 'gs' is written by the statement, so it cannot also be its "
       "target, its rows or another parameter (never in place)"},
      {"the block scale in place with the weight", kLinear,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), swizzled_block_scale=weight, "
                "global_scale=gs)\n",
       "error: the block scale 'weight' is written by the statement, so it cannot also be its "
       "target, its rows or another parameter (never in place)"},
      {"no global scale", kLinear,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), swizzled_block_scale=bs)\n",
       "q.coll:11:11: error: 'quantize' with 'swizzled_block_scale' needs 'global_scale=...' "
       "too: 'quantize(rmsnorm(...), swizzled_block_scale=..., global_scale=...)'"},
      {"a global scale alone", kLinear,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), global_scale=gs)\n",
       "q.coll:11:11: error: 'quantize' with 'global_scale' needs 'block_scale=...' too"},
      {"a per-tensor scale beside block scales", kLinear,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), block_scale=bs, scale=gs)\n",
       "q.coll:11:67: error: 'scale' does not go with 'block_scale' in 'quantize'"},
      {"a keyword twice", kLinear,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), global_scale=gs, "
                "global_scale=gs)\n",
       "q.coll:11:68: error: 'global_scale' is given twice in 'quantize'"},
  };
  for (const Refusal& c : cases) {
    const std::string d = check(quantSpec(c.buffers, c.step));
    EXPECT_NE(d.find(c.message), std::string::npos) << c.what << ":\n" << d;
  }
}

/// Parses and analyzes `text` (which must be right); its diagnostics go to `out`.
std::unique_ptr<ir::Program> analyzed(const std::string& text, Diagnostics& diags) {
  auto ast = parseSpecText(diags, text, "q.coll");
  EXPECT_TRUE(bool(ast));
  auto program = ast ? analyze(*ast, diags) : nullptr;
  EXPECT_TRUE(bool(program));
  return program;
}

// The swizzled matrix's rows are padded to round_up(n / hidden, 128): as a size that divides n by
// 128, it would split each rank count's proof into 128 classes of n. The runs with n symbolic
// take the matrix as its rows alone (execute/PaddedRows.h), so the swizzled spec proves in the
// runs the linear one does.
TEST(QuantizeNvfp4, TheSwizzledMatrixsPaddingRowsSplitNoClassOfN) {
  auto runs = [](const char* buffers, const char* quantize) {
    std::string text;
    llvm::SourceMgr sources;
    llvm::raw_string_ostream out(text);
    Diagnostics diags(sources, out);
    auto program = analyzed(quantSpec(buffers, std::string(kReduce) + quantize), diags);
    const VerifyResult result = verify(*program, diags);
    EXPECT_TRUE(result.ok) << out.str();
    const ir::BufferId bs = program->find("bs");
    const std::vector<ir::Expr> sizes = execute::unpaddedSizes(*program);
    EXPECT_EQ(bool(sizes.at(size_t(bs))), quantize == kQuantizeSwizzled);
    return result.runs;
  };
  const int64_t linear = runs(kLinear, kQuantize);
  EXPECT_EQ(runs(kSwizzled, kQuantizeSwizzled), linear);
  EXPECT_LT(linear, 3 * 128); // ranks 2..4: far fewer than 128 classes a count
}

// The proof takes every element of the matrix as its row's own and the padding rows as touched
// by nothing: a program in which another statement names the matrix is refused by the verifier
// itself (here built past Sema, which refuses it in a spec), and the matrix keeps its padded size.
TEST(QuantizeNvfp4, TheVerifierRefusesTheMatrixNamedByAnotherStatement) {
  std::string text;
  llvm::SourceMgr sources;
  llvm::raw_string_ostream out(text);
  Diagnostics diags(sources, out);
  auto program = analyzed(quantSpec(kSwizzled, std::string(kReduce) + kQuantizeSwizzled), diags);
  ASSERT_TRUE(program);
  const ir::BufferId bs = program->find("bs");
  std::vector<ir::Stmt>& body = program->steps.back().body;
  const auto& row = body.back()->as<ir::RowStmt>();
  ASSERT_EQ(body.back()->kind, ir::StmtKind::Row);
  std::optional<ir::Operand> scales;
  for (const ir::Operand& param : row.params)
    if (param.region.buffer == bs)
      scales = param;
  ASSERT_TRUE(scales);
  body.push_back(std::make_shared<ir::Assign>(row.loc, row.rows.region, false,
                                              std::vector<ir::Operand>{*scales},
                                              std::vector<ir::Operand>{}));
  EXPECT_FALSE(execute::unpaddedSizes(*program).at(size_t(bs)));
  const VerifyResult result = verify(*program, diags);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(out.str().find("error: 'bs' is written by 'quantize(rmsnorm, swizzled_block_scale, "
                           "global_scale)' as a parameter, which the proof takes as the row's "
                           "own; no other statement may read or write it"),
            std::string::npos)
      << out.str();
}

// Only the padded form is taken as its rows alone; any other size keeps its residues of 128. A
// matrix one element short (built past Sema, which requires the form) lacks room for the last
// row's last block exactly where the row count is a multiple of 128: the proof still splits the
// classes of n for it and refuses it there, at n = 128 in rows of one element.
TEST(QuantizeNvfp4, AMatrixShortOnlyAtOneResidueOf128IsRefusedThere) {
  std::string text;
  llvm::SourceMgr sources;
  llvm::raw_string_ostream out(text);
  Diagnostics diags(sources, out);
  auto program = analyzed(quantSpec(kSwizzled, std::string(kReduce) + kQuantizeSwizzled), diags);
  ASSERT_TRUE(program);
  const ir::BufferId bs = program->find("bs");
  ir::Buffer& buffer = program->buffers[size_t(bs)];
  buffer.slotElems =
      ir::ExprNode::binary(ir::ExprKind::Sub, buffer.slotElems, ir::ExprNode::constant(1));
  std::vector<ir::Stmt>& body = program->steps.back().body;
  ASSERT_EQ(body.back()->kind, ir::StmtKind::Row);
  auto row = std::make_shared<ir::RowStmt>(body.back()->as<ir::RowStmt>());
  for (ir::Operand& param : row->params)
    if (param.region.buffer == bs)
      param.region.length = param.region.bound = buffer.slotElems;
  body.back() = row;
  EXPECT_FALSE(execute::unpaddedSizes(*program).at(size_t(bs)));
  const VerifyResult result = verify(*program, diags);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(out.str().find("error: the rows write elements [0, 512) of 'bs' on rank 0, which "
                           "holds 511 (nranks=2, n=128)"),
            std::string::npos)
      << out.str();
}

/// The rows of the interpreted calls: mixed magnitudes (with the global scale below, some blocks'
/// scales saturate at 448 and some of their codes at 6), zeros, a NaN, an infinity.
std::vector<Values> testRows(int64_t h) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Values mixed, zeros(size_t(h), 0.0), withNaN, withInf;
  for (int64_t k = 0; k < h; ++k) {
    mixed.push_back((double(k) - 20.5) * (k % 3 == 0 ? 100.0 : 0.37) * (k < 16 ? 1e-3 : 1.0));
    withNaN.push_back(k == 3 ? nan : double(k));
    withInf.push_back(k == 5 ? -inf : double(k));
  }
  return {mixed, zeros, withNaN, withInf};
}

constexpr double kGlobalScale = 2000.0;
/// What the caller's block-scale buffer holds before the call: no E4M3 value.
constexpr double kUntouched = 1000.0;

/// One call of the stdlib spec `name` over testRows(h) on rank 0 (rank 1 adds zeros).
interpret::Call testCall(const ir::Program& spec, int64_t h) {
  const std::vector<Values> rows = testRows(h);
  Values in0;
  for (const Values& row : rows)
    in0.insert(in0.end(), row.begin(), row.end());
  interpret::Call call;
  call.nranks = 2;
  call.count = int64_t(in0.size());
  call.rowLength = h;
  const std::vector<int64_t> auxSizes = interpret::auxElements(spec, call);
  for (int r = 0; r < 2; ++r) {
    call.input.push_back(r == 0 ? in0 : Values(in0.size(), 0.0));
    // Aux order: residual, residual_out (written), weight, block scale (written), global scale.
    call.aux.push_back({Values(in0.size(), 0.0), Values(in0.size(), 0.0), Values(size_t(h), 1.0),
                        Values(size_t(auxSizes.at(3)), kUntouched), Values{kGlobalScale}});
  }
  return call;
}

/// Where row t's block b lies in the block-scale buffer.
uint64_t scaleOffset(bool swizzled, uint64_t t, uint64_t b, uint64_t blocks) {
  return swizzled ? nvfp4SwizzledOffset(t, b, blocks) : t * blocks + b;
}

// Each row's codes and block scales are Float4.h's quantizeNvfp4 of its float64 rmsnorm, in
// either layout; the swizzled matrix's padding blocks of each row are zero scales and its padding
// rows keep what the caller had; a row without numbers has zero scales (a NaN poisons the norm's
// whole row; an infinity leaves NaN where it was and zeros elsewhere: NaN becomes +6).
TEST(QuantizeNvfp4Interpreted, EachBlocksScaleAndCodesAreFloat4sInEitherLayout) {
  const int64_t h = 48; // three blocks: the swizzled matrix pads each row with one
  const int64_t blocks = 3;
  for (const char* name : {"allreduce_rmsnorm_nvfp4_linear", "allreduce_rmsnorm_nvfp4"}) {
    SCOPED_TRACE(name);
    const bool swizzled = std::string(name) == "allreduce_rmsnorm_nvfp4";
    auto spec = stdlibSpec(name, h);
    ASSERT_TRUE(spec);
    const interpret::Call call = testCall(*spec, h);
    const interpret::Result result = interpret::interpret(*spec, spec->steps, call);
    const std::vector<Values> rows = testRows(h);
    const Values& out = result.output[0];
    const Values& scales = result.aux[0][3];
    ASSERT_EQ(out.size(), size_t(rows.size()) * size_t(h));
    ASSERT_EQ(scales.size(), swizzled ? size_t(128 * 4) : rows.size() * size_t(blocks));
    int saturatedScales = 0, saturatedCodes = 0;
    for (size_t t = 0; t < rows.size(); ++t) {
      const Values norm = rmsnorm(rows[t]);
      const Nvfp4Row want = quantizeNvfp4(norm, kGlobalScale);
      for (int64_t b = 0; b < blocks; ++b) {
        const double scale = scales[scaleOffset(swizzled, t, uint64_t(b), blocks)];
        EXPECT_EQ(scale, fromE4M3(want.scales[size_t(b)])) << "row " << t << " block " << b;
        saturatedScales += scale == kE4M3Max;
      }
      for (int64_t k = 0; k < h; ++k) {
        const double code = out[t * size_t(h) + size_t(k)];
        EXPECT_EQ(code, fromE2M1(uint8_t(want.packed[size_t(k / 2)] >> (k % 2 * 4))))
            << "row " << t << " element " << k;
        saturatedCodes += t == 0 && std::fabs(code) == kE2M1Max;
      }
      if (swizzled) {
        EXPECT_EQ(scales[nvfp4SwizzledOffset(t, 3, blocks)], 0.0) << "row " << t << "'s padding";
      }
    }
    EXPECT_GT(saturatedScales, 0) << "some block's scale saturates at 448";
    EXPECT_GT(saturatedCodes, 2) << "and its codes past 6 saturate";
    for (int64_t b = 0; b < blocks; ++b)
      for (size_t t : {size_t(1), size_t(2), size_t(3)})
        EXPECT_EQ(scales[scaleOffset(swizzled, t, uint64_t(b), blocks)], 0.0) << t;
    for (int64_t k = 0; k < h; ++k) {
      EXPECT_EQ(out[size_t(h + k)], 0.0) << "zeros";
      EXPECT_EQ(out[size_t(2 * h + k)], kE2M1Max) << "a NaN row";
      EXPECT_EQ(out[size_t(3 * h + k)], k == 5 ? kE2M1Max : 0.0) << "an infinity's row";
    }
    for (uint64_t t = 4; swizzled && t < 128; ++t)
      for (uint64_t b = 0; b < 4; ++b) {
        EXPECT_EQ(scales[nvfp4SwizzledOffset(t, b, blocks)], kUntouched) << "padding row";
      }
  }
}

// The bounded reference holds the same values; its bounds are 0 except where it counts an element
// or a scale near a rounding boundary; and what it holds passes compareNvfp4Row (bit for bit).
TEST(QuantizeNvfp4Interpreted, BoundedValuesAreTheSameAndNearBoundaryCasesCounted) {
  const int64_t h = 64;
  auto spec = stdlibSpec("allreduce_rmsnorm_nvfp4_linear", h);
  ASSERT_TRUE(spec);
  const interpret::Call call = testCall(*spec, h);
  const interpret::Result plain = interpret::interpret(*spec, spec->steps, call);
  interpret::Rounding rounding{1e-6, 0x1p-126, 1e-5, 1e-5};
  const interpret::BoundedResult bounded =
      interpret::interpretBounded(*spec, spec->steps, call, rounding);
  int64_t positive = 0;
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < plain.output[size_t(r)].size(); ++i) {
      EXPECT_EQ(bounded.value.output[size_t(r)][i], plain.output[size_t(r)][i]) << i;
      positive += bounded.bound.output[size_t(r)][i] > 0;
    }
    for (size_t i = 0; i < plain.aux[size_t(r)][3].size(); ++i) {
      EXPECT_EQ(bounded.value.aux[size_t(r)][3][i], plain.aux[size_t(r)][3][i]) << i;
      positive += bounded.bound.aux[size_t(r)][3][i] > 0;
    }
  }
  EXPECT_EQ(positive, bounded.nearRoundingBoundary);
  // Rank 0's rows as a kernel that computed exactly would store them.
  const std::vector<Values> rows = testRows(h);
  Nvfp4Agreement agreement;
  for (size_t t = 0; t < rows.size(); ++t) {
    std::vector<uint8_t> packed(size_t(h / 2), 0), scales;
    for (int64_t k = 0; k < h; ++k) {
      const uint8_t code = toE2M1(plain.output[0][t * size_t(h) + size_t(k)]);
      packed[size_t(k / 2)] |= uint8_t(code << (k % 2 * 4));
    }
    for (int64_t b = 0; b < h / 16; ++b)
      scales.push_back(toE4M3(plain.aux[0][3][t * size_t(h / 16) + size_t(b)]));
    compareNvfp4Row(rmsnorm(rows[t]), kGlobalScale, packed.data(), scales.data(), 0x1p-22,
                    "row " + std::to_string(t), agreement);
  }
  EXPECT_EQ(agreement.differences, 0) << agreement.firstDifference;
  EXPECT_EQ(agreement.blocks, int64_t(rows.size()) * h / 16);
}

// A bound spans both neighbours where the float error reaches a boundary: an element whose
// float64 value x * G / SF is exactly a tie of two codes (0.25 between 0 and 0.5).
TEST(QuantizeNvfp4Interpreted, AnElementOnARoundingBoundaryIsCountedWithBothNeighbours) {
  const int64_t h = 16;
  auto spec = stdlibSpec("allreduce_rmsnorm_nvfp4_linear", h);
  ASSERT_TRUE(spec);
  // One row of 16: rmsnorm scales it by 1 / rms; the ratio of two elements survives. amax 24
  // and one element 1: with G = 6 * 256 / 24 the scale argument is 256 (E4M3 exact), the factor
  // 6 / 24 and the element's product 0.25, on the tie between codes 0 and 0.5.
  Values row(size_t(h), 0.0);
  row[0] = 24;
  row[1] = 1;
  interpret::Call call;
  call.nranks = 2;
  call.count = h;
  call.rowLength = h;
  const double g = 6.0 * 256 / 24 * std::sqrt((24.0 * 24 + 1) / h + 1e-6);
  for (int r = 0; r < 2; ++r) {
    call.input.push_back(r == 0 ? row : Values(size_t(h), 0.0));
    call.aux.push_back({Values(size_t(h), 0.0), Values(size_t(h), 0.0), Values(size_t(h), 1.0),
                        Values(1, 0.0), Values{g}});
  }
  interpret::Rounding rounding{1e-6, 0x1p-126, 1e-5, 1e-5};
  const interpret::BoundedResult bounded =
      interpret::interpretBounded(*spec, spec->steps, call, rounding);
  EXPECT_GT(bounded.bound.output[0][1], 0.0) << bounded.value.output[0][1];
  EXPECT_LE(bounded.bound.output[0][1], 0.5);
  EXPECT_GE(bounded.nearRoundingBoundary, 2) << "element 1 on both ranks' outputs at least";
}

} // namespace
} // namespace collc
