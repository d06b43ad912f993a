// Quantized outputs on the CPU: buffers of fixed element types and the rules that keep them out of
// every statement but the one that quantizes; `quantize(rmsnorm(...), scale=S)` proved from the
// complete row; and its float64 meaning (round to nearest even, saturating, as the device), with
// the elements near a rounding boundary counted, from the interpreted rows or the kernel's own.
#include "compiler/interpret/Float8.h"
#include "compiler/interpret/Interpreter.h"
#include "tests/compiler/QuantizeSpecs.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>

namespace collc {
namespace {

using namespace tests;

const char* const kBuffers = "out: fp8e4m3[n], residual: T[n], residual_out: T[n], "
                             "weight: T[hidden], scale: f32[1]";

TEST(Quantize, StaticFp8SpecIsProved) {
  EXPECT_EQ(check(quantSpec(kBuffers, "    residual_out = reduce(in, slot[peers]) + residual\n"
                                      "    out = quantize(rmsnorm(residual_out, weight), "
                                      "scale=scale)\n")),
            "");
}

TEST(Quantize, AnIncompleteRowIsRefusedAsForRmsNorm) {
  const std::string d = check(quantSpec(kBuffers, "    residual_out = in + residual\n"
                                                  "    out = quantize(rmsnorm(residual_out, "
                                                  "weight), scale=scale)\n"));
  EXPECT_NE(d.find("'quantize(rmsnorm, scale)' reads row 0 of 'residual_out' on rank 0 before "
                   "the row is complete"),
            std::string::npos)
      << d;
}

TEST(Quantize, MismatchedElementTypesAreRefusedAtTheirPlace) {
  const std::string reduce = "    residual_out = reduce(in, slot[peers]) + residual\n";
  const Refusal cases[] = {
      {"an fp8 buffer as a reduce operand", kBuffers,
       "    residual_out = reduce(in, slot[peers]) + out\n",
       "q.coll:10:46: error: 'out' holds fp8e4m3 elements, but an operand must hold T; only a "
       "quantizing row statement writes or reads a buffer of a fixed element type"},
      {"rmsnorm into an fp8 target", kBuffers, reduce + "    out = rmsnorm(residual_out, weight)\n",
       "error: the target 'out' holds fp8e4m3 elements, but 'rmsnorm' writes T; quantize the "
       "result to store it as fp8e4m3"},
      {"quantize into a T target",
       "out: T[n], residual: T[n], residual_out: T[n], weight: T[hidden], scale: f32[1]",
       reduce + "    out = quantize(rmsnorm(residual_out, weight), scale=scale)\n",
       "error: the target 'out' holds T elements, but 'quantize(rmsnorm, scale)' writes fp8e4m3"},
      {"a scale of T",
       "out: fp8e4m3[n], residual: T[n], residual_out: T[n], weight: T[hidden], "
       "scale: T[1]",
       reduce + "    out = quantize(rmsnorm(residual_out, weight), scale=scale)\n",
       "error: 'scale' holds T elements, but the scale of 'quantize(rmsnorm, scale)' must hold "
       "f32"},
      {"a scale of two elements",
       "out: fp8e4m3[n], residual: T[n], residual_out: T[n], weight: T[hidden], "
       "scale: f32[2]",
       reduce + "    out = quantize(rmsnorm(residual_out, weight), scale=scale)\n",
       "error: the scale 'scale' must hold one element: declare it as 'scale: f32[1]'"},
      {"an unknown element type",
       "out: fp8e5m2[n], residual: T[n], residual_out: T[n], weight: T[hidden], scale: f32[1]",
       reduce,
       "error: unknown element type 'fp8e5m2'; expected 'T' (the variant's, chosen with "
       "--dtype) or f32, f16, bf16, fp8e4m3 or fp4e2m1"},
      // Only NVFP4's quantization stores fp4e2m1.
      {"rmsnorm into an fp4 target",
       "out: fp4e2m1[n], residual: T[n], residual_out: T[n], weight: T[hidden], scale: f32[1]",
       reduce + "    out = rmsnorm(residual_out, weight)\n",
       "q.coll:11:5: error: the target 'out' holds fp4e2m1 elements, but 'rmsnorm' writes T; "
       "quantize the result to store it as fp4e2m1\n"},
      {"an fp8 quantization into an fp4 target",
       "out: fp4e2m1[n], residual: T[n], residual_out: T[n], weight: T[hidden], scale: f32[1]",
       reduce + "    out = quantize(rmsnorm(residual_out, weight), scale=scale)\n",
       "error: the target 'out' holds fp4e2m1 elements, but 'quantize(rmsnorm, scale)' writes "
       "fp8e4m3"},
      {"a put of an fp8 buffer", kBuffers,
       reduce + "    for p in peers { put out -> p.slot[rank] }\n",
       "error: 'out' holds fp8e4m3 elements, but the source of 'put' must hold T"},
      {"an unknown quantization keyword", kBuffers,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), tensor_scale=scale)\n",
       "q.coll:11:51: error: unknown keyword 'tensor_scale' in 'quantize'; it takes 'scale', "
       "'token_scale', 'block_scale', 'global_scale', 'swizzled_block_scale'"},
      {"another quantization's keyword", kBuffers,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), block_scale=scale)\n",
       "q.coll:11:11: error: 'quantize' with 'block_scale' needs 'global_scale=...' too: "
       "'quantize(rmsnorm(...), block_scale=..., global_scale=...)'"},
  };
  for (const Refusal& c : cases) {
    const std::string d = check(quantSpec(c.buffers, c.step));
    EXPECT_NE(d.find(c.message), std::string::npos) << c.what << ":\n" << d;
  }
  const std::string scratch =
      check("collective q kind allreduce\n  buffers in: T[n], out: T[n]\n  scratch s: fp8e4m3[n]\n"
            "{\n  step a { out = in }\n}\n");
  EXPECT_NE(scratch.find("error: a scratch buffer holds the variant's elements: declare it 'T', "
                         "not 'fp8e4m3'"),
            std::string::npos)
      << scratch;
}

