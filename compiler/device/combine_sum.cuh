// The reduction operator, applied in float.
__device__ __forceinline__ float combine(float a, float b) {
  return a + b;
}
