// The arithmetic of `out = rmsnorm(y, weight)` over the row a block owns (rows.cuh, whose
// block_sum it uses, is pasted before it): the sum of squares in float, reduced over the block,
// then each element scaled in float and rounded once. Needs kHidden and kEps. The code generator
// prints the loops over the row, whose loads and stores depend on where the row and the target
// lie, and calls these for each vector.
//
// Each helper writes through a reference rather than returning a Vec: so NVRTC emits the same
// instructions as for the loops written out in the kernel (a Vec returned by value does not).

// sum_sq += the squares of y's kVec elements, in float.
__device__ __forceinline__ void rmsnorm_add_squares(float& sum_sq, const Vec& y) {
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    const float x = to_float(y.bits[e]);
    sum_sq += x * x;
  }
}

// The factor of the row whose threads' sums of squares are sum_sq: 1 / sqrt(mean + eps). Every
// thread of the block calls it (block_sum synchronizes the block).
__device__ __forceinline__ float rmsnorm_scale(float sum_sq) {
  return rsqrtf(block_sum(sum_sq) / float(kHidden) + kEps);
}

// normed = y * scale * w, element by element, in float, rounded once.
__device__ __forceinline__ void rmsnorm_apply(Vec& normed, const Vec& y, const Vec& w,
                                              float scale) {
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    normed.bits[e] = from_float(to_float(y.bits[e]) * scale * to_float(w.bits[e]));
}
