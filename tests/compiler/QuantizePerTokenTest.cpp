// Per-token FP8 on the CPU: `quantize(rmsnorm(...), token_scale=S)` writes a second buffer, S[t]
// from row t; the rules that keep that buffer the statement's own (its type and per-row size, no
// other statement naming it, never in place), the proof of the stdlib spec, and its float64
// meaning: each row's scale and codes as interpret/Float8.h defines them.
#include "compiler/Compile.h"
#include "compiler/interpret/Float8.h"
#include "compiler/interpret/Interpreter.h"
#include "tests/compiler/QuantizeSpecs.h"

#include <cmath>
#include <gtest/gtest.h>

namespace collc {
namespace {

using namespace tests;

const char* const kBuffers = "out: fp8e4m3[n], residual: T[n], residual_out: T[n], "
                             "weight: T[hidden], scale: f32[n / hidden]";
const char* const kReduce = "    residual_out = reduce(in, slot[peers]) + residual\n";
const char* const kQuantize =
    "    out = quantize(rmsnorm(residual_out, weight), token_scale=scale)\n";

TEST(QuantizePerToken, SpecIsProved) {
  EXPECT_EQ(check(quantSpec(kBuffers, std::string(kReduce) + kQuantize)), "");
  auto source = loadSpec("allreduce_rmsnorm_fp8_per_token");
  ASSERT_TRUE(bool(source)) << toString(source.takeError());
  EXPECT_EQ(check(source->text), "");
}

TEST(QuantizePerToken, AnIncompleteRowIsRefusedAsForRmsNorm) {
  const std::string d =
      check(quantSpec(kBuffers, std::string("    residual_out = in + residual\n") + kQuantize));
  EXPECT_NE(d.find("before the row is complete"), std::string::npos) << d;
}

TEST(QuantizePerToken, TheScaleIsTheStatementsOwnAndRefusedAtItsPlace) {
  const std::string reduce = kReduce;
  const Refusal cases[] = {
      {"a scale of T",
       "out: fp8e4m3[n], residual: T[n], residual_out: T[n], weight: T[hidden], "
       "scale: T[n / hidden]",
       reduce + kQuantize,
       "q.coll:11:63: error: 'scale' holds T elements, but the token scale of "
       "'quantize(rmsnorm, token_scale)' must hold f32"},
      {"a scale of one element",
       "out: fp8e4m3[n], residual: T[n], residual_out: T[n], weight: T[hidden], scale: f32[1]",
       reduce + kQuantize,
       "q.coll:11:63: error: the token scale 'scale' must hold one element per row: declare it as "
       "'scale: f32[n / hidden]'"},
      {"a scale of n elements",
       "out: fp8e4m3[n], residual: T[n], residual_out: T[n], weight: T[hidden], scale: f32[n]",
       reduce + kQuantize, "error: the token scale 'scale' must hold one element per row"},
      {"the scale read by another statement", kBuffers,
       "    residual_out = reduce(in, slot[peers]) + scale\n" + std::string(kQuantize),
       "q.coll:10:46: error: 'scale' is written by 'quantize(rmsnorm, token_scale)' (scale); no "
       "other statement may read or write it"},
      {"the scale written by another statement", kBuffers,
       reduce + kQuantize + "    scale = residual\n",
       "q.coll:12:5: error: 'scale' is written by 'quantize(rmsnorm, token_scale)' (scale); no "
       "other statement may read or write it"},
      {"the scale the output",
       "out: fp8e4m3[n], residual: T[n], residual_out: T[n], weight: T[hidden]",
       reduce + "    out = quantize(rmsnorm(residual_out, weight), token_scale=out)\n",
       "error: the token scale 'out' is written by 'quantize(rmsnorm, token_scale)': it must be a "
       "buffer of its own in 'buffers', not the output"},
      {"the scale the input", kBuffers,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), token_scale=in)\n",
       "error: the token scale 'in' is written by 'quantize(rmsnorm, token_scale)': it must be a "
       "buffer of its own in 'buffers', not the input"},
      {"the scale in place with the rows", kBuffers,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), token_scale=residual_out)\n",
       "error: the token scale 'residual_out' is written by the statement, so it cannot also be "
       "its target, its rows or another parameter (never in place)"},
      {"the scale in place with the weight", kBuffers,
       reduce + "    out = quantize(rmsnorm(residual_out, weight), token_scale=weight)\n",
       "error: the token scale 'weight' is written by the statement, so it cannot also be its "
       "target, its rows or another parameter (never in place)"},
  };
  for (const Refusal& c : cases) {
    const std::string d = check(quantSpec(c.buffers, c.step));
    EXPECT_NE(d.find(c.message), std::string::npos) << c.what << ":\n" << d;
  }
  const std::string scratch =
      check(quantSpec(kBuffers,
                      reduce + "    out = quantize(rmsnorm(residual_out, weight), "
                               "token_scale=tmp)\n",
                      "\n  scratch tmp: T[n]"));
  EXPECT_NE(scratch.find("error: the token scale 'tmp' is written by 'quantize(rmsnorm, "
                         "token_scale)': it must be a buffer of its own in 'buffers', not scratch"),
            std::string::npos)
      << scratch;
}

