// The ll128_atomic strategy's accumulation lines: a line group (line_group.cuh) owns one
// 128-byte line of the owner's accumulation buffer and adds its 16 bytes per thread with one
// vector atomic each. The first element of a line counts the adds: its value goes to the side
// buffer, the line's data is added with a 0 in its place, and only after a system fence that
// orders all of them is a 1 added to it, so the line is complete when that element reaches nranks.
// The owner then takes the line, restores the first element from the side buffer, and zeroes both
// for the call after next.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "ll128_atomic adds 16 bytes with one vector atomic (red.v4), which needs sm_90 or newer"
#endif
constexpr int kLineElems = 128 / sizeof(Bits);
static_assert(kVec * sizeof(Bits) == 16, "accumulation lines are added 16 bytes per thread");

__device__ __forceinline__ void red_add_vec(Bits* p, const Vec& v) {
  red_add_v4(p, v.word);
}

// Loops over elements run to whole lines, so that the 8 threads of a line always act together.
__device__ __forceinline__ u64 round_lines(u64 n) {
  return (n + kLineElems - 1) / kLineElems * kLineElems;
}

// Every thread of the line must call this together (loops run to whole lines). The 16-byte atomics
// of one warp instruction are not seen all at once by another GPU or kernel (measured: a reader
// that saw the count took a line whose upper threads' adds had not landed), so the count is added
// last, after a system fence that the warp's reconvergence makes cover every thread's adds. A
// thread whose elements end before its 16 bytes do adds zeros past the end (the buffer is sized in
// whole lines).
__device__ __forceinline__ void atomic_lines_add(Bits* acc, Bits* side, u64 i, u64 len, Vec v) {
  const bool active = i < len;
  const bool head = active && i % kLineElems == 0;
  if (head) {
    atomic_add_element(side + i / kLineElems, v.bits[0]);
    v.bits[0] = Bits(0);
  }
  if (active)
    red_add_vec(acc + i, v);
  // The line's adds and the head's value are in place before the count announces them.
  __syncwarp(line_group_mask());
  if (head) {
    __threadfence_system();
    atomic_add_element(acc + i, from_float(1.0f));
  }
}

// Waits for the line holding element i to be complete, returns this thread's elements of it
// (zeros past len), and clears them for the call after next. Every thread of the line calls it
// together.
__device__ __forceinline__ Vec atomic_lines_take(const collc_params& params, Bits* acc, Bits* side,
                                                 u64 i, u64 len, const PollSite& site, u64 epoch) {
  const bool head = i % kLineElems == 0;
  if (head && i < len) {
    u64 start = 0;
    unsigned spins = 0;
    for (;;) {
      Bits count;
      load_volatile(count, acc + i);
      if (to_float(count) == float(kRanks))
        break;
      if (kWatchdog && (++spins & 1023u) == 0 &&
          poll_expired(params, start, site, (long long)i, epoch, kRanks, count))
        break;
    }
  }
  // The line's other threads read only after its count is complete (the fence: and after the adds
  // it announces).
  if (head && i < len)
    __threadfence_system();
  __syncwarp(line_group_mask());
  Vec v;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    v.bits[e] = Bits(0);
  if (i + kVec <= len) {
    load_volatile(v.word, acc + i);
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      if (i + e < len)
        load_volatile(v.bits[e], acc + i + e);
  }
  if (head && i < len)
    load_volatile(v.bits[0], side + i / kLineElems);
  Vec zero;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    zero.bits[e] = Bits(0);
  store_plain(acc, i, len, zero);
  if (head && i < len)
    side[i / kLineElems] = Bits(0);
  return v;
}
