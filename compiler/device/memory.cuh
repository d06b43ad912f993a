// Memory operations written in PTX, for what plain C++ loads and stores cannot say: a memory
// order and scope (flags and epochs), or a load that bypasses every cache (polls).

// PTX memory orders and scopes, as template arguments of the loads and stores below.
enum class Order { Relaxed, Acquire, Release };
enum class Scope { Gpu, Sys };

// A 64-bit load with the given order (relaxed or acquire) and scope.
template <Order kOrder, Scope kScope> __device__ __forceinline__ u64 load_u64(const u64* p) {
  static_assert(kOrder != Order::Release, "a load is relaxed or acquire");
  u64 v;
#define COLLC_LOAD_U64(qualifiers)                                                                 \
  asm volatile("ld." qualifiers ".global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory")
  if constexpr (kOrder == Order::Relaxed && kScope == Scope::Gpu)
    COLLC_LOAD_U64("relaxed.gpu");
  else if constexpr (kOrder == Order::Relaxed)
    COLLC_LOAD_U64("relaxed.sys");
  else if constexpr (kScope == Scope::Gpu)
    COLLC_LOAD_U64("acquire.gpu");
  else
    COLLC_LOAD_U64("acquire.sys");
#undef COLLC_LOAD_U64
  return v;
}

// A 64-bit store with the given order (relaxed or release) and scope.
template <Order kOrder, Scope kScope> __device__ __forceinline__ void store_u64(u64* p, u64 v) {
  static_assert(kOrder != Order::Acquire, "a store is relaxed or release");
#define COLLC_STORE_U64(qualifiers)                                                                \
  asm volatile("st." qualifiers ".global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory")
  if constexpr (kOrder == Order::Relaxed && kScope == Scope::Gpu)
    COLLC_STORE_U64("relaxed.gpu");
  else if constexpr (kOrder == Order::Relaxed)
    COLLC_STORE_U64("relaxed.sys");
  else if constexpr (kScope == Scope::Gpu)
    COLLC_STORE_U64("release.gpu");
  else
    COLLC_STORE_U64("release.sys");
#undef COLLC_STORE_U64
}

// The block's epoch counter, read and written at the kernel's head at gpu scope: the next call
// reads it before it waits for the previous kernel, a wait that orders nothing before it.
__device__ __forceinline__ u64 load_epoch(const u64* p) {
  return load_u64<Order::Relaxed, Scope::Gpu>(p);
}
__device__ __forceinline__ void store_epoch(u64* p, u64 v) {
  store_u64<Order::Relaxed, Scope::Gpu>(p, v);
}

// Loads that bypass the caches every time: a poll must see a peer's store when it lands.
__device__ __forceinline__ void load_volatile(uint4& w, const void* p) {
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
               : "l"(p)
               : "memory");
}
__device__ __forceinline__ void load_volatile(uint2& w, const void* p) {
  asm volatile("ld.volatile.global.v2.u32 {%0, %1}, [%2];"
               : "=r"(w.x), "=r"(w.y)
               : "l"(p)
               : "memory");
}
__device__ __forceinline__ void load_volatile(unsigned& w, const void* p) {
  asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(w) : "l"(p) : "memory");
}
__device__ __forceinline__ void load_volatile(unsigned short& w, const void* p) {
  asm volatile("ld.volatile.global.u16 %0, [%1];" : "=h"(w) : "l"(p) : "memory");
}

// 16 bytes in one store that bypasses the caches: data and its flag land together (LL, LL128).
__device__ __forceinline__ void store_volatile(void* p, uint4 w) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w.x), "r"(w.y),
               "r"(w.z), "r"(w.w)
               : "memory");
}
