// Calls every helper of ll.cuh, with packet buffers typed as LLPacket and as uint4.
extern "C" __global__ void collc_test_ll(const __grid_constant__ collc_params params) {
  const u64 epoch = load_epoch(params.epochs + blockIdx.x) + 1;
  if (epoch > COLLC_LAST_PACKET_EPOCH) {
    refuse_call_past_last(params, epoch);
    return;
  }
  const unsigned flag = unsigned(epoch);
  LLPacket* packets = reinterpret_cast<LLPacket*>(params.heap[params.rank]);
  uint4* words = reinterpret_cast<uint4*>(params.heap[(params.rank + 1) % kRanks]);
  const u64 i = threadIdx.x * kVec, len = params.count;
  const PollSite site{0, -1, 0, 0, 0};
  const Vec v = ll_load(params, packets, i, len, flag, site, flag);
  ll_store(packets + ll_packet(len), i, len, v, flag);
  ll_store(words, i, len, ll_load(params, words + ll_packet(len), i, len, flag, site, flag), flag);
}
