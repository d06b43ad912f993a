// The LL128 strategy: a 128-byte line carries 120 bytes of data and the call's 8-byte flag. A
// line group (line_group.cuh) writes it with one warp store instruction (threads 0-6: 16 bytes of
// data each; thread 7: 8 bytes of data, then the flag) and reads it with one warp load
// instruction; a reader takes the line once thread 7 sees the flag. That relies on the line's
// stores landing together and its loads reading one snapshot, which NVLink does not promise in
// writing: tests/gpu/LL128ProbeTest checks it on the machine. Element loops walk whole lines
// (`line`, and `lane8` of its 8 threads), so the threads of a line always act together.
constexpr int kLL128LineElems = 120 / sizeof(Bits); // data elements per line
enum : unsigned { kFlagLane = kLineThreads - 1 };   // the thread that carries the flag
static_assert(kVec * sizeof(Bits) == 16, "ll128 lines are moved 16 bytes per thread");
static_assert(kThreads % 32 == 0, "ll128 lines are moved by whole warps");

// Lines that hold `elems` elements.
__device__ __forceinline__ u64 ll128_lines(u64 elems) {
  return (elems + kLL128LineElems - 1) / kLL128LineElems;
}

// Sends the elements of this thread's part of the line holding element i, clipped to len (zeros
// past it), flagged `flag`. All 8 threads of the line call it together; a line entirely past len
// is not sent (its readers do not read it either).
__device__ __forceinline__ void ll128_store(uint4* lines, u64 i, u64 len, const Vec& v, u64 flag) {
  const u64 line = i / kLL128LineElems;
  if (line * kLL128LineElems >= len)
    return; // the same for the whole line
  uint4 w = v.word;
  if (line_lane() == kFlagLane) { // 8 bytes of data, then the flag
    w.z = unsigned(flag);
    w.w = unsigned(flag >> 32);
  }
  __syncwarp(line_group_mask()); // the line leaves as one store instruction
  store_volatile(lines + line * kLineThreads + line_lane(), w);
}

// One load of this thread's 16 bytes of a line; true once the whole line has arrived (thread 7
// found the flag). All 8 threads of the line call it together.
__device__ __forceinline__ bool ll128_try_load(const uint4* p, u64 flag, uint4& w) {
  const unsigned mask = line_group_mask();
  __syncwarp(mask);
  load_volatile(w, p);
  const bool flagged =
      line_lane() != kFlagLane || (w.z == unsigned(flag) && w.w == unsigned(flag >> 32));
  return __all_sync(mask, flagged);
}

// Waits for the line holding element i to arrive with `flag` and returns this thread's elements
// of it, clipped to len (zeros past it). All 8 threads of the line call it together.
__device__ __forceinline__ Vec ll128_load(const collc_params& params, const uint4* lines, u64 i,
                                          u64 len, u64 flag, const PollSite& site, u64 epoch) {
  Vec v;
  v.word = make_uint4(0, 0, 0, 0);
  const u64 line = i / kLL128LineElems;
  if (line * kLL128LineElems >= len)
    return v; // the same for the whole line
  const uint4* p = lines + line * kLineThreads + line_lane();
  uint4 w;
  if (!ll128_try_load(p, flag, w)) {
    // Slow path, out of the way of the common case in which the line is already there.
    u64 start = 0;
    unsigned spins = 0;
    while (!ll128_try_load(p, flag, w)) {
      // Thread 7 alone decides to give up (it knows the flag it saw), and the line follows it, so
      // that the 8 threads leave the loop together.
      const bool expired =
          kWatchdog && (++spins & 1023u) == 0 && line_lane() == kFlagLane &&
          poll_expired(params, start, site, (long long)i, epoch, flag, (u64(w.w) << 32) | w.z);
      if (__any_sync(line_group_mask(), expired))
        break;
    }
  }
  v.word = w;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    if (i + e >= len)
      v.bits[e] = Bits(0); // past the data (thread 7: its flag)
  return v;
}
