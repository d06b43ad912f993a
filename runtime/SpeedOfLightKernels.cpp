// The CUDA source of the speed-of-light probes (runtime/SpeedOfLight.h says what each measures),
// kept apart from the host code that launches and times them.
#include "runtime/SpeedOfLightKernels.h"

namespace collc {

const char* speedOfLightKernelText() {
  return R"cuda(
typedef unsigned long long u64;

__device__ __forceinline__ u64 sol_now() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// Flags are read and written past the caches: a peer's store must be seen when it lands.
__device__ __forceinline__ u64 sol_load(const u64 *p) {
  u64 v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void sol_store(u64 *p, u64 v) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/// Block b's flag from rank `from`, in rank `owner`'s heap: u64[blocks][nranks] at flags_offset.
__device__ __forceinline__ u64 *sol_flag(const collc_params &p, int owner, int block, int from) {
  return reinterpret_cast<u64 *>(p.heap[owner] + p.flags_offset) + block * p.nranks + from;
}
/// Waits until the flag reaches this call's epoch (a peer is at most one call ahead), bounded by
/// the watchdog's timeout: the first waiter to give up records where, and the host reports it.
__device__ bool sol_wait(const collc_params &p, const u64 *flag, u64 epoch, int peer) {
  if (sol_load(flag) >= epoch)
    return true;
  const u64 start = sol_now();
  while (sol_load(flag) < epoch)
    if (sol_now() - start > p.timeout_ns) {
      if (atomicCAS(&p.watchdog->tripped, 0u, 1u) == 0u) {
        p.watchdog->rank = p.rank;
        p.watchdog->block = blockIdx.x;
        p.watchdog->waiting_on_rank = peer;
        p.watchdog->expected = epoch;
        p.watchdog->observed = sol_load(flag);
      }
      return false;
    }
  return true;
}
/// Every block's thread 0: tell each peer's block b that this call (`epoch`) reached here, then
/// wait for theirs.
__device__ void sol_signal_and_wait(const collc_params &p, u64 epoch) {
  for (int q = 0; q < p.nranks; ++q)
    if (q != p.rank)
      sol_store(sol_flag(p, q, blockIdx.x, p.rank), epoch);
  for (int q = 0; q < p.nranks; ++q)
    if (q != p.rank && !sol_wait(p, sol_flag(p, p.rank, blockIdx.x, q), epoch, q))
      break;
}

// Launched as programmatic dependent launches, like collc's kernels: wait for the previous
// kernel, then let the next one be scheduled.
#define SOL_ENTRY                                                                                  \
  asm volatile("griddepcontrol.wait;" ::: "memory");                                               \
  asm volatile("griddepcontrol.launch_dependents;");

/// The head of collc's kernels (compiler/CudaCodeGen.cpp, printHead), for the probes that count
/// calls: the block's epoch is read before the wait and stored back at once, fenced before
/// thread 0 alone lets the next kernel be scheduled (which reads it early in turn).
__device__ __forceinline__ u64 sol_head(const collc_params &p) {
  u64 epoch;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(epoch) : "l"(p.epochs + blockIdx.x)
               : "memory");
  ++epoch;
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p.epochs + blockIdx.x), "l"(epoch)
                 : "memory");
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (threadIdx.x == 0)
    asm volatile("griddepcontrol.launch_dependents;");
  return epoch;
}

extern "C" __global__ void sol_empty(const __grid_constant__ collc_params p) { SOL_ENTRY }

extern "C" __global__ void sol_exchange(const __grid_constant__ collc_params p) {
  const u64 epoch = sol_head(p);
  if (threadIdx.x == 0)
    sol_signal_and_wait(p, epoch);
}

/// The exchange, but each flag carries a word of the input read after the wait, as any
/// collective's first data does (the previous kernel may have written it): the flag is the epoch
/// only if the word is the input's pattern, so the store waits for the load. A wrong word makes
/// the flag far from the epoch, which the waiting peer reports.
extern "C" __global__ void sol_exchange_read(const __grid_constant__ collc_params p) {
  const u64 epoch = sol_head(p);
  if (threadIdx.x == 0) {
    const u64 word = __ldcg(static_cast<const u64 *>(p.in));
    const u64 flag = epoch ^ (word ^ 0x3f3f3f3f3f3f3f3full);
    for (int q = 0; q < p.nranks; ++q)
      if (q != p.rank)
        sol_store(sol_flag(p, q, blockIdx.x, p.rank), flag);
    for (int q = 0; q < p.nranks; ++q) {
      if (q == p.rank)
        continue;
      const u64 *from = sol_flag(p, p.rank, blockIdx.x, q);
      if (!sol_wait(p, from, epoch, q))
        break;
      // The peer is at most one call ahead: a flag past that carried a wrong word.
      const u64 seen = sol_load(from);
      if (seen > epoch + 1 && atomicCAS(&p.watchdog->tripped, 0u, 2u) == 0u) {
        p.watchdog->rank = p.rank;
        p.watchdog->waiting_on_rank = q;
        p.watchdog->observed = seen ^ epoch;
      }
    }
  }
}

