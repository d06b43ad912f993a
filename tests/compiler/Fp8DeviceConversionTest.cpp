// The device's software float-to-E4M3 conversion (compiler/device/fp8_e4m3.cuh, which kernels
// before sm_89 use) compiled for the host and checked against the float64 reference's
// (compiler/interpret/Float8.h), which was checked against CUDA's own conversion.
#include "compiler/interpret/Float8.h"

#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>

namespace collc {
namespace {

// What the device file needs of CUDA, for the host.
#define __host__
#define __device__
#define __forceinline__ inline
#include "compiler/device/fp8_e4m3.cuh"
#undef __host__
#undef __device__
#undef __forceinline__

float floatOfBits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// Rounding is decided by the bits below the three kept: every float whose low byte is 0x00 (the
// ties among them), 0x01 or 0xff (just past and just before them), of both signs and every
// exponent from 2^-17 (far below E4M3's smallest subnormal, 2^-9) to 2^9 (past 448).
TEST(Fp8DeviceConversion, AgreesWithTheReferenceAtEveryTieAndNearTie) {
  for (uint32_t sign : {0u, 1u})
    for (uint32_t exponent = 127 - 17; exponent <= 127 + 9; ++exponent)
      for (uint32_t mantissa = 0; mantissa < (1u << 15); ++mantissa)
        for (uint32_t low : {0x00u, 0x01u, 0xffu}) {
          const uint32_t bits = sign << 31 | exponent << 23 | mantissa << 8 | low;
          const float x = floatOfBits(bits);
          ASSERT_EQ(fp8_e4m3_soft(x), unsigned(toE4M3(double(x))))
              << std::hexfloat << x << " (0x" << std::hex << bits << ")";
        }
}

TEST(Fp8DeviceConversion, AgreesWithTheReferenceOnRandomFloats) {
  std::mt19937 rng(7);
  for (int k = 0; k < 2000000; ++k) {
    const float x = floatOfBits(rng());
    ASSERT_EQ(fp8_e4m3_soft(x), unsigned(toE4M3(double(x)))) << std::hexfloat << x;
  }
}

TEST(Fp8DeviceConversion, SaturatesAndKeepsNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fp8_e4m3_soft(inf), 0x7eu);
  EXPECT_EQ(fp8_e4m3_soft(-inf), 0xfeu);
  EXPECT_EQ(fp8_e4m3_soft(500.0f), 0x7eu);
  EXPECT_EQ(fp8_e4m3_soft(std::numeric_limits<float>::quiet_NaN()), 0x7fu);
  EXPECT_EQ(fp8_e4m3_soft(-0.0f), 0x80u);
  EXPECT_EQ(fp8_e4m3_pair(1.0f, -2.0f), 0xc038u); // lo 1.0 = 0x38, hi -2.0 = 0xc0
}

} // namespace
} // namespace collc
