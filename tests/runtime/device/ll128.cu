// Calls every helper of ll128.cuh, as a loop over whole lines does.
extern "C" __global__ void collc_test_ll128(const __grid_constant__ collc_params params) {
  const u64 epoch = load_epoch(params.epochs + blockIdx.x) + 1;
  uint4* lines = reinterpret_cast<uint4*>(params.heap[params.rank]);
  const u64 len = params.count;
  for (u64 line = threadIdx.x / 8; line < ll128_lines(len); line += kThreads / 8) {
    const u64 i = line * kLL128LineElems + line_lane() * kVec;
    const u64 lane_end = i + (line_lane() == kFlagLane ? kVec / 2 : kVec);
    const Vec v = ll128_load(params, lines, i, min_u64(len, lane_end), epoch,
                             PollSite{0, -1, -1, 0, 0}, epoch);
    ll128_store(lines + ll128_lines(len) * 8, i, min_u64(len, lane_end), v, epoch);
  }
}
