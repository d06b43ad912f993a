// bf16 elements. Bits is an element's storage; arithmetic converts it to float and back, with
// the PTX conversions. The float-to-bf16 conversion needs sm_80.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "bf16 kernels need sm_80 or newer (cvt.rn.bf16.f32)"
#endif
typedef unsigned short Bits;

// sm_90 converts with one instruction; before it, a bf16 is the high half of a float.
__device__ __forceinline__ float to_float(Bits b) {
  float x;
#if __CUDA_ARCH__ >= 900
  asm("cvt.f32.bf16 %0, %1;" : "=f"(x) : "h"(b));
#else
  asm("mov.b32 %0, {0, %1};" : "=f"(x) : "h"(b));
#endif
  return x;
}
// Rounded to nearest even, once.
__device__ __forceinline__ Bits from_float(float x) {
  Bits b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(x));
  return b;
}

// One element added with the GPU's atomic add: atom at a generic address, the instruction of
// the toolkit's atomicAdd on __nv_bfloat16, whose result goes unused.
// Before sm_90 there is no bf16 atomic add: a compare-and-swap loop whose sum is rounded once,
// as add.bf16 rounds it (fma by 1.0: sm_80 has no add.bf16).
__device__ __forceinline__ void atomic_add_element(Bits* p, Bits b) {
#if __CUDA_ARCH__ >= 900
  [[maybe_unused]] Bits old;
  asm volatile("atom.add.noftz.bf16 %0, [%1], %2;" : "=h"(old) : "l"(p), "h"(b) : "memory");
#else
  Bits old = *p, assumed;
  do {
    assumed = old;
    Bits sum;
    asm("{.reg .b16 one;\n"
        "  mov.b16 one, 0x3f80U;\n"
        "  fma.rn.bf16 %0, %1, one, %2;}"
        : "=h"(sum)
        : "h"(b), "h"(assumed));
    old = atomicCAS(p, assumed, sum);
  } while (assumed != old);
#endif
}

// 16 bytes added with one vector atomic (sm_90 and newer), at system scope: peers add over
// NVLink.
__device__ __forceinline__ void red_add_v4(Bits* p, uint4 w) {
  asm volatile("red.relaxed.sys.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};" ::"l"(p),
               "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w)
               : "memory");
}
