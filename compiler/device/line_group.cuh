// Line groups: 8 threads of a warp that move one 128-byte line together, 16 bytes each (the
// accumulation lines of ll128_atomic, the lines of ll128). An enumerator, not a constexpr
// variable: those become global variables in the PTX.
enum : unsigned { kLineThreads = 8 };

// This thread's place in its line group, 0 to 7.
__device__ __forceinline__ unsigned line_lane() {
  return threadIdx.x % kLineThreads;
}

// The warp mask of this thread's line group, for the warp operations its threads do together.
__device__ __forceinline__ unsigned line_group_mask() {
  return 0xffu << ((threadIdx.x % 32) & ~(kLineThreads - 1));
}