/// A call of 2 ranks, rows of h: in[r] as given, residual 0, weight 1, the scale S.
interpret::Call fp8Call(int64_t h, const std::vector<Values>& in, double scale) {
  interpret::Call call;
  call.nranks = 2;
  call.count = int64_t(in[0].size());
  call.rowLength = h;
  for (int r = 0; r < 2; ++r) {
    call.input.push_back(in[size_t(r)]);
    // Aux order: residual, residual_out (written), weight, scale.
    call.aux.push_back({Values(in[0].size(), 0.0), Values(in[0].size(), 0.0),
                        Values(size_t(h), 1.0), Values{scale}});
  }
  return call;
}

// Rows of 12 (not a multiple of 16): an ordinary row, an all-zero row, a row with a NaN and one
// with an infinity, quantized with a small scale (so the largest values saturate).
TEST(QuantizeInterpreted, RoundsAsTheDeviceWithSaturationNaNInfinityAndZeroRows) {
  const int64_t h = 12;
  auto spec = stdlibSpec("allreduce_rmsnorm_fp8", h);
  ASSERT_TRUE(spec);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Values row0, zeros(size_t(h), 0.0), withNaN, withInf;
  for (int64_t k = 0; k < h; ++k) {
    row0.push_back(double(k) - 5.5);
    withNaN.push_back(k == 3 ? nan : 1.0);
    withInf.push_back(k == 4 ? inf : 2.0);
  }
  Values in0 = row0;
  for (const Values* row : {&zeros, &withNaN, &withInf})
    in0.insert(in0.end(), row->begin(), row->end());
  const Values in1(in0.size(), 0.0); // rank 1 adds nothing
  const double scale = 1.0 / 512;    // the largest |x| / scale pass 448: saturated
  const interpret::Result result =
      interpret::interpret(*spec, spec->steps, fp8Call(h, {in0, in1}, scale));
  const Values& out = result.output[0];
  const Values norm = rmsnorm(row0);
  int saturated = 0;
  for (int64_t k = 0; k < h; ++k) {
    const double want = fromE4M3(toE4M3(norm[size_t(k)] / scale));
    EXPECT_EQ(out[size_t(k)], want) << k;
    saturated += std::fabs(out[size_t(k)]) == kE4M3Max;
  }
  EXPECT_GT(saturated, 0);
  EXPECT_LT(saturated, h);
  for (int64_t k = 0; k < h; ++k) {
    EXPECT_EQ(out[size_t(h + k)], 0.0) << "an all-zero row quantizes to zeros";
    EXPECT_TRUE(std::isnan(out[size_t(2 * h + k)])) << "a NaN poisons its row";
    // An infinity makes the row's factor 0: the infinity becomes NaN, every other element 0.
    if (k == 4)
      EXPECT_TRUE(std::isnan(out[size_t(3 * h + k)]));
    else
      EXPECT_EQ(out[size_t(3 * h + k)], 0.0) << k;
  }
}

