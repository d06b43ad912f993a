// Calls every helper of barrier.cuh.
extern "C" __global__ void collc_test_barrier(const __grid_constant__ collc_params params) {
  const u64 epoch = load_epoch(params.epochs + blockIdx.x) + 1;
  barrier<false>(params, epoch, 0, 0);
  barrier<true>(params, epoch, kSyncPoints - 1, 1);
}
