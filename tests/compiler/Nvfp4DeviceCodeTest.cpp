// compiler/device/quant_nvfp4.cuh compiled for the host, the very functions a kernel runs where
// the GPU has no conversion instruction, against the float64 reference (compiler/interpret/
// Float4.h, Float8.h): the conversions on every float of the ranges where they round (and a
// sample of all the others), the scale's decoding on every code, whole blocks on random rows, and
// the swizzled offsets on many shapes.
#include "compiler/interpret/Float4.h"
#include "compiler/interpret/Float8.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <gtest/gtest.h>
#include <random>
#include <vector>

// The CUDA qualifiers the file spells, for a host compiler.
#define __host__
#define __device__
#define __forceinline__ inline
namespace collc::device_code {
#include "compiler/device/fp8_e4m3.cuh"
#include "compiler/device/quant_nvfp4.cuh"
} // namespace collc::device_code
#undef __host__
#undef __device__
#undef __forceinline__

namespace collc {
namespace {

using namespace device_code;

float floatOf(uint32_t bits) {
  return nvfp4_bits_float(bits);
}

/// Every float with bits in [first, last), stepping by `stride`, and its negation.
template <typename Check>
void forFloats(uint32_t first, uint32_t last, uint32_t stride, Check check) {
  for (uint64_t bits = first; bits < last; bits += stride) {
    check(floatOf(uint32_t(bits)));
    check(floatOf(uint32_t(bits) | 0x80000000u));
  }
}

TEST(Nvfp4DeviceCode, E2M1ConversionIsTheReferenceOnEveryFloatWhereItRounds) {
  // Every float from 2^-3 up to 2^4 (all 7 boundaries and the saturation past 6), then a sample of
  // every bit pattern: zeros, subnormals, NaNs, infinities.
  int mismatches = 0;
  auto check = [&](float x) {
    if (nvfp4_e2m1_soft(x) != toE2M1(double(x)) && ++mismatches <= 5)
      ADD_FAILURE() << x << ": " << nvfp4_e2m1_soft(x) << " != " << int(toE2M1(double(x)));
  };
  forFloats(0x3e000000u, 0x41800000u, 1, check);
  forFloats(0, 0x80000000u, 4099, check);
  EXPECT_EQ(mismatches, 0);
}

TEST(Nvfp4DeviceCode, E4M3ConversionIsTheReferenceOnEveryFloatWhereItRounds) {
  // Every float from 2^-11 (below half the smallest subnormal) to 2^-5 (past the smallest normal)
  // and from 2^7 to 2^9 (the largest codes and the saturation); every 7th between; a sample of
  // every bit pattern.
  int mismatches = 0;
  auto check = [&](float x) {
    const unsigned expected = toE4M3(double(x));
    if (nvfp4_e4m3(x) != expected && ++mismatches <= 5)
      ADD_FAILURE() << x << ": " << nvfp4_e4m3(x) << " != " << expected;
  };
  forFloats(0x3a000000u, 0x3d000000u, 1, check);
  forFloats(0x3d000000u, 0x43000000u, 7, check);
  forFloats(0x43000000u, 0x44000000u, 1, check);
  forFloats(0, 0x80000000u, 4099, check);
  EXPECT_EQ(mismatches, 0);
}

TEST(Nvfp4DeviceCode, E4M3DecodingIsTheReferenceOnEveryCode) {
  for (unsigned bits = 0; bits < 256; ++bits) {
    const double expected = fromE4M3(uint8_t(bits));
    const float got = nvfp4_e4m3_value(bits);
    if (std::isnan(expected))
      EXPECT_TRUE(std::isnan(got)) << bits;
    else
      EXPECT_EQ(double(got), expected) << bits;
    EXPECT_EQ(std::signbit(got), bits >= 0x80 && !std::isnan(expected)) << bits;
  }
}

TEST(Nvfp4DeviceCode, PairsPackTheFirstElementLow) {
  EXPECT_EQ(nvfp4_e2m1x2(6.0f, -0.5f), 0x97u);
  EXPECT_EQ(nvfp4_quantize_pair(1.0f, 3.0f, 2.0f), 0x74u);
}

/// One block's scale and bytes as the kernel computes them.
void quantizeBlock(const float* x, int n, float g, unsigned& scale, std::vector<uint8_t>& bytes) {
  unsigned amax = 0;
  for (int i = 0; i < n; ++i)
    amax = nvfp4_amax_with(amax, x[i]);
  scale = nvfp4_block_scale(amax, g);
  const float factor = nvfp4_block_factor(scale, g);
  for (int i = 0; i < n; i += 2)
    bytes.push_back(uint8_t(nvfp4_quantize_pair(x[i], i + 1 < n ? x[i + 1] : 0.0f, factor)));
}

// The kernel's float arithmetic against the float64 reference on bf16 values: the same bits except
// where the float64 value of a scale or an element lies within the float computation's error of a
// rounding boundary (three roundings before a scale, two before an element: a relative 2^-22
// bounds them), and such cases are rare.
TEST(Nvfp4DeviceCode, RowsAreTheReferenceExceptWithinFloatErrorOfABoundary) {
  std::mt19937_64 random(16);
  std::normal_distribution<double> values(0.0, 1.0);
  std::uniform_real_distribution<double> exponents(-10.0, 10.0);
  Nvfp4Agreement agreement;
  for (int trial = 0; trial < 2000; ++trial) {
    const double magnitude = std::exp2(exponents(random));
    std::vector<float> x(160);
    for (float& v : x) // a bf16 value: the elements a kernel quantizes are its element type's
      v = floatOf(nvfp4_float_bits(float(values(random) * magnitude)) & 0xffff0000u);
    const float g = float(448.0 * 6.0 / (magnitude * 3) * std::exp2(exponents(random) / 10));
    std::vector<uint8_t> packed, scales;
    for (int block = 0; block < 10; ++block) {
      unsigned scale = 0;
      quantizeBlock(x.data() + 16 * block, 16, g, scale, packed);
      scales.push_back(uint8_t(scale));
    }
    compareNvfp4Row(std::vector<double>(x.begin(), x.end()), double(g), packed.data(),
                    scales.data(), std::ldexp(1.0, -22), "trial " + std::to_string(trial),
                    agreement);
  }
  std::printf("%lld blocks: %lld within float error of a scale's rounding boundary; %lld "
              "elements compared: %lld within it\n",
              (long long)agreement.blocks, (long long)agreement.blocksNearABoundary,
              (long long)agreement.elements, (long long)agreement.elementsNearABoundary);
  EXPECT_EQ(agreement.differences, 0) << agreement.firstDifference;
  EXPECT_EQ(agreement.blocks, 20000);
  EXPECT_LT(agreement.blocksNearABoundary, agreement.blocks / 100);
  EXPECT_LT(agreement.elementsNearABoundary, agreement.elements / 100);
}

TEST(Nvfp4DeviceCode, SpecialBlocksAreTheReference) {
  const float inf = INFINITY, nan = NAN;
  const std::vector<std::vector<float>> blocks = {
      std::vector<float>(16, 0.0f),
      {1, 2, nan, 4, -0.0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3},
      {-inf, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
      std::vector<float>(16, nan),
      {1e-30f, -1e-30f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
      {3e38f, 1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};
  for (float g : {1.0f, 6.0f, 2688.0f, 1e30f}) {
    for (const std::vector<float>& x : blocks) {
      unsigned scale = 0;
      std::vector<uint8_t> bytes;
      quantizeBlock(x.data(), 16, g, scale, bytes);
      const Nvfp4Row reference = quantizeNvfp4(std::vector<double>(x.begin(), x.end()), g);
      EXPECT_EQ(scale, reference.scales[0]) << "G " << g << " x[0] " << x[0];
      EXPECT_EQ(bytes, reference.packed) << "G " << g << " x[0] " << x[0];
    }
  }
}

TEST(Nvfp4DeviceCode, SwizzledOffsetsAreTheReferences) {
  for (uint64_t blocks : {1, 3, 4, 5, 128, 130, 512})
    for (uint64_t row = 0; row < 300; ++row)
      for (uint64_t block = 0; block < blocks; ++block)
        ASSERT_EQ(nvfp4_swizzled_offset(row, block, blocks),
                  nvfp4SwizzledOffset(row, block, blocks))
            << row << " " << block << " of " << blocks;
}

} // namespace
} // namespace collc
