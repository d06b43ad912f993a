// Calls every helper of the files every kernel includes (types, element, combine, memory, chunks,
// vectors, reduce, watchdog, line_group, kernel_head), so that NVRTC and ptxas compile each one.
extern "C" __global__ void collc_test_common(const __grid_constant__ collc_params params) {
  const u64 epoch = load_epoch(params.epochs + blockIdx.x) + 1;
  if (params.rank == 0)
    call_head<true>(params, epoch);
  else
    call_head<false>(params, epoch);
  u64* words = reinterpret_cast<u64*>(params.aux[0]);
  store_u64<Order::Relaxed, Scope::Sys>(words, load_u64<Order::Relaxed, Scope::Sys>(words + 1));
  store_u64<Order::Release, Scope::Gpu>(words + 2, load_u64<Order::Acquire, Scope::Gpu>(words + 3));
  store_u64<Order::Release, Scope::Sys>(words + 4, load_u64<Order::Acquire, Scope::Sys>(words + 5));

  const Bits* in = static_cast<const Bits*>(params.in);
  Bits* out = static_cast<Bits*>(params.out);
  const u64 len = min_u64(params.count, chunk_len(params.count, params.rank));
  const u64 i = chunk_begin(params.count, params.rank) + threadIdx.x * kVec;
  const Vec v = load_plain(in, i, len);
  Acc acc = to_acc(v);
  accumulate(acc, load_plain(in, i + kVec, len));
  store_plain(out, i, len, from_acc(acc));
  atomic_add_plain(out, i + 2 * kVec, len, v);

  uint4 w4;
  uint2 w2;
  unsigned w1;
  unsigned short w0;
  load_volatile(w4, in);
  load_volatile(w2, in + 8);
  load_volatile(w1, in + 16);
  load_volatile(w0, in + 24);
  w4.x += w2.x + w1 + w0 + line_lane();
  __syncwarp(line_group_mask());
  store_volatile(out + 32, w4);

  u64 start = 0;
  const PollSite site{0, -1, -1, 0, 0};
  if (poll_expired(params, start, site, 0, epoch, 1, global_timer_ns()))
    out[0] = from_float(combine(to_float(out[1]), 1.0f));
  static_assert(sizeof(T) == sizeof(Bits), "T and Bits are one element");
}
