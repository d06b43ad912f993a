#include "compiler/interpret/Float4.h"

#include "compiler/interpret/Float8.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace collc {
namespace {

constexpr uint8_t kMaxCode = 0x7;
constexpr uint8_t kSignBit = 0x8;

/// Whether `round`, monotone, may round x either way when x is off by `relativeError` of itself.
template <typename Round> bool roundsEitherWay(double x, double relativeError, Round round) {
  return round(x * (1 - relativeError)) != round(x * (1 + relativeError));
}

double blockAmax(const std::vector<double>& row, size_t begin, size_t end) {
  double amax = 0;
  for (size_t i = begin; i < end; ++i)
    if (!std::isnan(row[i]))
      amax = std::max(amax, std::fabs(row[i]));
  return amax;
}

} // namespace

uint8_t toE2M1(double x) {
  if (std::isnan(x))
    return kMaxCode;
  const uint8_t sign = std::signbit(x) ? kSignBit : 0;
  const double a = std::fabs(x);
  if (a >= kE2M1Max)
    return sign | kMaxCode;
  // Below 1 the values are multiples of 0.5 (0 and the subnormal 0.5); 2 of them carry into 1.0,
  // the smallest normal value, whose code follows on (2).
  if (a < 1.0)
    return sign | uint8_t(roundHalfEven(a * 2));
  int exp = 0;
  const double fraction = std::frexp(a, &exp); // a = (2 * fraction) * 2^(exp - 1)
  --exp;                                       // 0, 1 or 2
  const double mantissa = roundHalfEven((2 * fraction - 1) * 2);
  // A mantissa rounded up to 2 is the next power of two: the code's order carries it. Below 6 the
  // largest code reached is 7.
  return sign | uint8_t(((exp + 1) << 1) + int(mantissa));
}

double fromE2M1(uint8_t code) {
  static constexpr double kMagnitudes[] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  const double magnitude = kMagnitudes[code & kMaxCode];
  return (code & kSignBit) ? -magnitude : magnitude;
}

Nvfp4Row quantizeNvfp4(const std::vector<double>& row, double globalScale) {
  Nvfp4Row result;
  result.packed.assign((row.size() + 1) / 2, 0);
  for (size_t begin = 0; begin < row.size(); begin += kNvfp4BlockSize) {
    const size_t end = std::min(row.size(), begin + kNvfp4BlockSize);
    const uint8_t scaleBits = toE4M3(globalScale * blockAmax(row, begin, end) / kE2M1Max);
    const double scale = fromE4M3(scaleBits);
    const double factor = scale != 0 ? globalScale / scale : 0;
    for (size_t i = begin; i < end; ++i)
      result.packed[i / 2] |= uint8_t(toE2M1(row[i] * factor) << (i % 2 * 4));
    result.scales.push_back(scaleBits);
  }
  return result;
}

void compareNvfp4Row(const std::vector<double>& row, double globalScale, const uint8_t* packed,
                     const uint8_t* scales, double relativeError, const std::string& where,
                     Nvfp4Agreement& agreement) {
  const Nvfp4Row reference = quantizeNvfp4(row, globalScale);
  auto differs = [&](const std::string& what, int got, int expected) {
    if (agreement.differences++ == 0)
      agreement.firstDifference =
          fmt::format("{}: {} is {:#x}, the reference {:#x}", where, what, got, expected);
  };
  for (size_t block = 0; block < reference.scales.size(); ++block) {
    const size_t begin = block * kNvfp4BlockSize;
    const size_t end = std::min(row.size(), begin + kNvfp4BlockSize);
    ++agreement.blocks;
    const double argument = globalScale * blockAmax(row, begin, end) / kE2M1Max;
    if (roundsEitherWay(argument, relativeError, toE4M3)) {
      ++agreement.blocksNearABoundary;
      continue;
    }
    if (scales[block] != reference.scales[block]) {
      differs(fmt::format("block {}'s scale", block), scales[block], reference.scales[block]);
      continue;
    }
    const double scale = fromE4M3(reference.scales[block]);
    const double factor = scale != 0 ? globalScale / scale : 0;
    for (size_t i = begin; i < end; ++i) {
      ++agreement.elements;
      if (roundsEitherWay(row[i] * factor, relativeError, toE2M1)) {
        ++agreement.elementsNearABoundary;
        continue;
      }
      const int got = (packed[i / 2] >> (i % 2 * 4)) & 0xf;
      const int expected = (reference.packed[i / 2] >> (i % 2 * 4)) & 0xf;
      if (got != expected)
        differs(fmt::format("element {} ({})", i, row[i]), got, expected);
    }
  }
}

uint64_t nvfp4SwizzledBytes(uint64_t rows, uint64_t blocksPerRow) {
  return (rows + 127) / 128 * 128 * ((blocksPerRow + 3) / 4 * 4);
}

uint64_t nvfp4SwizzledOffset(uint64_t row, uint64_t block, uint64_t blocksPerRow) {
  const uint64_t tileRow = row / 128, tileColumn = block / 4;
  const uint64_t tile = tileRow * ((blocksPerRow + 3) / 4) + tileColumn;
  const uint64_t rowInTile = row % 128, blockInTile = block % 4;
  return tile * 512 + rowInTile % 32 * 16 + rowInTile / 32 * 4 + blockInTile;
}

} // namespace collc
