#include "compiler/CudaPrelude.h"

#include "abi/Types.h"

#include <string>

namespace collc {

const char* elementHelpers(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return R"cuda(
typedef unsigned int Bits; // the storage of one element
__device__ __forceinline__ float to_float(Bits b) { return __uint_as_float(b); }
__device__ __forceinline__ Bits from_float(float x) { return __float_as_uint(x); }
__device__ __forceinline__ T as_element(Bits b) { return __uint_as_float(b); }
)cuda";
  case DType::F16:
    return R"cuda(
typedef unsigned short Bits; // the storage of one element
__device__ __forceinline__ float to_float(Bits b) { return __half2float(__ushort_as_half(b)); }
__device__ __forceinline__ Bits from_float(float x) { return __half_as_ushort(__float2half_rn(x)); }
__device__ __forceinline__ T as_element(Bits b) { return __ushort_as_half(b); }
)cuda";
  case DType::BF16:
    return R"cuda(
typedef unsigned short Bits; // the storage of one element
__device__ __forceinline__ float to_float(Bits b) { return __bfloat162float(__ushort_as_bfloat16(b)); }
__device__ __forceinline__ Bits from_float(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
__device__ __forceinline__ T as_element(Bits b) { return __ushort_as_bfloat16(b); }
)cuda";
  }
  return "";
}

const char* vectorAtomicAdd(DType dtype) {
  // sm_90's vector forms of red: one instruction adds 16 bytes.
  switch (dtype) {
  case DType::F32:
    return "__device__ __forceinline__ void red_add_vec(Bits* p, const Vec& v) {\n"
           "  asm volatile(\"red.relaxed.sys.global.add.v4.f32 [%0], {%1, %2, %3, %4};\" "
           "::\"l\"(p),\n"
           "               \"f\"(__uint_as_float(v.bits[0])), \"f\"(__uint_as_float(v.bits[1])),\n"
           "               \"f\"(__uint_as_float(v.bits[2])), \"f\"(__uint_as_float(v.bits[3]))\n"
           "               : \"memory\");\n}\n";
  case DType::F16:
  case DType::BF16: {
    static const std::string f16 =
        std::string("__device__ __forceinline__ void red_add_vec(Bits* p, const Vec& v) {\n"
                    "  const unsigned* w = reinterpret_cast<const unsigned*>(&v);\n"
                    "  asm volatile(\"red.relaxed.sys.global.add.noftz.v4.");
    static const std::string tail =
        " [%0], {%1, %2, %3, %4};\" ::\"l\"(p), \"r\"(w[0]),\n"
        "               \"r\"(w[1]), \"r\"(w[2]), \"r\"(w[3]) : \"memory\");\n}\n";
    static const std::string half = f16 + "f16x2" + tail;
    static const std::string bf16 = f16 + "bf16x2" + tail;
    return dtype == DType::F16 ? half.c_str() : bf16.c_str();
  }
  }
  return "";
}

const char* combineFunction(ReduceOp op) {
  // max and min propagate NaN, as IEEE maximum/minimum do (fmaxf would drop it).
  switch (op) {
  case ReduceOp::Sum:
    return "__device__ __forceinline__ float combine(float a, float b) { return a + b; }\n";
  case ReduceOp::Max:
    return "__device__ __forceinline__ float combine(float a, float b) {\n"
           "  return (a != a || b != b) ? __int_as_float(0x7fffffff) : fmaxf(a, b);\n}\n";
  case ReduceOp::Min:
    return "__device__ __forceinline__ float combine(float a, float b) {\n"
           "  return (a != a || b != b) ? __int_as_float(0x7fffffff) : fminf(a, b);\n}\n";
  }
  return "";
}

const char* const kPrelude = R"cuda(
typedef unsigned long long u64;

