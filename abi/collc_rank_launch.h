// One launch that runs every rank of a world on one GPU: the argument of a kernel's second entry
// point, `extern "C" __global__ void <kernel>_ranks(collc_rank_launch)`, which the code generator
// prints only when asked (CompileOptions::rankLaunchEntry) and pastes this file before. Its grid
// is kBlocks x nranks: blockIdx.y is the rank, blockIdx.x the block within it, so the kernel's
// body runs unchanged (runtime/RankLaunch.h says why one launch is needed past 32 ranks).
//
// Plain C, like collc_abi.h, which must come first. At 72 ranks it is about 6.5 KB: kernel
// parameters past 4 KB need sm_70 or later and CUDA 12.1 (runtime/RankLaunch.h checks both).
#ifndef COLLC_RANK_LAUNCH_H
#define COLLC_RANK_LAUNCH_H

#ifndef COLLC_ABI_H
#error "collc_abi.h must come before collc_rank_launch.h"
#endif

// What differs from rank to rank in a world whose ranks share one GPU (and so one address space:
// every rank sees every heap at the same address).
struct collc_rank_call {
  const void* in;
  void* out;
  void* aux[COLLC_MAX_AUX];
  unsigned long long* epochs;
  struct collc_watchdog* watchdog;
};

struct collc_rank_launch {
  // Every rank's parameters but `rank` and the fields of collc_rank_call.
  struct collc_params common;
  struct collc_rank_call ranks[COLLC_MAX_RANKS];
};

#endif // COLLC_RANK_LAUNCH_H
