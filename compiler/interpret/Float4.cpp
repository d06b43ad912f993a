#include "compiler/interpret/Float4.h"

#include "compiler/interpret/Float8.h"

#include <algorithm>
#include <cmath>

namespace collc {
namespace {

constexpr uint8_t kMaxCode = 0x7;
constexpr uint8_t kSignBit = 0x8;

/// v rounded to an integer, ties to even, whatever the caller's rounding mode.
double roundHalfEven(double v) {
  const double down = std::floor(v);
  const double fraction = v - down;
  if (fraction > 0.5)
    return down + 1;
  if (fraction < 0.5)
    return down;
  return std::fmod(down, 2.0) == 0 ? down : down + 1;
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

bool nearE2M1Boundary(double x, double relativeError) {
  static constexpr double kBoundaries[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  const double a = std::fabs(x);
  for (double boundary : kBoundaries)
    if (std::fabs(a - boundary) <= relativeError * a)
      return true;
  return false;
}

Nvfp4Row quantizeNvfp4(const std::vector<double>& row, double globalScale) {
  Nvfp4Row result;
  result.packed.assign((row.size() + 1) / 2, 0);
  for (size_t begin = 0; begin < row.size(); begin += kNvfp4BlockSize) {
    const size_t end = std::min(row.size(), begin + kNvfp4BlockSize);
    double amax = 0;
    for (size_t i = begin; i < end; ++i)
      if (!std::isnan(row[i]))
        amax = std::max(amax, std::fabs(row[i]));
    const uint8_t scaleBits = toE4M3(globalScale * amax / kE2M1Max);
    const double scale = fromE4M3(scaleBits);
    const double factor = scale != 0 ? globalScale / scale : 0;
    for (size_t i = begin; i < end; ++i)
      result.packed[i / 2] |= uint8_t(toE2M1(row[i] * factor) << (i % 2 * 4));
    result.scales.push_back(scaleBits);
  }
  return result;
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
