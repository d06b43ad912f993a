// Calls every helper of fp8_per_token.cuh and rows_fp8_per_token.cuh from a row loop as the code
// generator prints it: one row per block, its E4M3 bytes in the output and its scale in the first
// aux buffer.
extern "C" __global__ void
collc_test_rows_fp8_per_token(const __grid_constant__ collc_params params) {
  const Bits* in = static_cast<const Bits*>(params.in);
  unsigned char* out = static_cast<unsigned char*>(params.out);
  float* token_scale = static_cast<float*>(params.aux[0]);
  const u64 row = blockIdx.x, row_begin = row * kHidden, row_end = row_begin + kHidden;
  float amax = 0.0f;
  for (u64 i = row_begin + threadIdx.x * kVec; i < row_end; i += kThreads * kVec) {
    const Vec y = load_plain(in, i, row_end);
    float x[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      x[e] = to_float(y.bits[e]);
    fp8_token_amax_add(amax, x);
  }
  const float scale = fp8_token_scale(block_amax(amax));
  if (threadIdx.x == 0)
    token_scale[row] = scale;
  for (u64 i = row_begin + threadIdx.x * kVec; i < row_end; i += kThreads * kVec) {
    const Vec y = load_plain(in, i, row_end);
    float x[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      x[e] = to_float(y.bits[e]);
    fp8_token_store(out, i, x, scale);
  }
}
