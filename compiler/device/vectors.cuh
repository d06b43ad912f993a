// Vectors of kVec elements: what one thread moves per loop iteration, in one memory operation
// when it can, and the plain loads and stores of them.

union Vec {
  Word word;
  Bits bits[kVec];
};

__device__ __forceinline__ bool aligned(const void* p) {
  return reinterpret_cast<u64>(p) % sizeof(Word) == 0;
}

// p[i, i + kVec) clipped to len; lanes past len read as zero. Loads go through L2
// (ld.global.cg): the data may have been written by other GPUs or other blocks, and this SM's L1
// must not serve an older copy of it.
__device__ __forceinline__ Vec load_plain(const Bits* p, u64 i, u64 len) {
  Vec v;
  if (i + kVec <= len && aligned(p + i)) {
    v.word = __ldcg(reinterpret_cast<const Word*>(p + i));
    return v;
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    v.bits[e] = i + e < len ? __ldcg(p + i + e) : Bits(0);
  return v;
}

// p[i, i + kVec) clipped to len. A whole vector: with kWholeStores one store instruction of its
// width; without, the plain store, which NVVM splits into 32-bit stores when the vector came
// from load_plain (whose two paths meet in the union). Neither is faster at every size: the
// tuner picks (launch knob whole_stores).
__device__ __forceinline__ void store_plain(Bits* p, u64 i, u64 len, const Vec& v) {
  if (i + kVec <= len && aligned(p + i)) {
    if (kWholeStores)
      __stwb(reinterpret_cast<Word*>(p + i), v.word);
    else
      *reinterpret_cast<Word*>(p + i) = v.word;
    return;
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    if (i + e < len)
      p[i + e] = v.bits[e];
}

// p[i + e] += v.bits[e] with the GPU's atomic add, for the lanes below len.
__device__ __forceinline__ void atomic_add_plain(Bits* p, u64 i, u64 len, const Vec& v) {
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    if (i + e < len)
      atomic_add_element(p + i + e, v.bits[e]);
}
