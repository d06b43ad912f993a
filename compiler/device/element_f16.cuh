// f16 elements. Bits is an element's storage; arithmetic converts it to float and back, with
// the PTX conversions (available on every architecture collc targets).
typedef unsigned short Bits;

__device__ __forceinline__ float to_float(Bits b) {
  float x;
  asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(b));
  return x;
}
// Rounded to nearest even, once.
__device__ __forceinline__ Bits from_float(float x) {
  Bits b;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(x));
  return b;
}

// One element added with the GPU's atomic add: atom at a generic address, the instruction of
// the toolkit's atomicAdd on __half, whose result goes unused.
__device__ __forceinline__ void atomic_add_element(Bits* p, Bits b) {
  [[maybe_unused]] Bits old;
  asm volatile("atom.add.noftz.f16 %0, [%1], %2;" : "=h"(old) : "l"(p), "h"(b) : "memory");
}

// 16 bytes added with one vector atomic (sm_90 and newer), at system scope: peers add over
// NVLink.
__device__ __forceinline__ void red_add_v4(Bits* p, uint4 w) {
  asm volatile("red.relaxed.sys.global.add.noftz.v4.f16x2 [%0], {%1, %2, %3, %4};" ::"l"(p),
               "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w)
               : "memory");
}