// With bounds: a value exactly on a midpoint between two codes may round either way on the device
// and is counted; a value far from every boundary is held bit for bit (bound 0).
TEST(QuantizeInterpreted, CountsValuesNearARoundingBoundary) {
  const int64_t h = 16;
  auto spec = stdlibSpec("allreduce_rmsnorm_fp8", h);
  ASSERT_TRUE(spec);
  // One row of equal values normalizes to (almost) 1 each; scale 1/1.0625 puts 1 at 1.0625, the
  // midpoint of 1 and 1.125; another row at 1 / 1.03 sits well inside 1's interval.
  Values in0(size_t(2 * h), 3.0);
  const Values in1(in0.size(), 0.0);
  interpret::Rounding rounding{1e-6, 0x1p-126, 0x1p-7, 1e-5};
  const interpret::BoundedResult near =
      interpret::interpretBounded(*spec, spec->steps, fp8Call(h, {in0, in1}, 1 / 1.0625), rounding);
  EXPECT_EQ(near.nearRoundingBoundary, 2 * 2 * h); // every element of both rows, on both ranks
  EXPECT_EQ(near.bound.output[0][0], 0.125);
  const interpret::BoundedResult inside =
      interpret::interpretBounded(*spec, spec->steps, fp8Call(h, {in0, in1}, 1 / 1.03), rounding);
  EXPECT_EQ(inside.nearRoundingBoundary, 0);
  EXPECT_EQ(inside.value.output[0][0], 1.0);
  EXPECT_EQ(inside.bound.output[0][0], 0.0);
}

// With the rows a kernel wrote (Call::rowsAsWritten): the quantized output is referenced from
// them, exactly, so its bound is the norm's float steps alone; the rows' own buffer is still the
// interpreted one. With a 16-bit T's units the interpreted rows carry the sum's bound, which puts
// 1.055 within reach of the midpoint 1.0625; the kernel's exact rows do not.
TEST(QuantizeInterpreted, RowsAsWrittenLeaveOnlyTheNormsFloatSteps) {
  const int64_t h = 16;
  auto spec = stdlibSpec("allreduce_rmsnorm_fp8", h);
  ASSERT_TRUE(spec);
  const Values in0(size_t(h), 3.0), in1(size_t(h), 0.0);
  const interpret::Rounding bf16Units{0x1p-8, 0x1p-126, 0x1p-7, 1e-5};
  const double scale = 1 / 1.055;
  const interpret::BoundedResult interpreted =
      interpret::interpretBounded(*spec, spec->steps, fp8Call(h, {in0, in1}, scale), bf16Units);
  EXPECT_EQ(interpreted.nearRoundingBoundary, 2 * h);

  interpret::Call call = fp8Call(h, {in0, in1}, scale);
  call.rowsAsWritten.assign(2, std::vector<Values>(4)); // aux 1 is residual_out
  call.rowsAsWritten[0][1] = in0;
  call.rowsAsWritten[1][1] = in0;
  const interpret::BoundedResult exact =
      interpret::interpretBounded(*spec, spec->steps, call, bf16Units);
  EXPECT_EQ(exact.nearRoundingBoundary, 0);
  EXPECT_EQ(exact.value.output[0][0], 1.0);
  EXPECT_EQ(exact.bound.output[0][0], 0.0);

  // Rank 0's kernel wrote other rows: its output follows them, its residual_out is the spec's.
  Values other = in0;
  other[0] = 6.0;
  call.rowsAsWritten[0][1] = other;
  call.rowsAsWritten[1][1].clear(); // rank 1: the interpreted rows
  const interpret::Result result = interpret::interpret(*spec, spec->steps, call);
  const Values norm = rmsnorm(other);
  for (int64_t k = 0; k < h; ++k) {
    EXPECT_EQ(result.output[0][size_t(k)], fromE4M3(toE4M3(norm[size_t(k)] / scale))) << k;
    EXPECT_EQ(result.aux[0][1][size_t(k)], 3.0) << k;
    EXPECT_EQ(result.output[1][size_t(k)], 1.0) << k;
  }
  EXPECT_NE(result.output[0][0], 1.0);

  call.rowsAsWritten[0][1].resize(size_t(h - 1));
  EXPECT_THROW(interpret::interpret(*spec, spec->steps, call), interpret::InterpretError);
}

} // namespace
} // namespace collc