// The block's epoch counter, read and written at the kernel's head (see there), at gpu scope: the
// next call reads it before it waits for the previous kernel, a wait that orders nothing before it.
__device__ __forceinline__ u64 load_epoch(const u64 *p) {
  u64 v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_epoch(u64 *p, u64 v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/// ir::ExprNode::chunkSize: ceil(length / nranks) rounded up to kChunkAlign elements, so that
/// every chunk starts 16-byte aligned whatever the element type.
__device__ __forceinline__ u64 chunk_size(u64 length) {
  return ((length + kRanks - 1) / kRanks + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
}
__device__ __forceinline__ u64 min_u64(u64 a, u64 b) { return a < b ? a : b; }
/// First element and length of chunk k when `length` elements are split into kRanks chunks.
__device__ __forceinline__ u64 chunk_begin(u64 length, u64 k) {
  return min_u64(length, k * chunk_size(length));
}
__device__ __forceinline__ u64 chunk_len(u64 length, u64 k) {
  return min_u64(length, (k + 1) * chunk_size(length)) - chunk_begin(length, k);
}

/// kVec elements: what one thread moves per loop iteration, in one memory operation when it can.
union Vec {
  Word word;
  Bits bits[kVec];
};

__device__ __forceinline__ bool aligned(const void* p) {
  return reinterpret_cast<u64>(p) % sizeof(Word) == 0;
}

// ---- Plain memory. Loads go through L2 (ld.global.cg): the data may have been written by other
// GPUs or other blocks, and this SM's L1 must not serve an older copy of it.

/// p[i, i + kVec) clipped to len; lanes past len read as zero.
__device__ __forceinline__ Vec load_plain(const Bits* p, u64 i, u64 len) {
  Vec v;
  if (i + kVec <= len && aligned(p + i)) {
    v.word = __ldcg(reinterpret_cast<const Word*>(p + i));
    return v;
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    v.bits[e] = i + e < len ? __ldcg(p + i + e) : Bits(0);
  return v;
}

/// p[i, i + kVec) clipped to len. A whole vector: with kWholeStores one store instruction of its
/// width; without, the plain store, which NVVM splits into 32-bit stores when the vector came
/// from load_plain (whose two paths meet in the union). Neither is faster at every size: the
/// tuner picks (launch knob whole_stores).
__device__ __forceinline__ void store_plain(Bits* p, u64 i, u64 len, const Vec& v) {
  if (i + kVec <= len && aligned(p + i)) {
    if (kWholeStores)
      __stwb(reinterpret_cast<Word*>(p + i), v.word);
    else
      *reinterpret_cast<Word*>(p + i) = v.word;
    return;
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    if (i + e < len)
      p[i + e] = v.bits[e];
}

/// dst[e] += src[e] with the GPU's atomic add, for the lanes below len.
__device__ __forceinline__ void atomic_add_plain(Bits* p, u64 i, u64 len, const Vec& v) {
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    if (i + e < len)
      atomicAdd(reinterpret_cast<T*>(p + i + e), as_element(v.bits[e]));
}

// Loads that bypass the caches every time: the poll must see the peer's store when it lands.
__device__ __forceinline__ void load_volatile(uint4& w, const void* p) {
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
               : "l"(p)
               : "memory");
}
__device__ __forceinline__ void load_volatile(uint2& w, const void* p) {
  asm volatile("ld.volatile.global.v2.u32 {%0, %1}, [%2];" : "=r"(w.x), "=r"(w.y) : "l"(p) : "memory");
}
__device__ __forceinline__ void load_volatile(unsigned& w, const void* p) {
  asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(w) : "l"(p) : "memory");
}
__device__ __forceinline__ void load_volatile(unsigned short& w, const void* p) {
  asm volatile("ld.volatile.global.u16 %0, [%1];" : "=h"(w) : "l"(p) : "memory");
}

// ---- Reduction: operands are combined in float, in the order given, and rounded once.
struct Acc {
  float v[kVec];
};
__device__ __forceinline__ Acc to_acc(const Vec& v) {
  Acc a;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    a.v[e] = to_float(v.bits[e]);
  return a;
}
__device__ __forceinline__ void accumulate(Acc& a, const Vec& v) {
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    a.v[e] = combine(a.v[e], to_float(v.bits[e]));
}
__device__ __forceinline__ Vec from_acc(const Acc& a) {
  Vec v;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    v.bits[e] = from_float(a.v[e]);
  return v;
}

// ---- The watchdog. Every poll loop reads the clock once every 1024 polls only, so the fast path
// costs a compare; past params.timeout_ns (or once another waiter of this rank has given up) the
// first waiter records where it was waiting, and every waiter returns instead of hanging the GPU.
__device__ __forceinline__ u64 global_timer_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Where a poll waits, for the watchdog's record.
struct PollSite {
  int step;
  int sync_point; // barrier index, or -1 for a data poll
  int peer;       // the rank expected to signal, -1 if not known
  int buffer;     // data polls: scratch buffer index, else -1
  long long slot;
};

/// Called every 1024 polls: true once this poll must give up.
__device__ __noinline__ bool poll_expired(const collc_params& params, u64& start,
                                          const PollSite& site, long long element, u64 epoch,
                                          u64 expected, u64 observed) {
  if (params.timeout_ns == 0)
    return false;
  const u64 now = global_timer_ns();
  if (start == 0) {
    start = now;
    return false;
  }
  volatile unsigned* tripped = &params.watchdog->tripped;
  if (*tripped == 0 && now - start <= params.timeout_ns)
    return false;
  if (atomicCAS(&params.watchdog->tripped, 0u, 1u) == 0u) {
    collc_watchdog* w = params.watchdog;
    w->rank = params.rank;
    w->block = blockIdx.x;
    w->step = site.step;
    w->sync_point = site.sync_point;
    w->waiting_on_rank = site.peer;
    w->buffer = site.buffer;
    w->slot = int(site.slot);
    w->element = element;
    w->epoch = epoch;
    w->expected = expected;
    w->observed = observed;
    __threadfence_system();
  }
  return true;
}

)cuda";

const char* const kBarrierPrelude = R"cuda(
// ---- Barrier flags.
__device__ __forceinline__ void store_flag_release(u64* flag, u64 value) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(flag), "l"(value) : "memory");
}
__device__ __forceinline__ u64 load_flag_acquire(const u64* flag) {
  u64 value;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(value) : "l"(flag) : "memory");
  return value;
}