// Rows of 2 ranks (rank 1 adds nothing), weight 1: a row of mixed magnitudes, a row of zeros (the
// floor scale), a row with a NaN (passed over by the amax), each scale and code as Float8.h's.
TEST(QuantizePerTokenInterpreted, EachRowsScaleAndCodesAreFloat8s) {
  const int64_t h = 12;
  auto spec = stdlibSpec("allreduce_rmsnorm_fp8_per_token", h);
  ASSERT_TRUE(spec);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Values mixed, zeros(size_t(h), 0.0), withNaN;
  for (int64_t k = 0; k < h; ++k) {
    mixed.push_back((double(k) - 5.5) * (k % 3 == 0 ? 100.0 : 0.01));
    withNaN.push_back(k == 3 ? nan : double(k));
  }
  Values in0 = mixed;
  for (const Values* row : {&zeros, &withNaN})
    in0.insert(in0.end(), row->begin(), row->end());
  const int64_t rows = 3;
  interpret::Call call;
  call.nranks = 2;
  call.count = int64_t(in0.size());
  call.rowLength = h;
  for (int r = 0; r < 2; ++r) {
    call.input.push_back(r == 0 ? in0 : Values(in0.size(), 0.0));
    // Aux order: residual, residual_out (written), weight, scale (written).
    call.aux.push_back({Values(in0.size(), 0.0), Values(in0.size(), 0.0), Values(size_t(h), 1.0),
                        Values(size_t(rows), 0.0)});
  }
  const interpret::Result result = interpret::interpret(*spec, spec->steps, call);
  const Values& out = result.output[0];
  const Values& scales = result.aux[0][3];
  ASSERT_EQ(scales.size(), size_t(rows));
  // Row 0: rmsnorm in float64, its amax over 448.
  const Values norm = rmsnorm(mixed);
  const double scale0 = tokenScaleE4M3(amaxOfNumbers(norm.data(), h));
  EXPECT_EQ(scales[0], scale0);
  EXPECT_GT(scales[0], kE4M3MinTokenScale);
  int full = 0;
  for (int64_t k = 0; k < h; ++k) {
    EXPECT_EQ(out[size_t(k)], fromE4M3(toE4M3(norm[size_t(k)] / scale0))) << k;
    full += std::fabs(out[size_t(k)]) == kE4M3Max;
  }
  EXPECT_EQ(full, 1) << "the largest magnitude becomes 448, and only it";
  EXPECT_EQ(scales[1], kE4M3MinTokenScale) << "a row of zeros takes the floor";
  for (int64_t k = 0; k < h; ++k)
    EXPECT_EQ(out[size_t(h + k)], 0.0);
  // A NaN poisons rmsnorm's whole row (its sum of squares): no number is left, the floor scale.
  EXPECT_EQ(scales[2], kE4M3MinTokenScale);
  for (int64_t k = 0; k < h; ++k)
    EXPECT_TRUE(std::isnan(out[size_t(2 * h + k)])) << k;
}

} // namespace
} // namespace collc
