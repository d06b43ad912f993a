// Steps split by rows (RowEpilogue.h): a block owns a whole row at a time and reduces over it,
// for rmsnorm. Needs kThreads, a multiple of 32.

// The sum of x over the threads of the block, returned to every thread, in float. Warps reduce
// with shuffles, then warp 0 reduces the warps' sums. Every thread of the block must call it
// (it synchronizes the block), and may call it again right away: the last barrier keeps the next
// call from overwriting the shared sums before every thread has read this one's.
__device__ __forceinline__ float block_sum(float x) {
  __shared__ float warp_sums[kThreads / 32];
  __shared__ float total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  if (lane == 0)
    warp_sums[warp] = x;
  __syncthreads();
  if (warp == 0) {
    float y = lane < kThreads / 32 ? warp_sums[lane] : 0.0f;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      y += __shfl_xor_sync(0xffffffffu, y, offset);
    if (lane == 0)
      total = y;
  }
  __syncthreads();
  const float result = total;
  __syncthreads();
  return result;
}
