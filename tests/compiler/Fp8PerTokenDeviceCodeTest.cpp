// compiler/device/fp8_per_token.cuh compiled for the host (with fp8_e4m3.cuh's software
// conversion, which kernels before sm_89 use) against the float64 reference
// (compiler/interpret/Float8.h): the scale on a sample of every float amax and at its edges (zero,
// the floor, infinity), and whole rows of hidden 2048..8192 (5000: not a multiple of 16) with
// outliers, zeros, NaNs, infinities and values past FP8's range. The scale must be the
// reference's, bit for bit; a quantized element too, except where the device's float quotient
// x / scale and the exact one round to different codes: within a float rounding of a boundary
// between two codes, counted. The block-wide amax (rows_fp8_per_token.cuh) compiles with NVRTC.
#include "compiler/interpret/Float8.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <vector>

namespace collc {
namespace {

// What the device files need of CUDA, for the host.
#define __host__
#define __device__
#define __forceinline__ inline
float __fdiv_rn(float a, float b) {
  return a / b; // IEEE division, correctly rounded to nearest even
}
#include "compiler/device/fp8_e4m3.cuh"
#include "compiler/device/fp8_per_token.cuh"
#undef __host__
#undef __device__
#undef __forceinline__

float floatOfBits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}
uint32_t bitsOf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

TEST(Fp8PerTokenDeviceCode, TheFloorIsTheReferencesInFloat) {
  EXPECT_EQ(double(kFp8MinTokenScale), kE4M3MinTokenScale);
  EXPECT_NEAR(kE4M3MinTokenScale * 448.0 * 512.0, 1.0, 1e-7);
  EXPECT_EQ(tokenScaleE4M3(0.0), kE4M3MinTokenScale);
  EXPECT_EQ(tokenScaleE4M3(896.0), 2.0);
  EXPECT_TRUE(std::isinf(tokenScaleE4M3(std::numeric_limits<double>::infinity())));
}

TEST(Fp8PerTokenDeviceCode, ScaleIsTheReferenceOnEveryAmax) {
  int mismatches = 0;
  auto check = [&](float amax) {
    const float device = fp8_token_scale(amax);
    const float reference = float(tokenScaleE4M3(double(amax)));
    if (bitsOf(device) != bitsOf(reference) && ++mismatches <= 5)
      ADD_FAILURE() << amax << ": " << device << " != " << reference;
  };
  // Every 5th non-negative float (zero, subnormals, normals, the largest), then the edges.
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 5)
    check(floatOfBits(bits));
  check(0.0f);
  check(std::numeric_limits<float>::max());
  check(448.0f * kFp8MinTokenScale);
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(fp8_token_scale(0.0f), kFp8MinTokenScale);
  EXPECT_EQ(fp8_token_scale(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp8_token_scale(448.0f), 1.0f);
}

TEST(Fp8PerTokenDeviceCode, AmaxPassesNaNOverWhateverTheOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(fp8_token_amax_with(fp8_token_amax_with(0.0f, nan), -3.0f), 3.0f);
  EXPECT_EQ(fp8_token_amax_with(fp8_token_amax_with(0.0f, -3.0f), nan), 3.0f);
  EXPECT_EQ(fp8_token_amax_with(0.0f, nan), 0.0f);
  EXPECT_EQ(amaxOfNumbers(std::vector<double>{std::nan(""), -3.0, 2.0}.data(), 3), 3.0);
  EXPECT_EQ(amaxOfNumbers(std::vector<double>{std::nan(""), std::nan("")}.data(), 2), 0.0);
}

/// One row quantized as the device does it, on the host: amax folded last element first (another
/// order than the reference's), the scale, the codes.
struct DeviceRow {
  float scale;
  std::vector<uint8_t> codes;
};
DeviceRow deviceRow(const std::vector<float>& row) {
  float amax = 0.0f;
  for (size_t k = row.size(); k-- > 0;)
    amax = fp8_token_amax_with(amax, row[k]);
  DeviceRow out{fp8_token_scale(amax), std::vector<uint8_t>(row.size())};
  for (size_t k = 0; k + 1 < row.size(); k += 2) {
    const unsigned pair = fp8_token_pair(row[k], row[k + 1], out.scale);
    out.codes[k] = uint8_t(pair & 0xffu);
    out.codes[k + 1] = uint8_t(pair >> 8);
  }
  if (row.size() % 2)
    out.codes.back() = uint8_t(fp8_token_pair(row.back(), 0.0f, out.scale) & 0xffu);
  return out;
}

/// True if the exact quotient q and the float one lie on two sides of a boundary between codes
/// (or on one): the only place the device's code may differ from the reference's.
bool nearABoundary(double exact, float rounded) {
  const double low = std::min(exact, double(rounded)), high = std::max(exact, double(rounded));
  return toE4M3(low) != toE4M3(high);
}

enum class RowKind { Normal, Outlier, Zeros, WithNaN, WithInfinity, Huge, Tiny };

std::vector<float> makeRow(RowKind kind, int64_t h, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(h));
  for (float& x : row)
    x = normal(rng);
  std::uniform_int_distribution<int64_t> at(0, h - 1);
  switch (kind) {
  case RowKind::Normal:
    break;
  case RowKind::Outlier:
    row[size_t(at(rng))] = -900.0f;
    break;
  case RowKind::Zeros:
    std::fill(row.begin(), row.end(), 0.0f);
    break;
  case RowKind::WithNaN:
    row[size_t(at(rng))] = std::numeric_limits<float>::quiet_NaN();
    break;
  case RowKind::WithInfinity:
    row[size_t(at(rng))] = -std::numeric_limits<float>::infinity();
    break;
  case RowKind::Huge:
    for (float& x : row)
      x *= 1e37f;
    break;
  case RowKind::Tiny:
    for (float& x : row)
      x *= 1e-41f; // subnormal floats: the scale is the floor
    break;
  }
  return row;
}

