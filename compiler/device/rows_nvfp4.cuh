// A row's float values stored as NVFP4 (quant_nvfp4.cuh's arithmetic, pasted before it) from the
// row loops the code generator prints: thread t of a block handles vectors t, t + kThreads, ... of
// the row, kVec elements each. So the 16 elements of an NVFP4 block are 16 / kVec adjacent lanes
// of one warp, and those lanes are all in the row or all past its end when the row is a whole
// number of blocks (kHidden % 16 == 0, which the caller must ensure). The lanes of a block
// combine their amax among themselves; each stores its own bytes (where kVec is 1, the even lane
// the byte of two), and the block's first lane stores its scale.
static_assert(16 % kVec == 0, "an NVFP4 block is a whole number of vectors");
static_assert(kHidden % 16 == 0, "NVFP4 rows are a whole number of 16-element blocks");

constexpr int kNvfp4Lanes = 16 / kVec;
constexpr u64 kNvfp4BlocksPerRow = kHidden / 16;

// The lanes of the calling thread's NVFP4 block.
__device__ __forceinline__ unsigned nvfp4_block_lanes() {
  const unsigned first = (threadIdx.x % 32) & ~unsigned(kNvfp4Lanes - 1);
  return (kNvfp4Lanes == 32 ? 0xffffffffu : (1u << kNvfp4Lanes) - 1u) << first;
}

// Stores the vector x, elements col .. col + kVec - 1 of row `row`, into the row's packed bytes
// (element k at packed_row[k / 2], the even one in the low nibble) and its block's scale into
// `scales`: row * (kHidden / 16) + block, or the 128x4-swizzled offset with kSwizzledScales. Every
// lane of the block must call it.
template <bool kSwizzledScales>
__device__ __forceinline__ void nvfp4_store_vector(unsigned char* packed_row, unsigned char* scales,
                                                   u64 row, u64 col, const float (&x)[kVec],
                                                   float global_scale) {
  unsigned amax = 0;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    amax = nvfp4_amax_with(amax, x[e]);
  const unsigned lanes = nvfp4_block_lanes();
#pragma unroll
  for (int offset = 1; offset < kNvfp4Lanes; offset <<= 1) {
    const unsigned other = __shfl_xor_sync(lanes, amax, offset);
    amax = other > amax ? other : amax;
  }
  const unsigned scale = nvfp4_block_scale(amax, global_scale);
  const float factor = nvfp4_block_factor(scale, global_scale);
  if (col % 16 == 0) {
    const u64 block = col / 16;
    scales[kSwizzledScales ? nvfp4_swizzled_offset(row, block, kNvfp4BlocksPerRow)
                           : row * kNvfp4BlocksPerRow + block] = (unsigned char)scale;
  }
  if (kVec == 1) {
    const unsigned code = nvfp4_quantize_pair(x[0], 0.0f, factor) & 0xfu;
    const unsigned odd = __shfl_xor_sync(lanes, code, 1);
    if (col % 2 == 0)
      packed_row[col / 2] = (unsigned char)(code | (odd << 4));
    return;
  }
  unsigned bytes = 0;
#pragma unroll
  for (int e = 0; e + 1 < kVec; e += 2)
    bytes |= nvfp4_quantize_pair(x[e], x[e + 1], factor) << (4 * e);
  // One store of kVec / 2 bytes, aligned as col is a multiple of kVec.
  if (kVec == 2)
    packed_row[col / 2] = (unsigned char)bytes;
  else if (kVec == 4)
    *reinterpret_cast<unsigned short*>(packed_row + col / 2) = (unsigned short)bytes;
  else
    *reinterpret_cast<unsigned*>(packed_row + col / 2) = bytes;
}
