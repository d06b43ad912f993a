// Calls every helper of sentinel.cuh.
extern "C" __global__ void collc_test_sentinel(const __grid_constant__ collc_params params) {
  const u64 epoch = load_epoch(params.epochs + blockIdx.x) + 1;
  Bits* slot = reinterpret_cast<Bits*>(params.heap[params.rank]);
  const u64 i = threadIdx.x * kVec, len = params.count;
  const Vec v = sentinel_load(params, slot, i, len, PollSite{0, -1, 0, 0, 0}, epoch);
  sentinel_store(reinterpret_cast<Bits*>(params.heap[(params.rank + 1) % kRanks]), i, len, v);
}