/// params.count: bytes this rank sends each peer; params.in: those bytes; the peer's slot for
/// this rank is at scratch_offset[0] + rank * parity_stride in the peer's heap.
__device__ __forceinline__ void sol_copy_to_peers(const collc_params &p) {
  const u64 vectors = p.count / 16;
  const uint4 *in = static_cast<const uint4 *>(p.in);
  for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += u64(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(in + i);
    for (int q = 0; q < p.nranks; ++q)
      if (q != p.rank)
        reinterpret_cast<uint4 *>(p.heap[q] + p.scratch_offset[0] + p.rank * p.parity_stride)[i] =
            v;
  }
}

/// The copy alone, no flag: the SMs' share of the bytes when they and the copy engines move one
/// copy between them (the split probe orders it with graph edges, not flags).
extern "C" __global__ void sol_copy(const __grid_constant__ collc_params p) {
  SOL_ENTRY
  sol_copy_to_peers(p);
}

extern "C" __global__ void sol_copy_signal(const __grid_constant__ collc_params p) {
  const u64 epoch = sol_head(p);
  sol_copy_to_peers(p);
  // The block's stores are ordered before its signal, as a collective's data before its flag.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    sol_signal_and_wait(p, epoch);
  }
}

// ---- Sentinel copy: the data is its own signal, as in collc's sentinel strategy. A received word
// that still reads 0 has not arrived; every input word is kSolPattern (the host fills the input),
// so a word that arrived is never 0, and one that arrived with another value is an error.
#define kSolPattern 0x3f3f3f3fu
__device__ __forceinline__ uint4 sol_load_vector(const uint4 *p) {
  uint4 w;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
               : "l"(p)
               : "memory");
  return w;
}
__device__ __forceinline__ bool sol_arrived(uint4 w) { return w.x && w.y && w.z && w.w; }
/// Waits for the vector at p to arrive from `peer`, checks it and puts the sentinel back; false
/// once the watchdog's bound passed or the data is wrong (both recorded for the host).
__device__ bool sol_take_vector(const collc_params &p, uint4 *v, int peer) {
  uint4 w = sol_load_vector(v);
  if (!sol_arrived(w)) {
    const u64 start = sol_now();
    unsigned spins = 0;
    while (!sol_arrived(w = sol_load_vector(v)))
      if ((++spins & 1023u) == 0 && sol_now() - start > p.timeout_ns) {
        if (atomicCAS(&p.watchdog->tripped, 0u, 1u) == 0u) {
          p.watchdog->rank = p.rank;
          p.watchdog->block = blockIdx.x;
          p.watchdog->waiting_on_rank = peer;
        }
        return false;
      }
  }
  if (w.x != kSolPattern || w.y != kSolPattern || w.z != kSolPattern || w.w != kSolPattern) {
    if (atomicCAS(&p.watchdog->tripped, 0u, 2u) == 0u) { // 2: wrong data, not a timeout
      p.watchdog->rank = p.rank;
      p.watchdog->waiting_on_rank = peer;
      p.watchdog->observed = w.x;
    }
    return false;
  }
  *v = make_uint4(0, 0, 0, 0);
  return true;
}
/// One record of the trace: when block 0's thread 0 of a call passed each point (globaltimer ns).
struct SolTracePoint {
  u64 epoch, waited, pushed, arrived, ended;
};

/// Every rank stores params.count bytes into every peer; each thread then takes the vectors it
/// expects from every peer. Scratch rotates through three copies by epoch (a peer may be a call
/// ahead), each copy nranks slots of parity_stride bytes at scratch_offset[1]. With aux[0] set,
/// block 0's thread 0 records a SolTracePoint per call, at (epoch - 1) % capacity; the capacity is
/// aux[1], whose value (not a pointer) is the trace's capacity in records.
extern "C" __global__ void sol_copy_sentinel(const __grid_constant__ collc_params p) {
  const u64 epoch = sol_head(p);
  const bool tracing = p.aux[0] && blockIdx.x == 0 && threadIdx.x == 0;
  SolTracePoint point;
  if (tracing)
    point.waited = sol_now();
  const u64 copy = epoch % 3;
  const u64 vectors = p.count / 16;
  const uint4 *in = static_cast<const uint4 *>(p.in);
  const u64 first = u64(blockIdx.x) * blockDim.x + threadIdx.x;
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 i = first; i < vectors; i += stride) {
    const uint4 v = __ldcg(in + i);
    for (int q = 0; q < p.nranks; ++q)
      if (q != p.rank)
        reinterpret_cast<uint4 *>(p.heap[q] + p.scratch_offset[1] +
                                  (copy * p.nranks + p.rank) * p.parity_stride)[i] = v;
  }
  if (tracing)
    point.pushed = sol_now();
  bool ok = true;
  for (u64 i = first; ok && i < vectors; i += stride)
    for (int q = 0; ok && q < p.nranks; ++q)
      if (q != p.rank)
        ok = sol_take_vector(p,
                             reinterpret_cast<uint4 *>(p.heap[p.rank] + p.scratch_offset[1] +
                                                       (copy * p.nranks + q) * p.parity_stride) +
                                 i,
                             q);
  if (tracing)
    point.arrived = sol_now();
  if (tracing) {
    point.epoch = epoch;
    point.ended = sol_now();
    const u64 capacity = reinterpret_cast<u64>(p.aux[1]);
    static_cast<SolTracePoint *>(p.aux[0])[(epoch - 1) % capacity] = point;
  }
}
)cuda";
}

} // namespace collc
