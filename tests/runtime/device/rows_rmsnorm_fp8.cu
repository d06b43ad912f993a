// Calls every helper of fp8_e4m3.cuh and rows_rmsnorm_fp8.cuh: one vector of the row per thread,
// quantized with the scale in the first aux buffer.
extern "C" __global__ void
collc_test_rows_rmsnorm_fp8(const __grid_constant__ collc_params params) {
  const Bits* in = static_cast<const Bits*>(params.in);
  const u64 i = u64(threadIdx.x) * kVec;
  const Vec y = load_plain(in, i, kHidden);
  float sum_sq = 0.0f;
  rmsnorm_add_squares(sum_sq, y);
  const float scale = rmsnorm_scale(sum_sq);
  const float qscale = static_cast<const float*>(params.aux[0])[0];
  rmsnorm_fp8_store(static_cast<unsigned char*>(params.out), i, y, y, scale, qscale);
}
