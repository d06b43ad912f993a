// f32 elements. Bits is an element's storage; arithmetic converts it to float and back.
typedef unsigned int Bits;

__device__ __forceinline__ float to_float(Bits b) {
  return __uint_as_float(b);
}
__device__ __forceinline__ Bits from_float(float x) {
  return __float_as_uint(x);
}

// One element added with the GPU's atomic add.
__device__ __forceinline__ void atomic_add_element(Bits* p, Bits b) {
  atomicAdd(reinterpret_cast<float*>(p), __uint_as_float(b));
}

// 16 bytes added with one vector atomic (sm_90 and newer), at system scope: peers add over
// NVLink.
__device__ __forceinline__ void red_add_v4(Bits* p, uint4 w) {
  asm volatile("red.relaxed.sys.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p),
               "f"(__uint_as_float(w.x)), "f"(__uint_as_float(w.y)), "f"(__uint_as_float(w.z)),
               "f"(__uint_as_float(w.w))
               : "memory");
}
