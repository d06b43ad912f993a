// Reduction: operands are combined in float, in the order given, and rounded once.

struct Acc {
  float v[kVec];
};
__device__ __forceinline__ Acc to_acc(const Vec& v) {
  Acc a;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    a.v[e] = to_float(v.bits[e]);
  return a;
}
__device__ __forceinline__ void accumulate(Acc& a, const Vec& v) {
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    a.v[e] = combine(a.v[e], to_float(v.bits[e]));
}
__device__ __forceinline__ Vec from_acc(const Acc& a) {
  Vec v;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    v.bits[e] = from_float(a.v[e]);
  return v;
}
