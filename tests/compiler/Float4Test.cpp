// The float64 reference's NVFP4: E2M1 rounding against a reference that knows nothing of the
// format's layout (the nearest of the 8 magnitudes, ties to the even code), blocks quantized
// against their definition written out, and the 128x4-swizzled layout against an enumeration of
// its tiles.
#include "compiler/interpret/Float4.h"

#include "compiler/interpret/Float8.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <set>
#include <vector>

namespace collc {
namespace {

constexpr double kMagnitudes[] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

uint8_t nearestCode(double x) {
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const double a = std::fabs(x);
  if (a >= 6.0)
    return sign | 0x7;
  uint8_t best = 0;
  double bestDistance = kInf;
  for (uint8_t code = 0; code < 8; ++code) {
    const double distance = std::fabs(kMagnitudes[code] - a);
    if (distance < bestDistance || (distance == bestDistance && code % 2 == 0)) {
      best = code;
      bestDistance = distance;
    }
  }
  return sign | best;
}

TEST(Float4, CodesDecodeToTheFormatsValues) {
  for (uint8_t code = 0; code < 8; ++code) {
    EXPECT_EQ(fromE2M1(code), kMagnitudes[code]);
    EXPECT_EQ(fromE2M1(uint8_t(code | 0x8)), -kMagnitudes[code]);
    EXPECT_EQ(fromE2M1(uint8_t(code | 0x70)), kMagnitudes[code]) << "only the low nibble";
  }
  EXPECT_TRUE(std::signbit(fromE2M1(0x8)));
}

TEST(Float4, EveryValueRoundsToItself) {
  for (uint8_t code = 0; code < 8; ++code) {
    EXPECT_EQ(toE2M1(kMagnitudes[code]), code);
    EXPECT_EQ(toE2M1(-kMagnitudes[code]), code | 0x8);
  }
}

TEST(Float4, EveryBoundaryTiesToEvenAndItsNeighboursGoToTheNearer) {
  // The 7 midpoints and the codes their ties go to.
  const std::pair<double, uint8_t> ties[] = {{0.25, 0}, {0.75, 2}, {1.25, 2}, {1.75, 4},
                                             {2.5, 4},  {3.5, 6},  {5.0, 6}};
  for (const auto& [mid, even] : ties) {
    EXPECT_EQ(toE2M1(mid), even) << mid;
    EXPECT_EQ(toE2M1(-mid), even | 0x8) << -mid;
    const double below = std::nextafter(mid, 0.0), above = std::nextafter(mid, 10.0);
    for (double x : {mid, below, above}) {
      EXPECT_EQ(toE2M1(x), nearestCode(x)) << x;
      EXPECT_EQ(toE2M1(-x), nearestCode(-x)) << -x;
    }
    EXPECT_NE(toE2M1(below), toE2M1(above)) << "the rounding changes at " << mid;
  }
}

TEST(Float4, RandomValuesRoundToTheNearest) {
  std::mt19937_64 random(33);
  std::uniform_real_distribution<double> wide(-8.0, 8.0), narrow(-0.6, 0.6);
  for (int k = 0; k < 20000; ++k) {
    const double x = k % 2 ? wide(random) : narrow(random);
    ASSERT_EQ(toE2M1(x), nearestCode(x)) << x;
  }
}

TEST(Float4, SaturatesInfinitiesAndLargeValuesNaNIsPositiveMaxZeroKeepsItsSign) {
  EXPECT_EQ(toE2M1(6.0), 0x7);
  EXPECT_EQ(toE2M1(7.0), 0x7); // the midpoint to 8, a value E2M1 does not have
  EXPECT_EQ(toE2M1(1e300), 0x7);
  EXPECT_EQ(toE2M1(kInf), 0x7);
  EXPECT_EQ(toE2M1(-kInf), 0xf);
  EXPECT_EQ(toE2M1(-9.0), 0xf);
  EXPECT_EQ(toE2M1(kNaN), 0x7);
  EXPECT_EQ(toE2M1(-kNaN), 0x7);
  EXPECT_EQ(toE2M1(0.0), 0x0);
  EXPECT_EQ(toE2M1(-0.0), 0x8);
  EXPECT_EQ(toE2M1(-0.1), 0x8);
  EXPECT_EQ(toE2M1(1e-300), 0x0);
}

/// The block's definition written out: amax of the non-NaN elements, its E4M3 scale, and each
/// element's nearest code of x * G / SF.
void expectBlock(const std::vector<double>& x, double g, const Nvfp4Row& got, size_t block) {
  double amax = 0;
  for (size_t i = block * 16; i < std::min(x.size(), block * 16 + 16); ++i)
    if (!std::isnan(x[i]))
      amax = std::max(amax, std::fabs(x[i]));
  const uint8_t sf = toE4M3(g * amax / 6);
  ASSERT_EQ(got.scales.at(block), sf) << "block " << block;
  for (size_t i = block * 16; i < std::min(x.size(), block * 16 + 16); ++i) {
    const double scaled = fromE4M3(sf) == 0 ? x[i] * 0.0 : x[i] * g / fromE4M3(sf);
    const uint8_t code = std::isnan(scaled) ? 0x7 : nearestCode(scaled);
    EXPECT_EQ((got.packed.at(i / 2) >> (i % 2 * 4)) & 0xf, code) << "element " << i;
  }
}

TEST(Float4, RandomRowsQuantizeAsDefined) {
  std::mt19937_64 random(4);
  std::normal_distribution<double> values(0.0, 1.0);
  std::uniform_real_distribution<double> exponents(-12.0, 12.0);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> row(64);
    const double magnitude = std::exp2(exponents(random));
    for (double& x : row)
      x = values(random) * magnitude;
    const double g = 448.0 * 6.0 / (magnitude * 4) * std::exp2(exponents(random) / 6);
    const Nvfp4Row got = quantizeNvfp4(row, g);
    ASSERT_EQ(got.packed.size(), 32u);
    ASSERT_EQ(got.scales.size(), 4u);
    for (size_t block = 0; block < 4; ++block)
      expectBlock(row, g, got, block);
  }
}

TEST(Float4, AWorkedBlock) {
  // amax 12 with G 1: SF = E4M3(2) = 0x40, factor 0.5; the elements halved round to their codes.
  std::vector<double> row = {12, -12, 1, 0.5, 2.5, -3, 7, 0, 5, 10, 11, 0.4, 0.6, -1.5, 3.6, 9};
  const Nvfp4Row got = quantizeNvfp4(row, 1.0);
  ASSERT_EQ(got.scales, std::vector<uint8_t>{0x40});
  // Halved: 6 -6 | 0.5 0.25 | 1.25 -1.5 | 3.5 0 | 2.5 5 | 5.5 0.2 | 0.3 -0.75 | 1.8 4.5
  const std::vector<uint8_t> packed = {0xf7, 0x01, 0xb2, 0x06, 0x64, 0x07, 0xa1, 0x64};
  EXPECT_EQ(got.packed, packed);
}

TEST(Float4, AllZeroBlocksHaveScaleZeroAndZeroCodes) {
  std::vector<double> row(32, 0.0);
  row[17] = -0.0;
  const Nvfp4Row got = quantizeNvfp4(row, 2688.0);
  EXPECT_EQ(got.scales, (std::vector<uint8_t>{0, 0}));
  std::vector<uint8_t> packed(16, 0);
  packed[8] = 0x80; // -0 keeps its sign
  EXPECT_EQ(got.packed, packed);
}

TEST(Float4, NaNIsLeftOutOfTheScaleAndInfinitySaturatesIt) {
  std::vector<double> row(32, 1.0);
  row[3] = kNaN;
  row[16] = -kInf;
  const Nvfp4Row got = quantizeNvfp4(row, 6.0);
  // Block 0: amax 1, SF = E4M3(1) = 0x38, factor 6: 1 -> 6, NaN -> +6.
  EXPECT_EQ(got.scales[0], 0x38);
  EXPECT_EQ(got.packed[1], 0x77);
  // Block 1: amax inf, SF saturates to 448, factor 6 / 448: 1 -> 0.0134 -> 0, -inf -> -6.
  EXPECT_EQ(got.scales[1], 0x7e);
  EXPECT_EQ(got.packed[8], 0x0f);
  EXPECT_EQ(got.packed[9], 0x00);
  for (size_t block = 0; block < 2; ++block)
    expectBlock(row, 6.0, got, block);
}

TEST(Float4, AScaleThatSaturatesSaturatesItsElements) {
  // G * amax / 6 = 1000 > 448: SF = 448, and amax * G / 448 = 13.4 saturates to 6.
  std::vector<double> row(16, 0.1);
  row[0] = 1.0;
  const Nvfp4Row got = quantizeNvfp4(row, 6000.0);
  EXPECT_EQ(got.scales[0], 0x7e);
  EXPECT_EQ(got.packed[0] & 0xf, 0x7);
  expectBlock(row, 6000.0, got, 0);
}

TEST(Float4, APartialLastBlockIsTheRowPaddedWithZeros) {
  std::mt19937_64 random(5);
  std::normal_distribution<double> values(0.0, 3.0);
  for (size_t length : {1, 2, 15, 17, 20, 33, 47}) {
    std::vector<double> row(length);
    for (double& x : row)
      x = values(random);
    std::vector<double> padded = row;
    padded.resize((length + 15) / 16 * 16, 0.0);
    const Nvfp4Row got = quantizeNvfp4(row, 100.0), whole = quantizeNvfp4(padded, 100.0);
    ASSERT_EQ(got.scales, whole.scales) << length;
    ASSERT_EQ(got.packed.size(), (length + 1) / 2);
    for (size_t i = 0; i < got.packed.size(); ++i)
      EXPECT_EQ(got.packed[i], whole.packed[i]) << length << " byte " << i;
    if (length % 2) {
      EXPECT_EQ(got.packed.back() >> 4, 0) << "an odd row's last high nibble";
    }
  }
  EXPECT_TRUE(quantizeNvfp4({}, 1.0).packed.empty());
}

TEST(Float4, TheReferenceAgreesWithItself) {
  std::mt19937_64 random(6);
  std::normal_distribution<double> values(0.0, 2.0);
  std::vector<double> row(40);
  for (double& x : row)
    x = values(random);
  const Nvfp4Row reference = quantizeNvfp4(row, 300.0);
  Nvfp4Agreement agreement;
  compareNvfp4Row(row, 300.0, reference.packed.data(), reference.scales.data(), 1e-7, "row 0",
                  agreement);
  EXPECT_EQ(agreement.blocks, 3);
  EXPECT_EQ(agreement.blocks - agreement.blocksNearABoundary, 3) << "random values are not near";
  EXPECT_EQ(agreement.elements, 40);
  EXPECT_EQ(agreement.differences, 0);
  EXPECT_EQ(agreement.firstDifference, "");
}

TEST(Float4, AWrongElementOrScaleIsADifference) {
  // amax 6, G 1: SF = E4M3(1) = 0x38, factor 1; the elements are their own codes' values.
  std::vector<double> row = {6, 1, 0.5, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4};
  Nvfp4Row kernel = quantizeNvfp4(row, 1.0);
  kernel.packed[1] ^= 0x10; // element 3: 3 (code 5) becomes 2 (code 4)
  Nvfp4Agreement agreement;
  compareNvfp4Row(row, 1.0, kernel.packed.data(), kernel.scales.data(), 1e-7, "row 7", agreement);
  EXPECT_EQ(agreement.differences, 1);
  EXPECT_EQ(agreement.firstDifference, "row 7: element 3 (3) is 0x4, the reference 0x5");
  kernel = quantizeNvfp4(row, 1.0);
  kernel.scales[0] = 0x39;
  compareNvfp4Row(row, 1.0, kernel.packed.data(), kernel.scales.data(), 1e-7, "row 8", agreement);
  EXPECT_EQ(agreement.differences, 2);
  EXPECT_EQ(agreement.blocks, 2);
  EXPECT_EQ(agreement.elements, 16) << "a block with a wrong scale has no element compared";
}

TEST(Float4, ValuesWithinTheErrorOfABoundaryAreCountedNotCompared) {
  // G * amax / 6 = 1.0625, the midpoint of the E4M3 values 1 and 1.125: either scale may come out.
  std::vector<double> row(16, 0.0);
  row[0] = 6;
  Nvfp4Row kernel = quantizeNvfp4(row, 1.0625);
  kernel.scales[0] = 0x39;
  kernel.packed[0] = 0x6;
  Nvfp4Agreement agreement;
  compareNvfp4Row(row, 1.0625, kernel.packed.data(), kernel.scales.data(), 1e-7, "", agreement);
  EXPECT_EQ(agreement.blocksNearABoundary, 1);
  EXPECT_EQ(agreement.differences, 0);
  // amax 6, G 1: factor 1; 2.5 is the midpoint of 2 and 3: either code may come out. 2.6 is not.
  row = {6, 2.5, 2.6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  kernel = quantizeNvfp4(row, 1.0);
  kernel.packed[0] = uint8_t((kernel.packed[0] & 0x0f) | 0x50); // 2.5 as 3 instead of 2
  compareNvfp4Row(row, 1.0, kernel.packed.data(), kernel.scales.data(), 1e-7, "", agreement);
  EXPECT_EQ(agreement.elementsNearABoundary, 1);
  EXPECT_EQ(agreement.differences, 0);
  kernel.packed[1] = uint8_t(kernel.packed[1] ^ 0x1); // 2.6 as 2 instead of 3
  compareNvfp4Row(row, 1.0, kernel.packed.data(), kernel.scales.data(), 1e-7, "", agreement);
  EXPECT_EQ(agreement.differences, 1);
}

/// The 128x4 layout built tile by tile: tiles in row-major order, and within a tile 32 lines of
/// 16 bytes, line l holding rows l, l + 32, l + 64, l + 96, 4 blocks each.
std::vector<std::pair<uint64_t, uint64_t>> enumerateSwizzled(uint64_t rows, uint64_t blocks) {
  std::vector<std::pair<uint64_t, uint64_t>> cells; // (row, block) at each offset
  for (uint64_t tileRow = 0; tileRow < (rows + 127) / 128; ++tileRow)
    for (uint64_t tileColumn = 0; tileColumn < (blocks + 3) / 4; ++tileColumn)
      for (uint64_t line = 0; line < 32; ++line)
        for (uint64_t group = 0; group < 4; ++group)
          for (uint64_t column = 0; column < 4; ++column)
            cells.push_back({tileRow * 128 + group * 32 + line, tileColumn * 4 + column});
  return cells;
}

TEST(Float4, SwizzledOffsetsAreTheEnumeratedLayout) {
  for (uint64_t rows : {1, 31, 32, 127, 128, 129, 300})
    for (uint64_t blocks : {1, 3, 4, 5, 8, 128, 130}) {
      const auto cells = enumerateSwizzled(rows, blocks);
      ASSERT_EQ(cells.size(), nvfp4SwizzledBytes(rows, blocks)) << rows << "x" << blocks;
      for (uint64_t offset = 0; offset < cells.size(); ++offset)
        ASSERT_EQ(nvfp4SwizzledOffset(cells[offset].first, cells[offset].second, blocks), offset)
            << rows << "x" << blocks << " row " << cells[offset].first << " block "
            << cells[offset].second;
    }
  EXPECT_EQ(nvfp4SwizzledBytes(1, 1), 512u);
  EXPECT_EQ(nvfp4SwizzledBytes(64, 4096 / 16), 128u * 256);
  EXPECT_EQ(nvfp4SwizzledBytes(129, 5120 / 16), 256u * 320);
}

} // namespace
} // namespace collc
