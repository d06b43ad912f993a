// Chunks: `length` elements split into kRanks chunks, as the spec's chunk(k) means.

__device__ __forceinline__ u64 min_u64(u64 a, u64 b) {
  return a < b ? a : b;
}

// A spec's ceil_div(a, b) and round_up(a, b) in sizes (b > 0: Sema and the verifier say so).
__device__ __forceinline__ u64 ceil_div_u64(u64 a, u64 b) {
  return (a + b - 1) / b;
}
__device__ __forceinline__ u64 round_up_u64(u64 a, u64 b) {
  return ceil_div_u64(a, b) * b;
}

// ceil(length / kRanks) rounded up to kChunkAlign elements (ir::ExprNode::chunkSize), so that
// every chunk starts 16-byte aligned whatever the element type.
__device__ __forceinline__ u64 chunk_size(u64 length) {
  return ((length + kRanks - 1) / kRanks + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
}
// First element and length of chunk k.
__device__ __forceinline__ u64 chunk_begin(u64 length, u64 k) {
  return min_u64(length, k * chunk_size(length));
}
__device__ __forceinline__ u64 chunk_len(u64 length, u64 k) {
  return min_u64(length, (k + 1) * chunk_size(length)) - chunk_begin(length, k);
}
