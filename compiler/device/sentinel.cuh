// The sentinel strategy: a receive buffer holds -0.0 until data arrives, and data never is -0.0:
// a writer sends +0.0 for it. A reader polls each element until it changes, then puts -0.0 back,
// so the copy is ready for its next use (three calls later) with no separate clearing pass.
constexpr Bits kSentinel = Bits(Bits(1) << (8 * sizeof(Bits) - 1)); // the bits of -0.0

// The value a writer sends: -0.0 becomes +0.0 (the one value the sentinel strategy changes).
__device__ __forceinline__ Bits canonical(Bits b) {
  return b == kSentinel ? Bits(0) : b;
}

__device__ __forceinline__ void sentinel_store(Bits* p, u64 i, u64 len, Vec v) {
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    v.bits[e] = canonical(v.bits[e]);
  store_plain(p, i, len, v);
}

// One look at elements [i, i + kVec) clipped to len (zeros past it); true if all have arrived.
__device__ __forceinline__ bool sentinel_try_load(const Bits* p, u64 i, u64 len, bool whole,
                                                  Vec& v) {
  bool arrived = true;
  if (whole) {
    load_volatile(v.word, p + i);
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      arrived = arrived && v.bits[e] != kSentinel;
    return arrived;
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    v.bits[e] = Bits(0);
    if (i + e < len)
      load_volatile(v.bits[e], p + i + e);
    arrived = arrived && v.bits[e] != kSentinel;
  }
  return arrived;
}

// Waits for elements [i, i + kVec) clipped to len to change from the sentinel, returns them and
// clears them.
__device__ __forceinline__ Vec sentinel_load(const collc_params& params, Bits* p, u64 i, u64 len,
                                             const PollSite& site, u64 epoch) {
  Vec v;
  const bool whole = i + kVec <= len && aligned(p + i);
  if (!sentinel_try_load(p, i, len, whole, v)) {
    // Slow path, apart from the common case in which the data is already there: the watchdog's
    // counter and clock live only here.
    u64 start = 0;
    unsigned spins = 0;
    while (!sentinel_try_load(p, i, len, whole, v))
      if (kWatchdog && (++spins & 1023u) == 0 &&
          poll_expired(params, start, site, (long long)i, epoch, kSentinel, kSentinel))
        break;
  }
  Vec clear;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    clear.bits[e] = kSentinel;
  store_plain(p, i, len, clear);
  return v;
}
