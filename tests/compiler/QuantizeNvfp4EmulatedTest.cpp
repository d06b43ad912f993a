// The NVFP4 statement's bounded reference against the kernel's own arithmetic, on the host: rows
// normalized in float as the generated kernel does (a sum of squares in float, its reciprocal
// square root, two float products), then quantized with compiler/device/quant_nvfp4.cuh's very
// functions (the software conversions a GPU without the e2m1 instruction runs, which give the
// hardware's bits). Every code and block scale must lie within the interpreter's bound of its
// value (interpret::BoundedResult), as the harness requires of a kernel: a bound too tight for
// float's rounding fails here before a GPU runs.
#include "compiler/interpret/Float4.h"
#include "compiler/interpret/Float8.h"
#include "compiler/interpret/Interpreter.h"
#include "tests/compiler/QuantizeSpecs.h"

#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <random>
#include <vector>

// The CUDA qualifiers the file spells, for a host compiler.
#define __host__
#define __device__
#define __forceinline__ inline
namespace collc::nvfp4_emulated {
#include "compiler/device/fp8_e4m3.cuh"
#include "compiler/device/quant_nvfp4.cuh"
} // namespace collc::nvfp4_emulated
#undef __host__
#undef __device__
#undef __forceinline__

namespace collc {
namespace {

using namespace nvfp4_emulated;
using namespace tests;

/// One kernel's row in float: rmsnorm's values, then NVFP4 codes (as their values) and scales.
void kernelRow(const std::vector<float>& y, const std::vector<float>& w, float globalScale,
               double eps, Values& codes, Values& scales) {
  float squares = 0;
  for (float v : y)
    squares += v * v;
  const float scale = 1.0f / std::sqrt(squares / float(y.size()) + float(eps));
  std::vector<float> x;
  for (size_t k = 0; k < y.size(); ++k)
    x.push_back(y[k] * scale * w[k]);
  for (size_t begin = 0; begin < x.size(); begin += 16) {
    unsigned amax = 0;
    for (size_t k = begin; k < begin + 16; ++k)
      amax = nvfp4_amax_with(amax, x[k]);
    const unsigned bits = nvfp4_block_scale(amax, globalScale);
    const float factor = nvfp4_block_factor(bits, globalScale);
    scales.push_back(fromE4M3(uint8_t(bits)));
    for (size_t k = begin; k < begin + 16; k += 2) {
      const unsigned pair = nvfp4_quantize_pair(x[k], x[k + 1], factor);
      codes.push_back(fromE2M1(uint8_t(pair & 0xfu)));
      codes.push_back(fromE2M1(uint8_t(pair >> 4)));
    }
  }
}

// Rows of random magnitudes over 2^-6..2^3 with either sign (the harness's inputs), 2 ranks, the
// rows the kernel normalizes given to the reference as it wrote them; several global scales, some
// saturating blocks' scales and codes. Every code and scale within its bound, and those near a
// boundary few.
TEST(QuantizeNvfp4Emulated, TheKernelsFloatArithmeticIsWithinTheBoundedReference) {
  const int64_t h = 256, rows = 24;
  for (const char* name : {"allreduce_rmsnorm_nvfp4_linear", "allreduce_rmsnorm_nvfp4"}) {
    SCOPED_TRACE(name);
    const bool swizzled = std::string(name) == "allreduce_rmsnorm_nvfp4";
    auto spec = stdlibSpec(name, h);
    ASSERT_TRUE(spec);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> unit(1.0, 2.0);
    std::uniform_int_distribution<int> exponent(-6, 3);
    auto randomValue = [&] {
      return float(std::ldexp(unit(rng), exponent(rng)) * (rng() % 2 ? -1 : 1));
    };
    int64_t checked = 0, near = 0;
    for (float globalScale : {0.75f, 96.0f, 2688.0f, -5.5f}) {
      interpret::Call call;
      call.nranks = 2;
      call.count = h * rows;
      call.rowLength = h;
      const std::vector<int64_t> auxSizes = interpret::auxElements(*spec, call);
      std::vector<float> weight;
      for (int64_t k = 0; k < h; ++k)
        weight.push_back(randomValue());
      std::vector<std::vector<float>> written(2); // residual_out as each rank's kernel wrote it
      for (int r = 0; r < 2; ++r) {
        Values in, residual;
        for (int64_t i = 0; i < call.count; ++i) {
          in.push_back(randomValue());
          residual.push_back(randomValue());
        }
        call.input.push_back(in);
        call.aux.push_back({residual, Values(size_t(call.count), 0.0),
                            Values(weight.begin(), weight.end()),
                            Values(size_t(auxSizes.at(3)), 0.0), Values{globalScale}});
      }
      for (int r = 0; r < 2; ++r) {
        for (int64_t i = 0; i < call.count; ++i)
          written[size_t(r)].push_back(float(call.input[0][size_t(i)]) +
                                       float(call.input[1][size_t(i)]) +
                                       float(call.aux[size_t(r)][0][size_t(i)]));
        std::vector<Values> asWritten(5);
        asWritten[1] = Values(written[size_t(r)].begin(), written[size_t(r)].end());
        call.rowsAsWritten.push_back(asWritten);
      }
      const interpret::Rounding rounding{1e-6, 0x1p-126, 1e-5, 1e-5};
      const interpret::BoundedResult reference =
          interpret::interpretBounded(*spec, spec->steps, call, rounding);
      for (int r = 0; r < 2; ++r)
        for (int64_t t = 0; t < rows; ++t) {
          const std::vector<float> y(written[size_t(r)].begin() + t * h,
                                     written[size_t(r)].begin() + (t + 1) * h);
          Values codes, scales;
          kernelRow(y, weight, globalScale, call.eps, codes, scales);
          for (int64_t k = 0; k < h; ++k) {
            const size_t i = size_t(t * h + k);
            const double want = reference.value.output[size_t(r)][i];
            const double bound = reference.bound.output[size_t(r)][i];
            EXPECT_LE(std::fabs(codes[size_t(k)] - want), bound)
                << "rank " << r << " row " << t << " element " << k << " G " << globalScale;
            ++checked;
            near += bound > 0;
          }
          for (int64_t b = 0; b < h / 16; ++b) {
            const size_t at = swizzled ? nvfp4SwizzledOffset(uint64_t(t), uint64_t(b), h / 16)
                                       : size_t(t * (h / 16) + b);
            const double want = reference.value.aux[size_t(r)][3][at];
            const double bound = reference.bound.aux[size_t(r)][3][at];
            EXPECT_LE(std::fabs(scales[size_t(b)] - want), bound)
                << "rank " << r << " row " << t << " block " << b << " G " << globalScale;
            ++checked;
            near += bound > 0;
          }
        }
    }
    EXPECT_LT(near * 100, checked) << near << " of " << checked << " near a boundary";
  }
}

} // namespace
} // namespace collc