TEST(Fp8PerTokenDeviceCode, RowsAreTheReferencesExceptWithinARoundingOfABoundary) {
  std::mt19937 rng(7);
  int64_t elements = 0, nearBoundary = 0;
  for (int64_t h : {2048, 4096, 5000, 5120, 8192})
    for (RowKind kind : {RowKind::Normal, RowKind::Outlier, RowKind::Zeros, RowKind::WithNaN,
                         RowKind::WithInfinity, RowKind::Huge, RowKind::Tiny}) {
      const std::vector<float> row = makeRow(kind, h, rng);
      const DeviceRow device = deviceRow(row);
      const std::vector<double> wide(row.begin(), row.end());
      const double amax = amaxOfNumbers(wide.data(), h);
      const float scale = float(tokenScaleE4M3(amax));
      ASSERT_EQ(bitsOf(device.scale), bitsOf(scale)) << "hidden " << h << " kind " << int(kind);
      for (int64_t k = 0; k < h; ++k) {
        const double exact = wide[size_t(k)] / double(scale);
        const uint8_t expected = toE4M3(exact);
        ++elements;
        if (device.codes[size_t(k)] == expected)
          continue;
        const float quotient = row[size_t(k)] / scale;
        ASSERT_TRUE(nearABoundary(exact, quotient))
            << "hidden " << h << " kind " << int(kind) << " element " << k << ": "
            << int(device.codes[size_t(k)]) << " != " << int(expected);
        ++nearBoundary;
      }
      switch (kind) {
      case RowKind::Zeros:
      case RowKind::Tiny:
        EXPECT_EQ(device.scale, kFp8MinTokenScale);
        break;
      case RowKind::WithInfinity:
        EXPECT_TRUE(std::isinf(device.scale));
        for (int64_t k = 0; k < h; ++k)
          EXPECT_EQ(device.codes[size_t(k)] & 0x7fu, std::isinf(row[size_t(k)]) ? 0x7fu : 0u);
        break;
      case RowKind::Outlier:
        EXPECT_NE(std::count(device.codes.begin(), device.codes.end(), uint8_t(0xfe)), 0)
            << "the outlier is -448";
        break;
      default:
        break;
      }
      if (kind == RowKind::Zeros) {
        EXPECT_EQ(std::count(device.codes.begin(), device.codes.end(), uint8_t(0)), h);
      }
      if (kind == RowKind::WithNaN) {
        EXPECT_EQ(std::count(device.codes.begin(), device.codes.end(), uint8_t(0x7f)), 1);
      }
    }
  // Said, not asserted: how rare the boundary cases are.
  std::printf("[ per-token FP8 ] %lld of %lld elements within a float rounding of a boundary\n",
              (long long)nearBoundary, (long long)elements);
  EXPECT_LT(nearBoundary, elements / 100);
}

} // namespace
} // namespace collc
