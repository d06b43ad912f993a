// Calls every helper of rows_rmsnorm.cuh: one vector of the row per thread.
extern "C" __global__ void collc_test_rows_rmsnorm(const __grid_constant__ collc_params params) {
  const Bits* in = static_cast<const Bits*>(params.in);
  const u64 i = u64(threadIdx.x) * kVec;
  const Vec y = load_plain(in, i, kHidden);
  float sum_sq = 0.0f;
  rmsnorm_add_squares(sum_sq, y);
  const float scale = rmsnorm_scale(sum_sq);
  Vec normed;
  rmsnorm_apply(normed, y, y, scale);
  store_plain(static_cast<Bits*>(params.out), i, kHidden, normed);
}
