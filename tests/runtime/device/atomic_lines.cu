// Calls every helper of atomic_lines.cuh, as a loop over whole lines does.
extern "C" __global__ void collc_test_atomic_lines(const __grid_constant__ collc_params params) {
  const u64 epoch = load_epoch(params.epochs + blockIdx.x) + 1;
  const int owner = (params.rank + 1) % kRanks;
  Bits* acc = reinterpret_cast<Bits*>(params.heap[owner]);
  Bits* side = reinterpret_cast<Bits*>(params.heap[owner] + params.scratch_offset[1]);
  const Bits* in = static_cast<const Bits*>(params.in);
  const u64 len = params.count;
  for (u64 i = threadIdx.x * kVec; i < round_lines(len); i += kThreads * kVec)
    atomic_lines_add(acc, side, i, len, load_plain(in, i, len));
  for (u64 i = threadIdx.x * kVec; i < round_lines(len); i += kThreads * kVec)
    store_plain(static_cast<Bits*>(params.out), i, len,
                atomic_lines_take(params, acc, side, i, len, PollSite{0, -1, -1, 0, 0}, epoch));
}
