// Per-token FP8 over the row a block owns (rows.cuh and fp8_per_token.cuh are pasted before it):
// the block's amax of the row's float values, and the stores of their E4M3 bytes. Thread t of a
// block holds vectors t, t + kThreads, ... of the row, kVec elements each, as the code generator's
// row loops give them; the row length must be whole vectors, so a vector never straddles a row.

// The largest of x over the threads of the block (each x an amax: not negative, never NaN),
// returned to every thread. Every thread of the block must call it (it synchronizes the block),
// and may call it again right away, as block_sum.
__device__ __forceinline__ float block_amax(float x) {
  __shared__ float warp_amax[kThreads / 32];
  __shared__ float total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  if (lane == 0)
    warp_amax[warp] = x;
  __syncthreads();
  if (warp == 0) {
    float y = lane < kThreads / 32 ? warp_amax[lane] : 0.0f;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      y = fmaxf(y, __shfl_xor_sync(0xffffffffu, y, offset));
    if (lane == 0)
      total = y;
  }
  __syncthreads();
  const float result = total;
  __syncthreads();
  return result;
}

// amax folded with the kVec values of one vector.
__device__ __forceinline__ void fp8_token_amax_add(float& amax, const float (&x)[kVec]) {
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    amax = fp8_token_amax_with(amax, x[e]);
}

// The kVec E4M3 bytes of one vector at element i of `out`: one store of kVec bytes, aligned as i
// is a multiple of kVec.
__device__ __forceinline__ void fp8_token_store(unsigned char* out, u64 i, const float (&x)[kVec],
                                                float scale) {
  if (kVec == 1) {
    out[i] = (unsigned char)fp8_token_pair(x[0], 0.0f, scale);
    return;
  }
  unsigned long long packed = 0;
#pragma unroll
  for (int e = 0; e + 1 < kVec; e += 2)
    packed |= (unsigned long long)fp8_token_pair(x[e], x[e + 1], scale) << (8 * e);
  if (kVec == 2)
    *reinterpret_cast<unsigned short*>(out + i) = (unsigned short)packed;
  else if (kVec == 4)
    *reinterpret_cast<unsigned*>(out + i) = (unsigned)packed;
  else
    *reinterpret_cast<unsigned long long*>(out + i) = packed;
}
