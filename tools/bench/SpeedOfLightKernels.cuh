// The CUDA source of the speed-of-light probes (tools/bench/SpeedOfLight.h says what each
// measures), on the collc_params ABI: compiled by NVRTC after kernelAbiHeader(), which declares
// collc_params, and embedded in the tool at build time (tools/CMakeLists.txt). Kept apart from the
// host code that launches and times them.

typedef unsigned long long u64;

// A "memory" clobber: a trace point stays where it is written, between the memory operations
// and barriers it times.
__device__ __forceinline__ u64 sol_now() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : : "memory");
  return t;
}
// Flags are read and written past the caches: a peer's store must be seen when it lands.
__device__ __forceinline__ u64 sol_load(const u64* p) {
  u64 v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void sol_store(u64* p, u64 v) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/// Block b's flag from rank `from`, in rank `owner`'s heap: u64[blocks][nranks] at flags_offset.
__device__ __forceinline__ u64* sol_flag(const collc_params& p, int owner, int block, int from) {
  return reinterpret_cast<u64*>(p.heap[owner] + p.flags_offset) + block * p.nranks + from;
}
/// Waits until the flag reaches this call's epoch (a peer is at most one call ahead), bounded by
/// the watchdog's timeout: the first waiter to give up records where, and the host reports it.
/// `seen`: the value that ended the wait, for a caller that checks it without another load.
__device__ bool sol_wait(const collc_params& p, const u64* flag, u64 epoch, int peer,
                         u64* seen = nullptr) {
  u64 value = sol_load(flag);
  if (value < epoch) {
    const u64 start = sol_now();
    while ((value = sol_load(flag)) < epoch)
      if (sol_now() - start > p.timeout_ns) {
        if (atomicCAS(&p.watchdog->tripped, 0u, 1u) == 0u) {
          p.watchdog->rank = p.rank;
          p.watchdog->block = blockIdx.x;
          p.watchdog->waiting_on_rank = peer;
          p.watchdog->expected = epoch;
          p.watchdog->observed = value;
        }
        return false;
      }
  }
  if (seen)
    *seen = value;
  return true;
}
/// Every block's thread 0: tell each peer's block b that this call (`epoch`) reached here, then
/// wait for theirs.
__device__ void sol_signal_and_wait(const collc_params& p, u64 epoch) {
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
__device__ __forceinline__ u64 sol_head(const collc_params& p) {
  u64 epoch;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];"
               : "=l"(epoch)
               : "l"(p.epochs + blockIdx.x)
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

extern "C" __global__ void sol_empty(const __grid_constant__ collc_params p) {
  SOL_ENTRY
}

extern "C" __global__ void sol_exchange(const __grid_constant__ collc_params p) {
  const u64 epoch = sol_head(p);
  if (threadIdx.x == 0)
    sol_signal_and_wait(p, epoch);
}

/// The exchange, but each flag carries a word of the input read after the wait, as any
/// collective's first data does (the previous kernel may have written it): the flag is the epoch
/// only if the word is the input's pattern, so the store waits for the load. A wrong word makes
/// the flag far from the epoch, which the waiting peer reports. kWrite: then the block stores
/// what it received into its own output (p.out, a word per block), as any collective writes a
/// result that depends on its peers' data; the kernel, and so the next one's wait, ends only once
/// that store is done.
template <bool kWrite>
__device__ __forceinline__ void sol_exchange_read_body(const collc_params& p) {
  const u64 epoch = sol_head(p);
  if (threadIdx.x == 0) {
    const u64 word = __ldcg(static_cast<const u64*>(p.in));
    const u64 flag = epoch ^ (word ^ 0x3f3f3f3f3f3f3f3full);
    for (int q = 0; q < p.nranks; ++q)
      if (q != p.rank)
        sol_store(sol_flag(p, q, blockIdx.x, p.rank), flag);
    u64 received = 0;
    for (int q = 0; q < p.nranks; ++q) {
      if (q == p.rank)
        continue;
      u64 seen = 0;
      if (!sol_wait(p, sol_flag(p, p.rank, blockIdx.x, q), epoch, q, &seen))
        break;
      // The peer is at most one call ahead: a flag past that carried a wrong word. Checked on
      // the value that ended the wait: loading the flag again would add a round trip to L2 to
      // every call, which this floor must not carry.
      if (seen > epoch + 1 && atomicCAS(&p.watchdog->tripped, 0u, 2u) == 0u) {
        p.watchdog->rank = p.rank;
        p.watchdog->waiting_on_rank = q;
        p.watchdog->observed = seen ^ epoch;
      }
      received ^= seen;
    }
    if (kWrite)
      static_cast<u64*>(p.out)[blockIdx.x] = received;
  }
}
extern "C" __global__ void sol_exchange_read(const __grid_constant__ collc_params p) {
  sol_exchange_read_body<false>(p);
}
extern "C" __global__ void sol_exchange_read_write(const __grid_constant__ collc_params p) {
  sol_exchange_read_body<true>(p);
}

/// params.count: bytes this rank sends each peer; params.in: those bytes; the peer's slot for
/// this rank is at scratch_offset[0] + rank * parity_stride in the peer's heap.
__device__ __forceinline__ void sol_copy_to_peers(const collc_params& p) {
  const u64 vectors = p.count / 16;
  const uint4* in = static_cast<const uint4*>(p.in);
  for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += u64(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(in + i);
    for (int q = 0; q < p.nranks; ++q)
      if (q != p.rank)
        reinterpret_cast<uint4*>(p.heap[q] + p.scratch_offset[0] + p.rank * p.parity_stride)[i] = v;
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
__device__ __forceinline__ uint4 sol_load_vector(const uint4* p) {
  uint4 w;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
               : "l"(p)
               : "memory");
  return w;
}
__device__ __forceinline__ bool sol_arrived(uint4 w) {
  return w.x && w.y && w.z && w.w;
}
/// Waits for the vector at p to arrive from `peer`, checks it, hands it over in `got` and puts
/// the sentinel back; false once the watchdog's bound passed or the data is wrong (both recorded
/// for the host).
__device__ bool sol_take_vector(const collc_params& p, uint4* v, int peer, uint4& got) {
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
  got = w;
  return true;
}
/// Two bf16 per word, summed in float and rounded once, as collc's AllReduce of bf16 reduces.
__device__ __forceinline__ unsigned sol_add_bf16x2(unsigned a, unsigned b) {
  const float low = __uint_as_float(a << 16) + __uint_as_float(b << 16);
  const float high = __uint_as_float(a & 0xffff0000u) + __uint_as_float(b & 0xffff0000u);
  unsigned sum;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(sum) : "f"(high), "f"(low));
  return sum;
}
__device__ __forceinline__ uint4 sol_add_bf16(uint4 a, uint4 b) {
  return make_uint4(sol_add_bf16x2(a.x, b.x), sol_add_bf16x2(a.y, b.y), sol_add_bf16x2(a.z, b.z),
                    sol_add_bf16x2(a.w, b.w));
}
/// One record of the trace: when block 0's thread 0 of a call passed each point (globaltimer ns).
struct SolTracePoint {
  u64 epoch, waited, pushed, arrived, ended;
};
/// The same call over the whole grid, one record per block and one per warp, each written by one
/// thread with plain stores once its block is done: the host takes the extremes.
struct SolBlockPoint {
  u64 waited; // thread 0, once the wait returned
  u64 ended;  // once every thread of the block had taken its vectors
};
struct SolWarpPoint {
  u64 lastPushed;   // the warp's threads with vectors: the last to have stored them
  u64 firstArrived; // the first whose vectors from every peer had all landed
  u64 lastArrived;  // the last; all three 0 if no thread of the warp had vectors
};

/// The sentinel copy's slot in rank `owner`'s heap that rank `from` fills in scratch copy `copy`.
__device__ __forceinline__ uint4* sol_sentinel_slot(const collc_params& p, int owner, u64 copy,
                                                    int from) {
  return reinterpret_cast<uint4*>(p.heap[owner] + p.scratch_offset[1] +
                                  (copy * p.nranks + from) * p.parity_stride);
}

/// Every rank stores params.count bytes into every peer; each thread then takes the vectors it
/// expects from every peer. Scratch rotates through three copies by epoch (a peer may be a call
/// ahead), each copy nranks slots of parity_stride bytes at scratch_offset[1].
///
/// kTraced: the call also traces itself at slot (epoch - 1) % capacity, where the capacity is
/// aux[1] (a value, not a pointer): block 0's thread 0 its SolTracePoint in aux[0], every block
/// its SolBlockPoint in aux[2] (capacity x gridDim.x) and every warp its SolWarpPoint in aux[3]
/// (capacity x the grid's warps; blocks are whole warps), after the block's last thread took its
/// vectors. A separate kernel: the timer reads and their ordering cost the untraced copy 0.07 to
/// 0.15 us per call even when a branch skips them.
///
/// kReduce: a one-shot AllReduce of bf16 sum as lean as it can be written by hand. Each thread
/// also adds what it took from every peer to its own vector (its own first, then each peer's in
/// rank order, each add rounded) and stores the sum into p.out (params.count bytes, local). The
/// first of a thread's vectors stays in registers from the push; a later one is read again.
template <bool kTraced, bool kReduce = false>
__device__ __forceinline__ void sol_copy_sentinel_body(const collc_params& p) {
  const u64 epoch = sol_head(p);
  const bool tracingBlock0 = kTraced && blockIdx.x == 0 && threadIdx.x == 0;
  SolTracePoint point;
  u64 waited = 0, pushed = 0;
  if (kTraced)
    waited = point.waited = sol_now();
  const u64 copy = epoch % 3;
  const u64 vectors = p.count / 16;
  const uint4* in = static_cast<const uint4*>(p.in);
  const u64 first = u64(blockIdx.x) * blockDim.x + threadIdx.x;
  const u64 stride = u64(gridDim.x) * blockDim.x;
  uint4 firstOwn = make_uint4(0, 0, 0, 0);
  for (u64 i = first; i < vectors; i += stride) {
    const uint4 v = __ldcg(in + i);
    if (kReduce && i == first)
      firstOwn = v;
    for (int q = 0; q < p.nranks; ++q)
      if (q != p.rank)
        sol_sentinel_slot(p, q, copy, p.rank)[i] = v;
  }
  if (kTraced)
    pushed = point.pushed = sol_now();
  bool ok = true;
  for (u64 i = first; ok && i < vectors; i += stride) {
    uint4 sum = make_uint4(0, 0, 0, 0);
    if (kReduce)
      sum = i == first ? firstOwn : __ldcg(in + i);
    for (int q = 0; ok && q < p.nranks; ++q)
      if (q != p.rank) {
        uint4 got;
        ok = sol_take_vector(p, sol_sentinel_slot(p, p.rank, copy, q) + i, q, got);
        if (kReduce)
          sum = sol_add_bf16(sum, got);
      }
    if (kReduce && ok)
      static_cast<uint4*>(p.out)[i] = sum;
  }
  if (!kTraced)
    return;
  const u64 arrived = sol_now();
  point.arrived = arrived;
  point.epoch = epoch;
  point.ended = sol_now();
  // Every record is written after the block's threads are all done: the trace's own work comes
  // after every time the call measures, and no thread waits in a warp's reduction for another.
  __syncthreads();
  const u64 blockEnded = sol_now();
  const u64 slot = (epoch - 1) % reinterpret_cast<u64>(p.aux[1]);
  if (tracingBlock0)
    static_cast<SolTracePoint*>(p.aux[0])[slot] = point;
  if (threadIdx.x == 0)
    static_cast<SolBlockPoint*>(p.aux[2])[slot * gridDim.x + blockIdx.x] = {waited, blockEnded};
  // The warp's extremes on 32-bit offsets from lane 0's wait (the warp passed it together).
  const bool took = first < vectors;
  const u64 base = __shfl_sync(0xffffffffu, waited, 0);
  const unsigned lastPushed = __reduce_max_sync(0xffffffffu, took ? unsigned(pushed - base) : 0u);
  const unsigned firstArrived =
      __reduce_min_sync(0xffffffffu, took ? unsigned(arrived - base) : ~0u);
  const unsigned lastArrived = __reduce_max_sync(0xffffffffu, took ? unsigned(arrived - base) : 0u);
  const bool any = __any_sync(0xffffffffu, took);
  if (threadIdx.x % 32 == 0) {
    const u64 warps = u64(gridDim.x) * (blockDim.x / 32);
    SolWarpPoint& record = static_cast<SolWarpPoint*>(
        p.aux[3])[slot * warps + u64(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32];
    record = any ? SolWarpPoint{base + lastPushed, base + firstArrived, base + lastArrived}
                 : SolWarpPoint{0, 0, 0};
  }
}
extern "C" __global__ void sol_copy_sentinel(const __grid_constant__ collc_params p) {
  sol_copy_sentinel_body<false>(p);
}
extern "C" __global__ void sol_copy_sentinel_traced(const __grid_constant__ collc_params p) {
  sol_copy_sentinel_body<true>(p);
}
extern "C" __global__ void sol_allreduce_sentinel(const __grid_constant__ collc_params p) {
  sol_copy_sentinel_body<false, true>(p);
}
