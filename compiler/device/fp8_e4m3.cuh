// float to FP8 E4M3 (1 sign, 4 exponent bits with bias 7, 3 mantissa bits; S.1111.111 is NaN):
// rounded to nearest, ties to even, saturating: a magnitude of 448 or more, infinities included,
// becomes ±448, and NaN the NaN 0x7f. sm_89 and newer convert two floats with one instruction
// (cvt.rn.satfinite.e4m3x2.f32); before that the same rounding in integer arithmetic
// (fp8_e4m3_soft), which the host's unit test checks against compiler/interpret/Float8.cpp.
// __host__ __device__, so that the host tests compile these very functions (quant_nvfp4.cuh's block
// scales are this conversion too).

__host__ __device__ __forceinline__ unsigned fp8_float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  unsigned bits;
  __builtin_memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

// The software conversion, for every architecture (and the host's test).
__host__ __device__ __forceinline__ unsigned fp8_e4m3_soft(float x) {
  const unsigned u = fp8_float_bits(x);
  const unsigned sign = (u >> 24) & 0x80u;
  const unsigned a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return 0x7fu; // NaN
  if (a >= 0x43e00000u)
    return sign | 0x7eu; // 448 = 1.75 * 2^8 and beyond
  if (a < 0x3c800000u) {
    // Below 2^-6: multiples of 2^-9 (8 of them carry into the smallest normal value, 0x08).
    // a = M * 2^(E - 150) with M's implicit bit; in units of 2^-9 that is M >> (141 - E).
    const unsigned exponent = a >> 23;
    if (exponent == 0)
      return sign; // a float subnormal: far below half of 2^-9
    const unsigned mantissa = (a & 0x7fffffu) | 0x800000u;
    const unsigned shift = 141u - exponent; // 21 or more
    if (shift >= 32)
      return sign;
    unsigned q = mantissa >> shift;
    const unsigned rest = mantissa & ((1u << shift) - 1u);
    const unsigned half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (q & 1u)))
      ++q;
    return sign | q;
  }
  // A normal value: keep 3 of the 23 mantissa bits, rounding the 20 below to nearest even (a
  // carry moves into the exponent), then rebias the exponent from 127 to 7.
  const unsigned rounded = (a + 0x7ffffu + ((a >> 20) & 1u)) >> 20;
  return sign | (rounded - ((127u - 7u) << 3));
}

// Two floats as two E4M3 bytes, lo in the low byte.
__host__ __device__ __forceinline__ unsigned short fp8_e4m3_pair(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(hi), "f"(lo));
  return pair;
#else
  return (unsigned short)(fp8_e4m3_soft(lo) | (fp8_e4m3_soft(hi) << 8));
#endif
}