/// Polls *flag until it reaches `expected` (or the watchdog gives up).
__device__ __forceinline__ void wait_flag(const collc_params& params, const u64* flag,
                                          u64 expected, const PollSite& site, u64 epoch) {
  u64 start = 0;
  unsigned spins = 0;
  for (u64 observed = load_flag_acquire(flag); observed < expected;
       observed = load_flag_acquire(flag))
    if (kWatchdog && (++spins & 1023u) == 0 && poll_expired(params, start, site, -1, epoch, expected, observed))
      return;
}

__device__ __forceinline__ u64* flags_of(const collc_params& params, int owner) {
  return reinterpret_cast<u64*>(params.heap[owner] + params.flags_offset);
}

/// Barrier between steps. flags[b * kRanks + r] on a rank holds the last value block b of rank r
/// signalled; values grow with the epoch, so no flag is ever reset.
///  - matched scope: block b waits only for block b of each peer (it reads only what they wrote);
///  - full scope: every block waits for every block of every rank, itself included.
/// The release store is cumulative over the block's writes, which __syncthreads orders before it.
template <bool kFull>
__device__ __forceinline__ void barrier(const collc_params& params, u64 epoch, int sync_point,
                                        int step) {
  const u64 value = epoch * kSyncPoints + sync_point;
  const int rank = params.rank;
  __syncthreads();
  if (threadIdx.x < kRanks && (kFull || threadIdx.x != rank))
    store_flag_release(flags_of(params, threadIdx.x) + blockIdx.x * kRanks + rank, value);
  const u64* mine = flags_of(params, rank);
  if (kFull) {
    for (int f = threadIdx.x; f < kBlocks * kRanks; f += kThreads)
      wait_flag(params, mine + f, value, PollSite{step, sync_point, f % kRanks, -1, 0}, epoch);
  } else if (threadIdx.x < kRanks && threadIdx.x != rank) {
    wait_flag(params, mine + blockIdx.x * kRanks + threadIdx.x, value,
              PollSite{step, sync_point, int(threadIdx.x), -1, 0}, epoch);
  }
  __syncthreads();
}
)cuda";

const char* const kAtomicLinesPrelude = R"cuda(
// ---- Accumulation lines (ll128_atomic): 8 threads own one 128-byte line of the owner's
// accumulation buffer and add their 16 bytes with one vector atomic each. The first element of a
// line counts the adds: its value goes to the side buffer first (a system fence orders the two),
// and a 1 is added in its place, so the line is complete when that element reaches nranks. The
// owner then takes the line, restores the first element from the side buffer, and zeroes both for
// the call after next.
constexpr int kLineElems = 128 / sizeof(Bits);
static_assert(kVec * sizeof(Bits) == 16, "accumulation lines are added 16 bytes per thread");

/// Loops over elements run to whole lines, so that the 8 threads of a line always act together.
__device__ __forceinline__ u64 round_lines(u64 n) {
  return (n + kLineElems - 1) / kLineElems * kLineElems;
}

