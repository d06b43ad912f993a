// The float64 reference's E4M3 rounding against a reference that knows nothing of the format's
// layout: the nearest of the 127 non-negative finite values decoded from their bits, ties to the
// even encoding, ±448 past the largest. Every encoding, every midpoint between two neighbours and
// the doubles on either side of it, random values, and the special ones.
#include "compiler/interpret/Float8.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <vector>

namespace collc {
namespace {

/// The non-negative finite encodings in increasing value (0x00..0x7e).
std::vector<uint8_t> finiteEncodings() {
  std::vector<uint8_t> bits;
  for (int b = 0; b < 0x7f; ++b)
    bits.push_back(uint8_t(b));
  return bits;
}

uint8_t nearestEncoding(double x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(x);
  if (a >= 448.0)
    return sign | 0x7e;
  uint8_t best = 0;
  double bestDistance = std::numeric_limits<double>::infinity();
  for (uint8_t b : finiteEncodings()) {
    const double distance = std::fabs(fromE4M3(b) - a);
    if (distance < bestDistance || (distance == bestDistance && b % 2 == 0 && best % 2 == 1)) {
      best = b;
      bestDistance = distance;
    }
  }
  return sign | best;
}

TEST(Float8, EncodingsDecodeToTheFormatsValues) {
  EXPECT_EQ(fromE4M3(0x00), 0.0);
  EXPECT_EQ(fromE4M3(0x01), std::ldexp(1.0, -9)); // the smallest subnormal
  EXPECT_EQ(fromE4M3(0x08), std::ldexp(1.0, -6)); // the smallest normal
  EXPECT_EQ(fromE4M3(0x38), 1.0);
  EXPECT_EQ(fromE4M3(0x7e), 448.0);
  EXPECT_EQ(fromE4M3(0xfe), -448.0);
  EXPECT_TRUE(std::isnan(fromE4M3(0x7f)));
  EXPECT_TRUE(std::isnan(fromE4M3(0xff)));
  for (uint8_t b = 1; b < 0x7f; ++b)
    EXPECT_LT(fromE4M3(uint8_t(b - 1)), fromE4M3(b)) << int(b);
}

TEST(Float8, EveryValueRoundsToItself) {
  for (uint8_t b : finiteEncodings()) {
    EXPECT_EQ(toE4M3(fromE4M3(b)), b) << int(b);
    EXPECT_EQ(toE4M3(-fromE4M3(b)), b | 0x80) << int(b);
  }
}

TEST(Float8, MidpointsRoundToEvenAndTheirNeighboursToTheNearer) {
  int ties = 0;
  for (uint8_t b = 1; b < 0x7f; ++b) {
    const double low = fromE4M3(uint8_t(b - 1)), high = fromE4M3(b);
    const double mid = (low + high) / 2;
    for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9)}) {
      EXPECT_EQ(toE4M3(x), nearestEncoding(x)) << x;
      EXPECT_EQ(toE4M3(-x), nearestEncoding(-x)) << -x;
    }
    EXPECT_EQ(toE4M3(mid) % 2, 0) << "the tie " << mid << " goes to the even encoding";
    ++ties;
  }
  EXPECT_EQ(ties, 126);
}

TEST(Float8, RandomValuesRoundToTheNearest) {
  std::mt19937_64 random(33);
  std::uniform_real_distribution<double> wide(-500.0, 500.0), narrow(-0.05, 0.05);
  for (int k = 0; k < 20000; ++k) {
    const double x = k % 2 ? wide(random) : narrow(random);
    ASSERT_EQ(toE4M3(x), nearestEncoding(x)) << x;
  }
}

TEST(Float8, SaturatesInfinitiesAndLargeValuesAndKeepsNaN) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(toE4M3(448.0), 0x7e);
  EXPECT_EQ(toE4M3(464.0), 0x7e); // past the midpoint to a value E4M3 does not have
  EXPECT_EQ(toE4M3(1e300), 0x7e);
  EXPECT_EQ(toE4M3(inf), 0x7e);
  EXPECT_EQ(toE4M3(-inf), 0xfe);
  EXPECT_EQ(toE4M3(-1e6), 0xfe);
  EXPECT_EQ(toE4M3(std::numeric_limits<double>::quiet_NaN()) & 0x7f, 0x7f);
  EXPECT_EQ(toE4M3(0.0), 0x00);
  EXPECT_EQ(toE4M3(-0.0), 0x80);
  EXPECT_EQ(toE4M3(std::ldexp(1.0, -10)), 0x00); // half the smallest subnormal: a tie to 0
  EXPECT_EQ(toE4M3(std::nextafter(std::ldexp(1.0, -10), 1.0)), 0x01);
  EXPECT_EQ(toE4M3(1e-300), 0x00);
}

} // namespace
} // namespace collc
