// The reduction operator, applied in float. NaN propagates, as IEEE maximum does (fmaxf would
// drop it).
__device__ __forceinline__ float combine(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fffffff) : fmaxf(a, b);
}