/// Every thread of the line must call this together (loops run to whole lines): the line is added
/// by one warp instruction, each thread's 16 bytes with one vector atomic, so that the count in the
/// first element cannot arrive before the rest of the line. A thread whose elements end before its
/// 16 bytes do adds zeros past the end (the buffer is sized in whole lines), never single elements,
/// which would arrive one by one after the count.
__device__ __forceinline__ void atomic_lines_add(Bits* acc, Bits* side, u64 i, u64 len, Vec v) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned line_mask = 0xffu << (lane & ~7u);
  const bool active = i < len;
  if (active && i % kLineElems == 0) {
    atomicAdd(reinterpret_cast<T*>(side + i / kLineElems), as_element(v.bits[0]));
    __threadfence_system(); // the head's value is in place before the count announces it
    v.bits[0] = from_float(1.0f);
  }
  __syncwarp(line_mask); // reconverge: the line's vector atomics go out as one instruction
  if (active)
    red_add_vec(acc + i, v);
}

__device__ __forceinline__ Vec atomic_lines_take(const collc_params& params, Bits* acc,
                                                 Bits* side, u64 i, u64 len, const PollSite& site,
                                                 u64 epoch) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned line_mask = 0xffu << (lane & ~7u);
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
  __syncwarp(line_mask); // the line's other threads read only after its count is complete
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
)cuda";

const char* const kLLPrelude = R"cuda(
// ---- LL: each 16-byte packet carries 8 bytes of data and the call's flag twice,
// {data0, flag, data1, flag}. One 16-byte store delivers data and flag together, so a reader that
// sees the flag in both halves has the data: the arrival of data is the signal.
constexpr int kElemsPerPacket = 8 / sizeof(Bits);
constexpr int kPacketsPerVec = kVec * sizeof(Bits) / 8;
static_assert(kVec * sizeof(Bits) % 8 == 0, "LL needs vectors of whole 8-byte packet halves");

/// Packet holding element e of a packet buffer.
__device__ __forceinline__ u64 ll_packet(u64 e) { return e / kElemsPerPacket; }

/// Sends elements [i, i + kVec) clipped to len as packets flagged `flag`; a packet entirely past
/// len is not sent (its reader does not read it either).
__device__ __forceinline__ void ll_store(uint4* packets, u64 i, u64 len, const Vec& v,
                                         unsigned flag) {
  const unsigned* words = reinterpret_cast<const unsigned*>(&v);
  uint4* p = packets + ll_packet(i);
#pragma unroll
  for (int k = 0; k < kPacketsPerVec; ++k)
    if (i + k * kElemsPerPacket < len)
      asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p + k),
                   "r"(words[2 * k]), "r"(flag), "r"(words[2 * k + 1]), "r"(flag)
                   : "memory");
}

/// One look at packet p: true (and its data in d0, d1) if it carries `flag` in both halves.
__device__ __forceinline__ bool ll_try_load(const uint4* p, unsigned flag, unsigned& d0,
                                            unsigned& d1, unsigned& seen) {
  unsigned f0, f1;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
               : "l"(p)
               : "memory");
  seen = f0 == flag ? f1 : f0;
  return f0 == flag && f1 == flag;
}

/// Waits for elements [i, i + kVec) clipped to len to arrive with `flag`, and returns them.
__device__ __forceinline__ Vec ll_load(const collc_params& params, const uint4* packets, u64 i,
                                       u64 len, unsigned flag, const PollSite& site, u64 epoch) {
  Vec v;
  unsigned* words = reinterpret_cast<unsigned*>(&v);
  const uint4* p = packets + ll_packet(i);
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
)cuda";

const char* const kLL128Prelude = R"cuda(
// ---- LL128: a 128-byte line carries 120 bytes of data and the call's 8-byte flag. The 8 threads
// of a line write it with one warp store instruction (threads 0-6: 16 bytes of data each; thread 7:
// 8 bytes of data, then the flag) and read it with one warp load instruction; a reader takes the
// line once thread 7 sees the flag. That relies on the line's stores landing together and its
// loads reading one snapshot, which NVLink does not promise in writing: tests/gpu/LL128ProbeTest
// checks it on the machine. Element loops walk whole lines (`line`, and `lane8` of its 8 threads),
// so the threads of a line always act together.
constexpr int kLL128LineElems = 120 / sizeof(Bits); // data elements per line
static_assert(kVec * sizeof(Bits) == 16, "ll128 lines are moved 16 bytes per thread");
static_assert(kThreads % 32 == 0, "ll128 lines are moved by whole warps");

