// FP8 E4M3 (the OCP format that torch.float8_e4m3fn and cuda_fp8.h's __NV_E4M3 use: 1 sign bit,
// 4 exponent bits with bias 7, 3 mantissa bits, no infinities, S.1111.111 is NaN) for the float64
// reference: rounding a double the way the GPU's saturating conversion rounds a float
// (cvt.rn.satfinite.e4m3x2.f32): to nearest, ties to even; a magnitude past the largest finite
// value, 448, and an infinity become ±448; NaN stays NaN.
#ifndef COLLC_COMPILER_INTERPRET_FLOAT8_H
#define COLLC_COMPILER_INTERPRET_FLOAT8_H

#include <cstdint>

namespace collc {

/// The largest finite E4M3 magnitude.
inline constexpr double kE4M3Max = 448.0;

/// x rounded to E4M3, as its bits.
uint8_t toE4M3(double x);

/// The value of E4M3 `bits` (NaN for S.1111.111).
double fromE4M3(uint8_t bits);

/// Per-token (per-row) FP8: a row's scale is the largest magnitude of its numbers over 448, at
/// least this floor, 1 / (448 * 512) as a float (vLLM's minimum scaling factor), so that a row of
/// zeros (or of NaNs) divides by no zero; its elements are then toE4M3(x / scale). A row with an
/// infinity has an infinite scale (its finite elements become ±0, its infinities NaN), and a NaN
/// element stays NaN. compiler/device/fp8_per_token.cuh computes the same in float.
inline constexpr double kE4M3MinTokenScale = double(1.0f / (448.0f * 512.0f));

/// The largest magnitude of the row's `h` values, NaN passed over; 0 for a row without numbers.
double amaxOfNumbers(const double* row, int64_t h);

/// The scale of a row whose amaxOfNumbers is `amax`: max(amax / 448, kE4M3MinTokenScale).
double tokenScaleE4M3(double amax);

/// v rounded to an integer, ties to even, whatever the caller's rounding mode (E4M3's and E2M1's
/// references round with it).
double roundHalfEven(double v);

} // namespace collc

#endif // COLLC_COMPILER_INTERPRET_FLOAT8_H
