// The host-side half of every GPU check: if these conversions, the reference or the comparison
// were wrong, GPU tests would pass wrong kernels or fail right ones.
#include "tools/harness/HostData.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>

namespace collc {
namespace {

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

TEST(HalfConversion, ExactValuesRoundTrip) {
  EXPECT_EQ(floatToF16(0.0f), 0x0000);
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(-2.0f), 0xc000);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);              // largest finite
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(f16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(f16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToFloat(0x83ff), -std::ldexp(1023.0f, -24));
}

TEST(HalfConversion, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1).
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(floatToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above the halfway point rounds up.
  EXPECT_EQ(floatToF16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);
  // Subnormal ties: 2^-25 is half the smallest subnormal, rounds to zero; 3 * 2^-25 to 2 * 2^-24.
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToF16(3 * std::ldexp(1.0f, -25)), 0x0002);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);
}

TEST(HalfConversion, OverflowInfinityAndNaN) {
  EXPECT_EQ(floatToF16(65519.0f), 0x7bff); // below the rounding boundary
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00); // the boundary ties away to infinity (even)
  EXPECT_EQ(floatToF16(1e9f), 0x7c00);
  EXPECT_EQ(floatToF16(-1e9f), 0xfc00);
  EXPECT_EQ(floatToF16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToF16(-std::numeric_limits<float>::infinity()), 0xfc00);
  uint16_t nan = floatToF16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  // A NaN whose payload sits only in low bits must not turn into infinity.
  EXPECT_NE(floatToF16(floatFromBits(0x7f800001)) & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(f16ToFloat(0xffff)));
  EXPECT_TRUE(std::isinf(f16ToFloat(0x7c00)));
  EXPECT_EQ(floatToF16(1e-30f), 0x0000);
  EXPECT_EQ(floatToF16(-1e-30f), 0x8000);
}

TEST(HalfConversion, EveryHalfRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float value = f16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value))
      EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(value)))) << std::hex << bits;
    else
      EXPECT_EQ(floatToF16(value), bits) << std::hex << bits;
  }
}

#ifdef __FLT16_MAX__
// The compiler's own _Float16 conversion (IEEE round to nearest even) as a second opinion.
TEST(HalfConversion, AgreesWithCompilerOnRandomFloats) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1'000'000; ++i) {
    float value = floatFromBits(static_cast<uint32_t>(rng()));
    if (std::isnan(value))
      continue;
    _Float16 expected = static_cast<_Float16>(value);
    uint16_t expectedBits;
    std::memcpy(&expectedBits, &expected, 2);
    ASSERT_EQ(floatToF16(value), expectedBits) << value;
  }
}
#endif

TEST(Bf16Conversion, ExactRoundingAndSpecials) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(floatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(floatToBf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3f81);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80); // rounds to infinity
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(floatToBf16(-std::numeric_limits<float>::infinity()), 0xff80);
  uint16_t nan = floatToBf16(floatFromBits(0x7f800001)); // payload only in dropped bits
  EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));
  EXPECT_EQ(floatToBf16(floatFromBits(0xffc00000)) & 0x8000, 0x8000); // NaN keeps its sign
  EXPECT_EQ(floatToBf16(floatFromBits(0x00010000)), 0x0001);          // subnormal, exact
}

TEST(Bf16Conversion, EveryBf16RoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float value = bf16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value))
      EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(value)))) << std::hex << bits;
    else
      EXPECT_EQ(floatToBf16(value), bits) << std::hex << bits;
  }
}

TEST(FillRandom, ValuesAreNormalMixedAndSeeded) {
  for (DType type : kAllDTypes) {
    std::vector<char> a(size_t(4096) * 4), b(size_t(4096) * 4);
    std::mt19937_64 rngA(3), rngB(3);
    fillRandom(type, a.data(), 4096, rngA);
    fillRandom(type, b.data(), 4096, rngB);
    EXPECT_EQ(a, b) << "same seed, same data";
    int negative = 0, small = 0, large = 0;
    for (uint64_t i = 0; i < 4096; ++i) {
      double x = loadElement(type, a.data(), i);
      ASSERT_TRUE(std::isfinite(x));
      ASSERT_GE(std::fabs(x), 0x1p-6);
      ASSERT_LE(std::fabs(x), 16.0);
      negative += x < 0;
      small += std::fabs(x) < 0.125;
      large += std::fabs(x) >= 4;
    }
    EXPECT_GT(negative, 1500);
    EXPECT_GT(small, 500);
    EXPECT_GT(large, 500);
    std::vector<char> c(size_t(4096) * 4);
    fillRandom(type, c.data(), 4096, rngA);
    EXPECT_NE(a, c) << "the generator moves on";
  }
}

