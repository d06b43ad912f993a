// FP8 E4M3 with a dynamic per-row (per-token) scale, the arithmetic of one row (fp8_e4m3.cuh,
// pasted before it, converts): the row's scale is its largest magnitude over 448, correctly
// rounded, and at least kFp8MinTokenScale; each element is stored as e4m3(x / scale), the
// quotient correctly rounded, then rounded to nearest even and saturating at ±448.
//
// Rows without numbers: amax passes NaN over (fmaxf keeps the other operand), so it is the largest
// magnitude of the row's numbers whatever order the threads fold them in, and 0 for a row of zeros
// or NaNs, whose scale is then the floor (no division by zero; a zero stays zero). A row with an
// infinity has an infinite scale: its finite elements become ±0 and its infinities NaN (inf/inf),
// as the arithmetic gives them; a NaN element stays NaN. compiler/interpret/Float8.h is the
// float64 reference of the same.

// The smallest scale: 1 / (448 * 512) as a float (vLLM's minimum scaling factor).
constexpr float kFp8MinTokenScale = 1.0f / (448.0f * 512.0f);

// amax folded with |x|.
__device__ __forceinline__ float fp8_token_amax_with(float amax, float x) {
  return fmaxf(amax, fabsf(x));
}

// The row's scale from its amax (of every element of the row).
__device__ __forceinline__ float fp8_token_scale(float amax) {
  return fmaxf(__fdiv_rn(amax, 448.0f), kFp8MinTokenScale);
}

// Two elements of a row of scale `scale` as two E4M3 bytes, lo in the low byte.
__device__ __forceinline__ unsigned short fp8_token_pair(float lo, float hi, float scale) {
  return fp8_e4m3_pair(__fdiv_rn(lo, scale), __fdiv_rn(hi, scale));
}
