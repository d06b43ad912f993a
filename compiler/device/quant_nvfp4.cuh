// NVFP4 quantization in float, the convention of compiler/interpret/Float4.h (its float64
// reference) computed as the kernel computes it:
//   - a block is 16 consecutive elements of a row; amax = the largest |x| of its elements that are
//     not NaN (0 if none);
//   - its scale SF = e4m3(global_scale * (amax * (1/6)))   (fp32 products, 1/6 rounded to fp32;
//     e4m3 rounded to nearest even, saturating at 448, NaN stays NaN);
//   - factor = SF == 0 ? 0 : global_scale / float(SF)       (fp32 division, rounded once);
//   - each element q = e2m1(x * factor)                      (fp32 product; e2m1 rounded to nearest
//     even, saturating at 6, NaN becomes +6, a zero keeps its sign);
//   - element 2i of a row is the low nibble of the row's byte i, element 2i+1 its high nibble.
// Every function here is __host__ __device__ and uses nothing but integer and fp32 arithmetic
// rounded to nearest (the __f*_rn intrinsics on the device, so no flag can contract or approximate
// them): the host tests compile these very functions and compare them with the float64 reference.
// The e2m1 conversion has a hardware instruction on the sm_100, sm_110 and sm_120 families only
// when compiled for the family (sm_100a, sm_100f, ...), the e4m3 one from sm_89 on; elsewhere
// integer conversions run (below, and fp8_e4m3.cuh's), which give the same bits.

__host__ __device__ __forceinline__ unsigned nvfp4_float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  unsigned bits;
  __builtin_memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

__host__ __device__ __forceinline__ float nvfp4_bits_float(unsigned bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float x;
  __builtin_memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

__host__ __device__ __forceinline__ float nvfp4_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

__host__ __device__ __forceinline__ float nvfp4_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// The e2m1 code (sign in bit 3; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 as 0..7) of x, by counting
// the rounding boundaries below |x|: a tie goes to the even code (0.25 to 0, 0.75 to 1, 1.25 to 1,
// 1.75 to 2, 2.5 to 2, 3.5 to 4, 5 to 4), past 6 and infinities saturate, NaN is +6. The
// comparisons are of float bits, which order non-negative floats as their values.
__host__ __device__ __forceinline__ unsigned nvfp4_e2m1_soft(float x) {
  const unsigned bits = nvfp4_float_bits(x);
  const unsigned magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return 0x7u;
  const unsigned sign = (bits >> 28) & 0x8u;
  const unsigned code = unsigned(magnitude > 0x3e800000u)    // 0.25
                        + unsigned(magnitude >= 0x3f400000u) // 0.75
                        + unsigned(magnitude > 0x3fa00000u)  // 1.25
                        + unsigned(magnitude >= 0x3fe00000u) // 1.75
                        + unsigned(magnitude > 0x40200000u)  // 2.5
                        + unsigned(magnitude >= 0x40600000u) // 3.5
                        + unsigned(magnitude > 0x40a00000u); // 5
  return sign | code;
}

// The byte holding lo's code in its low nibble and hi's in its high nibble.
__host__ __device__ __forceinline__ unsigned nvfp4_e2m1x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FAMILY_SPECIFIC__) &&                            \
    __CUDA_ARCH_FAMILY_SPECIFIC__ >= 1000 && __CUDA_ARCH_FAMILY_SPECIFIC__ < 1300
  unsigned short pair;
  asm("{ .reg .b8 byte;\n"
      "  cvt.rn.satfinite.e2m1x2.f32 byte, %2, %1;\n"
      "  mov.b16 %0, {byte, 0}; }"
      : "=h"(pair)
      : "f"(lo), "f"(hi));
  return pair;
#else
  return nvfp4_e2m1_soft(lo) | (nvfp4_e2m1_soft(hi) << 4);
#endif
}

// x rounded to e4m3 as its bits: fp8_e4m3.cuh's conversion (which must come before this file), to
// nearest even, |x| >= 448 and infinities to ±448, NaN to 0x7f.
__host__ __device__ __forceinline__ unsigned nvfp4_e4m3(float x) {
  return fp8_e4m3_pair(x, 0.0f) & 0xffu;
}

// The value of e4m3 bits, exactly.
__host__ __device__ __forceinline__ float nvfp4_e4m3_value(unsigned bits) {
  const unsigned sign = (bits & 0x80u) << 24;
  const unsigned field = (bits >> 3) & 0xfu, mantissa = bits & 0x7u;
  if (field == 0xfu && mantissa == 0x7u)
    return nvfp4_bits_float(0x7fffffffu);
  if (field == 0)
    return nvfp4_bits_float(sign | nvfp4_float_bits(float(mantissa) * 0.001953125f)); // 2^-9
  return nvfp4_bits_float(sign | ((field + 120u) << 23) | (mantissa << 20));
}

// amax_bits updated with x: the bits of the larger magnitude, a NaN ignored (so the block of a NaN
// still has the scale of its other elements). Bits keep the max exact and let threads combine
// their partial maxima as unsigned integers.
__host__ __device__ __forceinline__ unsigned nvfp4_amax_with(unsigned amax_bits, float x) {
  const unsigned magnitude = nvfp4_float_bits(x) & 0x7fffffffu;
  return magnitude <= 0x7f800000u && magnitude > amax_bits ? magnitude : amax_bits;
}

// The block's e4m3 scale from its amax.
__host__ __device__ __forceinline__ unsigned nvfp4_block_scale(unsigned amax_bits,
                                                               float global_scale) {
  const float one_sixth = 1.0f / 6.0f;
  return nvfp4_e4m3(nvfp4_mul(global_scale, nvfp4_mul(nvfp4_bits_float(amax_bits), one_sixth)));
}

// What the block's elements are multiplied by before their conversion.
__host__ __device__ __forceinline__ float nvfp4_block_factor(unsigned scale_bits,
                                                             float global_scale) {
  const float scale = nvfp4_e4m3_value(scale_bits);
  return scale != 0.0f ? nvfp4_div(global_scale, scale) : 0.0f;
}

// Elements 2i and 2i+1 of a block, as their byte.
__host__ __device__ __forceinline__ unsigned nvfp4_quantize_pair(float x0, float x1, float factor) {
  return nvfp4_e2m1x2(nvfp4_mul(x0, factor), nvfp4_mul(x1, factor));
}

// The byte offset of the scale of row `row`'s block `block` in the 128x4-swizzled layout the
// block-scaled GEMMs read: rows padded to a multiple of 128 and each row's blocks to a multiple of
// 4; tiles of 128 rows x 4 blocks (512 bytes) in row-major order of tiles; within a tile, row r's
// block c at (r % 32) * 16 + (r / 32) * 4 + c.
__host__ __device__ __forceinline__ unsigned long long
nvfp4_swizzled_offset(unsigned long long row, unsigned long long block,
                      unsigned long long blocks_per_row) {
  const unsigned long long column_tiles = (blocks_per_row + 3) / 4;
  return (row / 128 * column_tiles + block / 4) * 512 + (row % 32) * 16 + (row % 128 / 32) * 4 +
         block % 4;
}
