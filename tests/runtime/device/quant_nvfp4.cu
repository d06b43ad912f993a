// Calls every helper of quant_nvfp4.cuh: one 16-element block of floats per pair of threads,
// its scale at the swizzled offset and its bytes after one another.
extern "C" __global__ void collc_test_quant_nvfp4(const __grid_constant__ collc_params params) {
  const float* in = static_cast<const float*>(params.in);
  unsigned char* out = static_cast<unsigned char*>(params.out);
  unsigned char* scales = static_cast<unsigned char*>(params.aux[0]);
  const float global_scale = in[0];
  const float* x = in + 1 + threadIdx.x * 8;
  unsigned amax = 0;
  for (int e = 0; e < 8; ++e)
    amax = nvfp4_amax_with(amax, x[e]);
  amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  const unsigned scale = nvfp4_block_scale(amax, global_scale);
  const float factor = nvfp4_block_factor(scale, global_scale);
  if (threadIdx.x % 2 == 0)
    scales[nvfp4_swizzled_offset(blockIdx.x, threadIdx.x / 2, blockDim.x / 2)] =
        (unsigned char)scale;
  for (int e = 0; e < 8; e += 2)
    out[threadIdx.x * 4 + e / 2] = (unsigned char)nvfp4_quantize_pair(x[e], x[e + 1], factor);
  out[blockDim.x * 4 + threadIdx.x] =
      (unsigned char)(nvfp4_e2m1_soft(x[0]) | fp8_e4m3_soft(x[1]) | nvfp4_e4m3(x[2]));
}
