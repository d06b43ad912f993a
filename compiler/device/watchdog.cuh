// The watchdog. Every poll loop reads the clock once every 1024 polls only, so the fast path
// costs a compare; past params.timeout_ns (or once another waiter of this rank has given up) the
// first waiter records where it was waiting, and every waiter returns instead of hanging the GPU.

__device__ __forceinline__ u64 global_timer_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Where a poll waits, for the watchdog's record.
struct PollSite {
  int step;
  int sync_point; // barrier index, or -1 for a data poll
  int peer;       // the rank expected to signal, -1 if not known
  int buffer;     // data polls: scratch buffer index, else -1
  long long slot;
};

// Called every 1024 polls: true once this poll must give up. Not inlined: it is off the fast
// path of every poll loop.
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