// Builds per-rank f32 inputs from literal rows.
struct Inputs {
  std::vector<std::vector<float>> rows;
  std::vector<const void*> pointers() const {
    std::vector<const void*> result;
    for (const auto& row : rows)
      result.push_back(row.data());
    return result;
  }
};

TEST(Reference, SumMaxMinInFloat64) {
  Inputs in{{{1.5f, -2.0f, 1e8f}, {0.25f, 3.0f, 1.0f}, {-1.0f, -4.0f, -1e8f}}};
  AllReduceReference sum = referenceAllReduce(DType::F32, ReduceOp::Sum, in.pointers(), 3);
  EXPECT_EQ(sum.value, (std::vector<double>{0.75, -3.0, 1.0})); // exact: no float cancellation
  EXPECT_EQ(sum.absSum, (std::vector<double>{2.75, 9.0, 2e8 + 1}));
  EXPECT_EQ(referenceAllReduce(DType::F32, ReduceOp::Max, in.pointers(), 3).value,
            (std::vector<double>{1.5, 3.0, 1e8}));
  EXPECT_EQ(referenceAllReduce(DType::F32, ReduceOp::Min, in.pointers(), 3).value,
            (std::vector<double>{-1.0, -4.0, -1e8}));
}

TEST(Reference, NaNInputGivesNaN) {
  Inputs in{{{std::nanf(""), 1.0f}, {2.0f, 3.0f}}};
  for (ReduceOp op : kAllReduceOps) {
    AllReduceReference ref = referenceAllReduce(DType::F32, op, in.pointers(), 2);
    EXPECT_TRUE(std::isnan(ref.value[0])) << name(op);
    EXPECT_FALSE(std::isnan(ref.value[1])) << name(op);
  }
}

TEST(Compare, SumWithinToleranceOnly) {
  Inputs in{{{1.0f, 1.0f, 1.0f, 1.0f}, {2.0f, 2.0f, 2.0f, 2.0f}}};
  AllReduceReference ref = referenceAllReduce(DType::F32, ReduceOp::Sum, in.pointers(), 4);
  const double tol = sumTolerance(DType::F32, 2) * 3; // sum of |x| is 3
  std::vector<float> got = {3.0f, static_cast<float>(3.0 + tol * 0.5),
                            static_cast<float>(3.0 + tol * 4), std::nanf("")};
  Comparison c = compareAllReduce(DType::F32, ref, in.pointers(), got.data(), 4, "rank 0 out");
  EXPECT_EQ(c.mismatches, 2u);
  EXPECT_NE(c.firstMismatches.find("rank 0 out[2]: got"), std::string::npos) << c.firstMismatches;
  EXPECT_NE(c.firstMismatches.find("rank 0 out[3]: got nan"), std::string::npos)
      << c.firstMismatches;
  EXPECT_NE(c.firstMismatches.find("inputs 1 (0x3f800000), 2 (0x40000000)"), std::string::npos)
      << c.firstMismatches;
  EXPECT_EQ(c.firstMismatches.find("out[1]"), std::string::npos) << c.firstMismatches;
}

TEST(Compare, MaxMinExact) {
  Inputs in{{{1.0f, 5.0f}, {2.0f, 4.0f}}};
  AllReduceReference ref = referenceAllReduce(DType::F32, ReduceOp::Max, in.pointers(), 2);
  std::vector<float> got = {2.0f, std::nextafter(5.0f, 0.0f)};
  Comparison c = compareAllReduce(DType::F32, ref, in.pointers(), got.data(), 2, "out");
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_NE(c.firstMismatches.find("max must match exactly"), std::string::npos);
}

