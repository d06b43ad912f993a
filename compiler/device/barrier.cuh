// The barrier strategy: flags between steps. flags[b * kRanks + r] on a rank holds the last value
// block b of rank r signalled; values grow with the epoch, so no flag is ever reset.

// A flag is released at system scope (it tells peers on other GPUs that this block's writes are
// done) and acquired likewise.
__device__ __forceinline__ void store_flag_release(u64* flag, u64 value) {
  store_u64<Order::Release, Scope::Sys>(flag, value);
}
__device__ __forceinline__ u64 load_flag_acquire(const u64* flag) {
  return load_u64<Order::Acquire, Scope::Sys>(flag);
}

// Polls *flag until it reaches `expected` (or the watchdog gives up).
__device__ __forceinline__ void wait_flag(const collc_params& params, const u64* flag, u64 expected,
                                          const PollSite& site, u64 epoch) {
  u64 start = 0;
  unsigned spins = 0;
  for (u64 observed = load_flag_acquire(flag); observed < expected;
       observed = load_flag_acquire(flag))
    if (kWatchdog && (++spins & 1023u) == 0 &&
        poll_expired(params, start, site, -1, epoch, expected, observed))
      return;
}

__device__ __forceinline__ u64* flags_of(const collc_params& params, int owner) {
  return reinterpret_cast<u64*>(params.heap[owner] + params.flags_offset);
}

// The barrier before a step, at one of two scopes:
//  - matched (kFull false): block b waits only for block b of each peer (it reads only what they
//    wrote);
//  - full (kFull true): every block waits for every block of every rank, itself included.
// The release store is cumulative over the block's writes, which __syncthreads orders before it.
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
