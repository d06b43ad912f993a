// compiler/device/rows_nvfp4.cuh compiled for the host and run by host threads that stand in for a
// block's lanes, with a __shfl_xor_sync that exchanges values among the lanes it names: the row
// loop as the code generator prints it, for every vector width, a row length whose last pass
// leaves most lanes idle, and both scale layouts. Every block's bytes and scale must be exactly
// those of the same float arithmetic run on the block serially (quant_nvfp4.cuh), so the lanes
// share the right amax and store where they should. The GPU runs the same in tests/gpu.
#include "compiler/interpret/Float4.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <gtest/gtest.h>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#define __host__
#define __device__
#define __forceinline__ inline

namespace collc::rows_emulation {

typedef unsigned long long u64;

/// The lane a host thread stands in for.
struct ThreadIndex {
  unsigned x = 0;
};
thread_local ThreadIndex threadIdx;

/// The lanes of one NVFP4 block meeting at each shuffle: each posts its value, all wait, each takes
/// its partner's, all wait again so that no value is overwritten before it is read.
class LaneExchange {
public:
  explicit LaneExchange(unsigned lanes, unsigned mask) : lanes_(lanes), mask_(mask) {}

  unsigned shuffleXor(unsigned mask, unsigned value, int offset) {
    if (mask != mask_)
      wrongMasks_ = true;
    const unsigned lane = threadIdx.x % 32;
    values_[lane] = value;
    wait();
    const unsigned other = values_[lane ^ unsigned(offset)];
    wait();
    return other;
  }
  bool wrongMasks() const { return wrongMasks_.load(); }

private:
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const unsigned generation = generation_;
    if (++arrived_ == lanes_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return generation_ != generation; });
  }

  const unsigned lanes_, mask_;
  unsigned values_[32] = {};
  std::mutex mutex_;
  std::condition_variable changed_;
  unsigned arrived_ = 0, generation_ = 0;
  std::atomic<bool> wrongMasks_{false};
};
LaneExchange* exchange = nullptr;

unsigned __shfl_xor_sync(unsigned mask, unsigned value, int offset) {
  return exchange->shuffleXor(mask, value, offset);
}

// One namespace per vector width: the constants the code generator prints, then the files.
#define COLLC_ROWS_CONSTANTS                                                                       \
  [[maybe_unused]] constexpr int kThreads = 64;                                                    \
  [[maybe_unused]] constexpr u64 kHidden = 2064; /* the last pass: 16 elements */
namespace vec1 {
constexpr int kVec = 1;
COLLC_ROWS_CONSTANTS
#include "compiler/device/fp8_e4m3.cuh"
#include "compiler/device/quant_nvfp4.cuh"
#include "compiler/device/rows_nvfp4.cuh"
} // namespace vec1
namespace vec2 {
constexpr int kVec = 2;
COLLC_ROWS_CONSTANTS
#include "compiler/device/fp8_e4m3.cuh"
#include "compiler/device/quant_nvfp4.cuh"
#include "compiler/device/rows_nvfp4.cuh"
} // namespace vec2
namespace vec4 {
constexpr int kVec = 4;
COLLC_ROWS_CONSTANTS
#include "compiler/device/fp8_e4m3.cuh"
#include "compiler/device/quant_nvfp4.cuh"
#include "compiler/device/rows_nvfp4.cuh"
} // namespace vec4
namespace vec8 {
constexpr int kVec = 8;
COLLC_ROWS_CONSTANTS
#include "compiler/device/fp8_e4m3.cuh"
#include "compiler/device/quant_nvfp4.cuh"
#include "compiler/device/rows_nvfp4.cuh"
} // namespace vec8
#undef COLLC_ROWS_CONSTANTS

/// The rows quantized as a kernel's row loops do: for each row and each block of lanes, one host
/// thread per lane running the loop over that lane's vectors.
template <int kVec, int kThreads, u64 kHidden, bool kSwizzled, typename StoreVector>
void runRows(const std::vector<float>& x, u64 rows, float globalScale, StoreVector storeVector,
             std::vector<uint8_t>& packed, std::vector<uint8_t>& scales, bool& wrongMasks) {
  constexpr unsigned lanes = 16 / kVec;
  for (u64 row = 0; row < rows; ++row)
    for (unsigned first = 0; first < unsigned(kThreads); first += lanes) {
      LaneExchange laneExchange(lanes, ((1u << lanes) - 1u) << (first % 32));
      exchange = &laneExchange;
      std::vector<std::thread> threads;
      for (unsigned lane = first; lane < first + lanes; ++lane)
        threads.emplace_back([&, lane] {
          threadIdx.x = lane;
          const u64 row_begin = row * kHidden, row_end = row_begin + kHidden;
          for (u64 i = row_begin + threadIdx.x * kVec; i < row_end; i += kThreads * kVec) {
            float v[kVec];
            for (int e = 0; e < kVec; ++e)
              v[e] = x[i + e];
            storeVector(packed.data() + row_begin / 2, scales.data(), row, i - row_begin, v,
                        globalScale);
          }
        });
      for (std::thread& thread : threads)
        thread.join();
      wrongMasks = wrongMasks || laneExchange.wrongMasks();
    }
  exchange = nullptr;
}

