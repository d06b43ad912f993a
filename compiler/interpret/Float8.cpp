#include "compiler/interpret/Float8.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace collc {

// v rounded to an integer, ties to even, whatever the caller's rounding mode.
double roundHalfEven(double v) {
  const double down = std::floor(v);
  const double fraction = v - down;
  if (fraction > 0.5)
    return down + 1;
  if (fraction < 0.5)
    return down;
  return std::fmod(down, 2.0) == 0 ? down : down + 1;
}

namespace {

constexpr uint8_t kNaNBits = 0x7f;
constexpr uint8_t kMaxBits = 0x7e; // 1.75 * 2^8 = 448
constexpr int kMinNormalExp = -6;  // exponent field 1
constexpr int kMantissaBits = 3;

} // namespace

uint8_t toE4M3(double x) {
  if (std::isnan(x))
    return kNaNBits;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(x);
  if (a >= kE4M3Max)
    return sign | kMaxBits;
  // Below 2^-6 the values are subnormal, multiples of 2^-9; 8 of them carry into the smallest
  // normal value, whose bits follow on (0x08).
  if (a < std::ldexp(1.0, kMinNormalExp))
    return sign | uint8_t(roundHalfEven(std::ldexp(a, -kMinNormalExp + kMantissaBits)));
  int exp = 0;
  const double fraction = std::frexp(a, &exp); // a = fraction * 2^exp, fraction in [0.5, 1)
  --exp;                                       // a = (2 * fraction) * 2^exp, in [1, 2)
  double mantissa = roundHalfEven((2 * fraction - 1) * (1 << kMantissaBits));
  if (mantissa == (1 << kMantissaBits)) { // rounded up to the next power of two
    mantissa = 0;
    ++exp;
  }
  // a < 448 rounds to at most 448 (exponent 8, mantissa 6): never to the NaN pattern.
  return sign | uint8_t((exp + 7) << kMantissaBits) | uint8_t(mantissa);
}

double fromE4M3(uint8_t bits) {
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  const int field = (bits >> kMantissaBits) & 0xf;
  const int mantissa = bits & 0x7;
  if (field == 0xf && mantissa == 0x7)
    return std::numeric_limits<double>::quiet_NaN();
  if (field == 0)
    return sign * std::ldexp(double(mantissa), kMinNormalExp - kMantissaBits);
  return sign * std::ldexp(1.0 + mantissa / 8.0, field - 7);
}

double amaxOfNumbers(const double* row, int64_t h) {
  double amax = 0;
  for (int64_t k = 0; k < h; ++k)
    if (std::fabs(row[k]) > amax) // false for NaN
      amax = std::fabs(row[k]);
  return amax;
}

double tokenScaleE4M3(double amax) {
  return std::max(amax / kE4M3Max, kE4M3MinTokenScale);
}

} // namespace collc
