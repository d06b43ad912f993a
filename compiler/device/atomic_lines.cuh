// The ll128_atomic strategy's accumulation lines: a line group (line_group.cuh) owns one
// 128-byte line of the owner's accumulation buffer and adds its 16 bytes per thread with one
// vector atomic each. The first element of a line counts the adds: its value goes to the side
// buffer first (a system fence orders the two), and a 1 is added in its place, so the line is
// complete when that element reaches nranks. The owner then takes the line, restores the first
// element from the side buffer, and zeroes both for the call after next.
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

// Every thread of the line must call this together (loops run to whole lines): the line is added
// by one warp instruction, each thread's 16 bytes with one vector atomic, so that the count in the
// first element cannot arrive before the rest of the line. A thread whose elements end before its
// 16 bytes do adds zeros past the end (the buffer is sized in whole lines), never single elements,
// which would arrive one by one after the count.
__device__ __forceinline__ void atomic_lines_add(Bits* acc, Bits* side, u64 i, u64 len, Vec v) {
  const bool active = i < len;
  if (active && i % kLineElems == 0) {
    atomic_add_element(side + i / kLineElems, v.bits[0]);
    __threadfence_system(); // the head's value is in place before the count announces it
    v.bits[0] = from_float(1.0f);
  }
  // Reconverge: the line's vector atomics go out as one instruction.
  __syncwarp(line_group_mask());
  if (active)
    red_add_vec(acc + i, v);
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
  // The line's other threads read only after its count is complete.
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