/// Lines that hold `elems` elements.
__device__ __forceinline__ u64 ll128_lines(u64 elems) {
  return (elems + kLL128LineElems - 1) / kLL128LineElems;
}

/// The threads of this thread's line, as a warp mask.
__device__ __forceinline__ unsigned ll128_line_mask() {
  return 0xffu << ((threadIdx.x % 32) & ~7u);
}

/// Sends the elements of this thread's part of the line holding element i, clipped to len (zeros
/// past it), flagged `flag`. All 8 threads of the line call it together; a line entirely past len
/// is not sent (its readers do not read it either).
__device__ __forceinline__ void ll128_store(uint4* lines, u64 i, u64 len, const Vec& v, u64 flag) {
  const u64 line = i / kLL128LineElems;
  if (line * kLL128LineElems >= len)
    return; // the same for the whole line
  uint4 w = v.word;
  if (threadIdx.x % 8 == 7) { // thread 7 carries 8 bytes of data and the flag
    w.z = unsigned(flag);
    w.w = unsigned(flag >> 32);
  }
  __syncwarp(ll128_line_mask()); // the line leaves as one store instruction
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(lines + line * 8 +
                                                                          threadIdx.x % 8),
               "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w)
               : "memory");
}

/// One load of this thread's 16 bytes of a line; true once the whole line has arrived (thread 7
/// found the flag). All 8 threads of the line call it together.
__device__ __forceinline__ bool ll128_try_load(const uint4* p, u64 flag, uint4& w) {
  const unsigned mask = ll128_line_mask();
  __syncwarp(mask);
  load_volatile(w, p);
  const bool flagged = threadIdx.x % 8 != 7 || (w.z == unsigned(flag) && w.w == unsigned(flag >> 32));
  return __all_sync(mask, flagged);
}

/// Waits for the line holding element i to arrive with `flag` and returns this thread's elements
/// of it, clipped to len (zeros past it). All 8 threads of the line call it together.
__device__ __forceinline__ Vec ll128_load(const collc_params& params, const uint4* lines, u64 i,
                                          u64 len, u64 flag, const PollSite& site, u64 epoch) {
  Vec v;
  v.word = make_uint4(0, 0, 0, 0);
  const u64 line = i / kLL128LineElems;
  if (line * kLL128LineElems >= len)
    return v; // the same for the whole line
  const uint4* p = lines + line * 8 + threadIdx.x % 8;
  uint4 w;
  if (!ll128_try_load(p, flag, w)) {
    // Slow path, out of the way of the common case in which the line is already there.
    u64 start = 0;
    unsigned spins = 0;
    while (!ll128_try_load(p, flag, w)) {
      // Thread 7 alone decides to give up (it knows the flag it saw), and the line follows it, so
      // that the 8 threads leave the loop together.
      const bool expired = kWatchdog && (++spins & 1023u) == 0 && threadIdx.x % 8 == 7 &&
                           poll_expired(params, start, site, (long long)i, epoch, flag,
                                        (u64(w.w) << 32) | w.z);
      if (__any_sync(ll128_line_mask(), expired))
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
)cuda";

const char* const kSentinelPrelude = R"cuda(
// ---- Sentinel: a receive buffer holds -0.0 until data arrives, and data never is -0.0: a writer
// sends +0.0 for it. A reader polls each element until it changes, then puts -0.0 back, so the
// copy is ready for its next use (three calls later) with no separate clearing pass.
constexpr Bits kSentinel = Bits(Bits(1) << (8 * sizeof(Bits) - 1)); // the bits of -0.0

/// The value a writer sends: -0.0 becomes +0.0 (the one value the sentinel strategy changes).
__device__ __forceinline__ Bits canonical(Bits b) { return b == kSentinel ? Bits(0) : b; }

__device__ __forceinline__ void sentinel_store(Bits* p, u64 i, u64 len, Vec v) {
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    v.bits[e] = canonical(v.bits[e]);
  store_plain(p, i, len, v);
}

/// One look at elements [i, i + kVec) clipped to len (zeros past it); true if all have arrived.
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

/// Waits for elements [i, i + kVec) clipped to len to change from the sentinel, returns them and
/// clears them.
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
)cuda";

} // namespace collc
