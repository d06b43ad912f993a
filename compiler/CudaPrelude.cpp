#include "compiler/CudaPrelude.h"

#include "dsl/Types.h"

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

/// Must match ir::ExprNode::chunkSize: ceil(length / nranks) rounded up to 8 elements, so that
/// every chunk starts 16-byte aligned whatever the element type.
__device__ __forceinline__ u64 chunk_size(u64 length) {
  return ((length + kRanks - 1) / kRanks + 7) / 8 * 8;
}
__device__ __forceinline__ u64 min_u64(u64 a, u64 b) { return a < b ? a : b; }
/// First element and length of chunk k when `length` elements are split into kRanks chunks.
__device__ __forceinline__ u64 chunk_begin(u64 length, u64 k) {
  return min_u64(length, k * chunk_size(length));
}
__device__ __forceinline__ u64 chunk_len(u64 length, u64 k) {
  return min_u64(length, (k + 1) * chunk_size(length)) - chunk_begin(length, k);
}

/// kVec elements moved by one memory operation.
union Vec {
  Word word;
  Bits bits[kVec];
};

__device__ __forceinline__ bool aligned(const void* p) {
  return reinterpret_cast<u64>(p) % sizeof(Word) == 0;
}

// Loads go through L2 (ld.global.cg): the data was written by other GPUs or other blocks, and the
// L1 of this SM must not serve an older copy of it.
__device__ __forceinline__ Word load_word(const Bits* p) {
  return __ldcg(reinterpret_cast<const Word*>(p));
}

/// dst[i, i + kVec) = src[i, i + kVec), clipped to len; one vector when whole and aligned.
__device__ __forceinline__ void copy_elems(Bits* dst, const Bits* src, u64 i, u64 len) {
  if (i + kVec <= len && aligned(dst + i) && aligned(src + i)) {
    *reinterpret_cast<Word*>(dst + i) = load_word(src + i);
    return;
  }
  for (u64 e = i; e < len && e < i + kVec; ++e)
    dst[e] = __ldcg(src + e);
}

/// dst[e] = combine(src[0][e], src[1][e], ...) for e in [i, i + kVec) clipped to len, in float,
/// combining the operands in the order given and rounding once.
template <int N>
__device__ __forceinline__ void reduce_elems(Bits* dst, const Bits* (&src)[N], u64 i, u64 len) {
  bool whole = i + kVec <= len && aligned(dst + i);
#pragma unroll
  for (int k = 0; k < N; ++k)
    whole = whole && aligned(src[k] + i);
  if (whole) {
    Vec in[N]; // all loads issued before any arithmetic, so they are in flight together
#pragma unroll
    for (int k = 0; k < N; ++k)
      in[k].word = load_word(src[k] + i);
    Vec result;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      float acc = to_float(in[0].bits[e]);
#pragma unroll
      for (int k = 1; k < N; ++k)
        acc = combine(acc, to_float(in[k].bits[e]));
      result.bits[e] = from_float(acc);
    }
    *reinterpret_cast<Word*>(dst + i) = result.word;
    return;
  }
  for (u64 e = i; e < len && e < i + kVec; ++e) {
    float acc = to_float(__ldcg(src[0] + e));
#pragma unroll
    for (int k = 1; k < N; ++k)
      acc = combine(acc, to_float(__ldcg(src[k] + e)));
    dst[e] = from_float(acc);
  }
}

/// dst[e] += src[e] with the GPU's atomic add, for e in [i, i + kVec) clipped to len.
__device__ __forceinline__ void atomic_add_elems(Bits* dst, const Bits* src, u64 i, u64 len) {
  for (u64 e = i; e < len && e < i + kVec; ++e)
    atomicAdd(reinterpret_cast<T*>(dst + e), as_element(__ldcg(src + e)));
}

__device__ __forceinline__ void store_flag_release(u64* flag, u64 value) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(flag), "l"(value) : "memory");
}
__device__ __forceinline__ u64 load_flag_acquire(const u64* flag) {
  u64 value;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(value) : "l"(flag) : "memory");
  return value;
}
__device__ __forceinline__ u64 global_timer_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Polls *flag until it reaches `expected`. The watchdog: past params.timeout_ns (or once another
/// waiter of this rank has given up) it records where it was waiting and returns false instead of
/// hanging the GPU. The clock is read once every 1024 polls, so the fast path costs one compare.
__device__ __noinline__ bool wait_flag(const collc_params& params, const u64* flag, u64 expected,
                                       int step, int sync_point, int peer, u64 epoch) {
  u64 observed = load_flag_acquire(flag);
  if (observed >= expected)
    return true;
  const u64 start = global_timer_ns();
  for (unsigned spins = 1; observed < expected; ++spins) {
    if ((spins & 1023u) == 0 && params.timeout_ns != 0) {
      volatile unsigned* tripped = &params.watchdog->tripped;
      if (*tripped != 0 || global_timer_ns() - start > params.timeout_ns) {
        if (atomicCAS(&params.watchdog->tripped, 0u, 1u) == 0u) {
          params.watchdog->rank = params.rank;
          params.watchdog->block = blockIdx.x;
          params.watchdog->step = step;
          params.watchdog->sync_point = sync_point;
          params.watchdog->waiting_on_rank = peer;
          params.watchdog->epoch = epoch;
          params.watchdog->expected = expected;
          params.watchdog->observed = observed;
          __threadfence_system();
        }
        return false;
      }
    }
    observed = load_flag_acquire(flag);
  }
  return true;
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
      wait_flag(params, mine + f, value, step, sync_point, f % kRanks, epoch);
  } else if (threadIdx.x < kRanks && threadIdx.x != rank) {
    wait_flag(params, mine + blockIdx.x * kRanks + threadIdx.x, value, step, sync_point,
              threadIdx.x, epoch);
  }
  __syncthreads();
}
)cuda";

} // namespace collc
