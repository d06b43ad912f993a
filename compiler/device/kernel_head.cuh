// Every kernel's head, after it has read the epoch of this call (load_epoch of its block's counter
// plus one, the number that names the call in every flag it writes): thread 0 stores the epoch
// back, then, with programmatic dependent launch, the block waits for the previous kernel and
// thread 0 lets the next one start. The code generator calls it first thing, with the variant's
// launch (CodeGenTarget::programmaticLaunch).
//
// Each call stores its epoch at its head, before the next kernel can be scheduled, instead of at
// its end: so the next call can read it before its own griddepcontrol.wait, while the previous
// kernel still runs, and the flags and scratch addresses that depend on it are ready when the
// wait returns. What makes the early read see the previous call's store: that call fenced the
// store before its thread 0 (and only it) let the next kernel be scheduled; with other kernels
// between two calls, each of them was scheduled after the one before it let it.

// params: the kernel's own (__grid_constant__, read where it lies).
template <bool kProgrammaticLaunch>
__device__ __forceinline__ void call_head(const collc_params& params, u64 epoch) {
  // Every thread of the block has read the epoch before thread 0 overwrites it.
  if (kThreads > 32)
    __syncthreads();
  else
    __syncwarp();
  if (threadIdx.x == 0) {
    store_epoch(params.epochs + blockIdx.x, epoch);
    // Performed before the next kernel may start, which reads the epoch early.
    if (kProgrammaticLaunch)
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
  // Programmatic dependent launch: wait for the previous kernel, then let the next start. Only
  // sm_90 and later have it; older GPUs are launched without it, in stream order.
#if __CUDA_ARCH__ >= 900
  if (kProgrammaticLaunch) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (threadIdx.x == 0)
      asm volatile("griddepcontrol.launch_dependents;");
  }
#endif
}
