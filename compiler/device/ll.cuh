// The LL strategy: data travels in 16-byte packets that carry the call's flag beside it, so the
// arrival of the data is the signal and no barrier is needed.

// One packet: 8 bytes of data and the flag twice. One 16-byte store delivers all four words
// together, so a reader that sees the flag in both halves has the data.
struct alignas(16) LLPacket {
  unsigned data0;
  unsigned flag0;
  unsigned data1;
  unsigned flag1;
};
static_assert(sizeof(LLPacket) == 16, "an LL packet is one 16-byte store");

constexpr int kElemsPerPacket = 8 / sizeof(Bits);
constexpr int kPacketsPerVec = kVec * sizeof(Bits) / 8;
static_assert(kVec * sizeof(Bits) % 8 == 0, "LL needs vectors of whole 8-byte packet halves");

// The packet that holds element e of a packet buffer.
__device__ __forceinline__ u64 ll_packet(u64 e) {
  return e / kElemsPerPacket;
}

// Sends elements [i, i + kVec) clipped to len as packets flagged `flag`; a packet entirely past
// len is not sent (its reader does not read it either).
__device__ __forceinline__ void ll_store(LLPacket* packets, u64 i, u64 len, const Vec& v,
                                         unsigned flag) {
  const unsigned* words = reinterpret_cast<const unsigned*>(&v);
  LLPacket* p = packets + ll_packet(i);
#pragma unroll
  for (int k = 0; k < kPacketsPerVec; ++k)
    if (i + k * kElemsPerPacket < len)
      store_volatile(p + k, make_uint4(words[2 * k], flag, words[2 * k + 1], flag));
}

// One look at a packet: true (and its data in d0, d1) if it carries `flag` in both halves; `seen`
// is a flag it carries instead, for the watchdog.
__device__ __forceinline__ bool ll_try_load(const LLPacket* p, unsigned flag, unsigned& d0,
                                            unsigned& d1, unsigned& seen) {
  uint4 w;
  load_volatile(w, p);
  const LLPacket packet = {w.x, w.y, w.z, w.w};
  d0 = packet.data0;
  d1 = packet.data1;
  seen = packet.flag0 == flag ? packet.flag1 : packet.flag0;
  return packet.flag0 == flag && packet.flag1 == flag;
}

// Waits for elements [i, i + kVec) clipped to len to arrive with `flag`, and returns them.
__device__ __forceinline__ Vec ll_load(const collc_params& params, const LLPacket* packets, u64 i,
                                       u64 len, unsigned flag, const PollSite& site, u64 epoch) {
  Vec v;
  unsigned* words = reinterpret_cast<unsigned*>(&v);
  const LLPacket* p = packets + ll_packet(i);
  // Fast path: every packet of the vector loaded at once (the loads are in flight together), as
  // when the data is already there; only the packets that were not are then polled one by one.
  bool ready[kPacketsPerVec];
  unsigned seen;
#pragma unroll
  for (int k = 0; k < kPacketsPerVec; ++k) {
    words[2 * k] = words[2 * k + 1] = 0;
    ready[k] = i + k * kElemsPerPacket >= len ||
               ll_try_load(p + k, flag, words[2 * k], words[2 * k + 1], seen);
  }
#pragma unroll
  for (int k = 0; k < kPacketsPerVec; ++k) {
    if (ready[k])
      continue;
    u64 start = 0;
    unsigned spins = 0;
    while (!ll_try_load(p + k, flag, words[2 * k], words[2 * k + 1], seen))
      if (kWatchdog && (++spins & 1023u) == 0 &&
          poll_expired(params, start, site, (long long)(i + k * kElemsPerPacket), epoch, flag,
                       seen))
        break;
  }
  return v;
}

// The same for packet buffers typed as uint4 (16 bytes, the packet's size and alignment).
__device__ __forceinline__ void ll_store(uint4* packets, u64 i, u64 len, const Vec& v,
                                         unsigned flag) {
  ll_store(reinterpret_cast<LLPacket*>(packets), i, len, v, flag);
}
__device__ __forceinline__ Vec ll_load(const collc_params& params, const uint4* packets, u64 i,
                                       u64 len, unsigned flag, const PollSite& site, u64 epoch) {
  return ll_load(params, reinterpret_cast<const LLPacket*>(packets), i, len, flag, site, epoch);
}

// A call past COLLC_LAST_PACKET_EPOCH (abi/collc_abi.h): its flag would repeat one a stale packet
// may carry. Every block of every rank counts the same calls, so all of them refuse the same call
// and return without waiting for each other; thread 0 of each block records why for the host.
__device__ __noinline__ void refuse_call_past_last(const collc_params& params, u64 epoch) {
  if (threadIdx.x != 0 ||
      atomicCAS(&params.watchdog->tripped, 0u, unsigned(COLLC_WATCHDOG_OUT_OF_CALLS)) != 0u)
    return;
  collc_watchdog* w = params.watchdog;
  w->rank = params.rank;
  w->block = blockIdx.x;
  w->step = -1;
  w->sync_point = -1;
  w->waiting_on_rank = -1;
  w->buffer = -1;
  w->slot = -1;
  w->element = -1;
  w->epoch = epoch;
  w->expected = COLLC_LAST_PACKET_EPOCH;
  w->observed = epoch;
  __threadfence_system();
}
