// Calls every helper of rows.cuh.
extern "C" __global__ void collc_test_rows(const __grid_constant__ collc_params params) {
  const Bits* in = static_cast<const Bits*>(params.in);
  const float sum = block_sum(to_float(in[threadIdx.x]));
  static_cast<Bits*>(params.out)[threadIdx.x] = from_float(block_sum(sum * sum));
}
