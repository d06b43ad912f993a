// Calls every helper of rows_nvfp4.cuh from a row loop as the code generator prints it: one row
// per block, scales linear for even rows and swizzled for odd ones.
extern "C" __global__ void collc_test_rows_nvfp4(const __grid_constant__ collc_params params) {
  const float* in = static_cast<const float*>(params.in);
  unsigned char* packed = static_cast<unsigned char*>(params.out);
  unsigned char* scales = static_cast<unsigned char*>(params.aux[0]);
  const float global_scale = *static_cast<const float*>(params.aux[1]);
  const u64 row = blockIdx.x, row_begin = row * kHidden, row_end = row_begin + kHidden;
  for (u64 i = row_begin + threadIdx.x * kVec; i < row_end; i += kThreads * kVec) {
    float x[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      x[e] = in[i + e];
    if (row % 2 == 0)
      nvfp4_store_vector<false>(packed + row_begin / 2, scales, row, i - row_begin, x,
                                global_scale);
    else
      nvfp4_store_vector<true>(packed + row_begin / 2, scales, row, i - row_begin, x, global_scale);
  }
}
