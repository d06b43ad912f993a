// NVFP4 (the block-scaled 4-bit format of the block-scaled GEMMs) for the float64 reference.
//
// Elements are E2M1: 1 sign bit, 2 exponent bits with bias 1, 1 mantissa bit, magnitudes 0, 0.5,
// 1, 1.5, 2, 3, 4, 6 as codes 0..7, the sign in bit 3; no infinity, no NaN. A double rounds to
// E2M1 as the GPU's saturating conversion rounds a float (cvt.rn.satfinite.e2m1x2.f32): to
// nearest, ties to the even code; past 6 and infinities to ±6; NaN to +6; a zero keeps its sign.
//
// A row of length L is quantized in blocks of 16 consecutive elements (the last block holds the
// L % 16 elements left, if any: as if the row were padded with zeros, which change neither amax nor
// any other element), with a caller's per-tensor global scale G:
//   amax  = the largest |x| of the block's elements that are not NaN (0 if none);
//   SF    = E4M3(G * amax / 6)                    (compiler/interpret/Float8.h, saturating);
//   q[i]  = E2M1(x[i] * factor), factor = G / SF, or 0 where SF is 0;
// so that x[i] ≈ q[i] * SF / G. The kernel computes the same in float, in an order fixed by
// compiler/device/quant_nvfp4.cuh; the two differ only where a float64 value lies within the float
// computation's error of a rounding boundary (compareNvfp4Row).
//
// The packed row holds element 2i in the low nibble of byte i and element 2i+1 in its high nibble
// (an odd row's last high nibble is 0). The block scales of a matrix of rows are laid out either
// linearly (row r's block b at r * blocksPerRow + b) or in the 128x4-swizzled layout the GEMMs
// read (nvfp4SwizzledOffset).
#ifndef COLLC_COMPILER_INTERPRET_FLOAT4_H
#define COLLC_COMPILER_INTERPRET_FLOAT4_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace collc {

/// The largest finite E2M1 magnitude.
inline constexpr double kE2M1Max = 6.0;
/// The elements that share one E4M3 scale.
inline constexpr int kNvfp4BlockSize = 16;

/// x rounded to E2M1, as its 4-bit code.
uint8_t toE2M1(double x);

/// The value of the E2M1 code in the low 4 bits of `code`.
double fromE2M1(uint8_t code);

/// One row quantized: `packed` holds (length + 1) / 2 bytes, `scales` one E4M3 per block
/// ((length + 15) / 16).
struct Nvfp4Row {
  std::vector<uint8_t> packed;
  std::vector<uint8_t> scales;
};

/// `row` quantized with the global scale `globalScale`, as described above.
Nvfp4Row quantizeNvfp4(const std::vector<double>& row, double globalScale);

/// How rows quantized by a kernel compare with the reference. A block whose float64 scale argument
/// G * amax / 6 lies within the kernel's error of an E4M3 rounding boundary may get either scale,
/// and its elements follow: it is counted, not compared. Of the other blocks, the scale must be
/// the reference's, and each element must be too unless its float64 argument x * G / SF lies within
/// the error of an E2M1 rounding boundary (counted, not compared).
struct Nvfp4Agreement {
  int64_t blocks = 0;
  int64_t blocksNearABoundary = 0;
  int64_t elements = 0; // of the blocks compared
  int64_t elementsNearABoundary = 0;
  int64_t differences = 0; // scales and elements that differ where they must not
  std::string firstDifference;
};

/// Adds one row to `agreement`: the kernel's `packed` ((length + 1) / 2 bytes) and `scales`
/// ((length + 15) / 16) against quantizeNvfp4(row, globalScale), where the kernel computes each
/// scale's and element's argument within `relativeError` of its float64 value. `where` names the
/// row in firstDifference.
void compareNvfp4Row(const std::vector<double>& row, double globalScale, const uint8_t* packed,
                     const uint8_t* scales, double relativeError, const std::string& where,
                     Nvfp4Agreement& agreement);

/// The bytes of the 128x4-swizzled block-scale matrix of `rows` rows of `blocksPerRow` blocks:
/// rows padded to a multiple of 128, blocks per row to a multiple of 4.
uint64_t nvfp4SwizzledBytes(uint64_t rows, uint64_t blocksPerRow);

/// The offset of row `row`'s block `block` in that matrix: tiles of 128 rows x 4 blocks (512
/// bytes each) in row-major order of tiles, and within a tile row r's block c at
/// (r % 32) * 16 + (r / 32) * 4 + c.
uint64_t nvfp4SwizzledOffset(uint64_t row, uint64_t block, uint64_t blocksPerRow);

} // namespace collc

#endif // COLLC_COMPILER_INTERPRET_FLOAT4_H