template <int kVec, bool kSwizzled, typename StoreVector>
void expectRowsAsSerialBlocks(StoreVector storeVector) {
  constexpr u64 kHidden = 2064, kBlocksPerRow = kHidden / 16, rows = 3;
  std::mt19937_64 random(kVec * 2 + kSwizzled);
  std::normal_distribution<double> values(0.0, 1.0);
  std::vector<float> x(rows * kHidden);
  for (float& v : x)
    v = float(values(random) * 10);
  x[7] = -INFINITY;
  for (u64 i = kHidden; i < kHidden + 16; ++i)
    x[i] = 0.0f;
  const float globalScale = 448.0f * 6.0f / 40.0f;
  std::vector<uint8_t> packed(rows * kHidden / 2, 0xee),
      scales(nvfp4SwizzledBytes(rows, kBlocksPerRow), 0xee);
  bool wrongMasks = false;
  runRows<kVec, 64, kHidden, kSwizzled>(x, rows, globalScale, storeVector, packed, scales,
                                        wrongMasks);
  EXPECT_FALSE(wrongMasks) << "a shuffle named lanes other than its block's";
  // The same arithmetic, one block at a time (vec8's copy of quant_nvfp4.cuh: every copy is the
  // same code).
  for (u64 row = 0; row < rows; ++row)
    for (u64 block = 0; block < kBlocksPerRow; ++block) {
      const float* v = x.data() + row * kHidden + block * 16;
      unsigned amax = 0;
      for (int e = 0; e < 16; ++e)
        amax = vec8::nvfp4_amax_with(amax, v[e]);
      const unsigned scale = vec8::nvfp4_block_scale(amax, globalScale);
      const float factor = vec8::nvfp4_block_factor(scale, globalScale);
      const u64 at =
          kSwizzled ? nvfp4SwizzledOffset(row, block, kBlocksPerRow) : row * kBlocksPerRow + block;
      ASSERT_EQ(scales[at], scale) << "kVec " << kVec << " row " << row << " block " << block;
      for (int e = 0; e < 16; e += 2)
        ASSERT_EQ(packed[(row * kHidden + block * 16 + e) / 2],
                  vec8::nvfp4_quantize_pair(v[e], v[e + 1], factor))
            << "kVec " << kVec << " row " << row << " block " << block << " element " << e;
    }
}

#define COLLC_STORE_VECTOR(NS, SWIZZLED)                                                           \
  [](unsigned char* packed_row, unsigned char* scales, u64 row, u64 col,                           \
     const float(&v)[NS::kVec],                                                                    \
     float g) { NS::nvfp4_store_vector<SWIZZLED>(packed_row, scales, row, col, v, g); }

TEST(Nvfp4RowsEmulated, LanesOfEveryVectorWidthStoreTheirBlocksAsTheSerialArithmetic) {
  expectRowsAsSerialBlocks<1, false>(COLLC_STORE_VECTOR(vec1, false));
  expectRowsAsSerialBlocks<2, false>(COLLC_STORE_VECTOR(vec2, false));
  expectRowsAsSerialBlocks<4, false>(COLLC_STORE_VECTOR(vec4, false));
  expectRowsAsSerialBlocks<8, false>(COLLC_STORE_VECTOR(vec8, false));
  expectRowsAsSerialBlocks<1, true>(COLLC_STORE_VECTOR(vec1, true));
  expectRowsAsSerialBlocks<2, true>(COLLC_STORE_VECTOR(vec2, true));
  expectRowsAsSerialBlocks<4, true>(COLLC_STORE_VECTOR(vec4, true));
  expectRowsAsSerialBlocks<8, true>(COLLC_STORE_VECTOR(vec8, true));
}
#undef COLLC_STORE_VECTOR

} // namespace collc::rows_emulation