TEST(Compare, PoisonedOutputFailsInEveryType) {
  for (DType type : kAllDTypes) {
    for (ReduceOp op : kAllReduceOps) {
      std::vector<char> a(size_t(64) * 4), b(size_t(64) * 4),
          out(size_t(64) * 4, static_cast<char>(0xff));
      std::mt19937_64 rng(11);
      fillRandom(type, a.data(), 64, rng);
      fillRandom(type, b.data(), 64, rng);
      std::vector<const void*> inputs = {a.data(), b.data()};
      AllReduceReference ref = referenceAllReduce(type, op, inputs, 64);
      Comparison c = compareAllReduce(type, ref, inputs, out.data(), 64, "out", 2);
      EXPECT_EQ(c.mismatches, 64u) << name(type) << " " << name(op);
      // Only the first two are described.
      EXPECT_EQ(std::count(c.firstMismatches.begin(), c.firstMismatches.end(), '\n'), 2);
    }
  }
}

// What a device does: sum in float, round once to the type. It must always pass, for any rank
// count, and so must the LL128-atomic order (round after every add in the 16-bit type).
TEST(Compare, DeviceStyleRoundingPasses) {
  for (DType type : kAllDTypes) {
    for (int nranks = 2; nranks <= 8; ++nranks) {
      const uint64_t count = 2000;
      std::mt19937_64 rng(nranks);
      std::vector<std::vector<char>> rows(nranks, std::vector<char>(count * 4));
      std::vector<const void*> inputs;
      for (auto& row : rows) {
        fillRandom(type, row.data(), count, rng);
        inputs.push_back(row.data());
      }
      AllReduceReference ref = referenceAllReduce(type, ReduceOp::Sum, inputs, count);
      std::vector<char> once(count * 4), everyAdd(count * 4);
      for (uint64_t i = 0; i < count; ++i) {
        float sum = 0, rounded = 0;
        for (int r = nranks - 1; r >= 0; --r) { // an order unlike the reference's
          float x = static_cast<float>(loadElement(type, inputs[r], i));
          sum += x;
          storeElement(type, everyAdd.data(), i, rounded + x);
          rounded = static_cast<float>(loadElement(type, everyAdd.data(), i));
        }
        storeElement(type, once.data(), i, sum);
      }
      EXPECT_TRUE(compareAllReduce(type, ref, inputs, once.data(), count, "once").ok())
          << name(type) << " nranks " << nranks;
      EXPECT_TRUE(compareAllReduce(type, ref, inputs, everyAdd.data(), count, "every add").ok())
          << name(type) << " nranks " << nranks;
    }
  }
}

// The tolerance must still catch a real bug: one rank's contribution missing or counted twice.
TEST(Compare, MissingOrDoubledContributionFails) {
  for (DType type : kAllDTypes) {
    const uint64_t count = 256;
    std::mt19937_64 rng(5);
    std::vector<char> a(count * 4), b(count * 4), missing(count * 4), doubled(count * 4);
    fillRandom(type, a.data(), count, rng);
    fillRandom(type, b.data(), count, rng);
    std::vector<const void*> inputs = {a.data(), b.data()};
    AllReduceReference ref = referenceAllReduce(type, ReduceOp::Sum, inputs, count);
    for (uint64_t i = 0; i < count; ++i) {
      float x = static_cast<float>(loadElement(type, a.data(), i));
      float y = static_cast<float>(loadElement(type, b.data(), i));
      storeElement(type, missing.data(), i, x);
      storeElement(type, doubled.data(), i, x + 2 * y);
    }
    // Where |y| is tiny next to |x| a 16-bit sum cannot tell; most elements must fail.
    EXPECT_GT(compareAllReduce(type, ref, inputs, missing.data(), count, "m").mismatches,
              count * 3 / 4)
        << name(type);
    EXPECT_GT(compareAllReduce(type, ref, inputs, doubled.data(), count, "d").mismatches,
              count * 3 / 4)
        << name(type);
  }
}

TEST(Compare, InfinityMustMatch) {
  float inf = std::numeric_limits<float>::infinity();
  Inputs in{{{inf, 1.0f}, {1.0f, 1.0f}}};
  AllReduceReference ref = referenceAllReduce(DType::F32, ReduceOp::Sum, in.pointers(), 2);
  std::vector<float> good = {inf, 2.0f}, bad = {-inf, inf};
  EXPECT_TRUE(compareAllReduce(DType::F32, ref, in.pointers(), good.data(), 2, "o").ok());
  EXPECT_EQ(compareAllReduce(DType::F32, ref, in.pointers(), bad.data(), 2, "o").mismatches, 2u);
}

} // namespace
} // namespace collc
