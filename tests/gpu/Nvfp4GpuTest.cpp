// compiler/device/quant_nvfp4.cuh run on GPU 0 against the float64 reference (compiler/interpret/
// Float4.h, Float8.h): the conversions on every float of the ranges where they round, with the
// instructions the GPU's architecture has (and, on the sm_100 to sm_120 families, also compiled
// for the family, so that the e2m1 instruction runs); and whole rows of bf16 values quantized in
// blocks, their scales written linearly and swizzled; and rows_nvfp4.cuh's row loops. Bits must
// agree except where the float64 value of a scale or an element lies within the float computation's
// error of a rounding boundary; those are counted and printed.
#include "GpuTestMain.h"
#include "compiler/CudaCodeGen.h"
#include "compiler/DevicePrelude.h"
#include "compiler/interpret/Float4.h"
#include "compiler/interpret/Float8.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "runtime/LoadedKernel.h"
#include "runtime/LocalWorld.h"

#include <cmath>
#include <cstring>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace collc {
namespace {

/// The kernels: conversions of a range of floats, and a matrix quantized one block per thread.
std::string kernelSource(uint64_t blocksPerRow) {
  return std::string(kernelAbiHeader()) + deviceFile("fp8_e4m3.cuh") +
         deviceFile("quant_nvfp4.cuh") +
         fmt::format(R"cuda(
typedef unsigned long long u64;
constexpr u64 kBlocksPerRow = {};

// Float i of the range is range[0] + i * range[1] as bits: 4 bytes each, the e2m1 pair (x, -x),
// x's and -x's e4m3, and the pair (-x, x).
extern "C" __global__ void nvfp4_conversions(const __grid_constant__ collc_params params) {{
  const unsigned* range = static_cast<const unsigned*>(params.in);
  unsigned char* out = static_cast<unsigned char*>(params.out);
  for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < params.count;
       i += u64(gridDim.x) * blockDim.x) {{
    const float x = __uint_as_float(range[0] + unsigned(i) * range[1]);
    out[4 * i] = (unsigned char)nvfp4_e2m1x2(x, -x);
    out[4 * i + 1] = (unsigned char)nvfp4_e4m3(x);
    out[4 * i + 2] = (unsigned char)nvfp4_e4m3(-x);
    out[4 * i + 3] = (unsigned char)nvfp4_e2m1x2(-x, x);
  }}
}}

// Block b of params.count: 16 floats of params.in, its 8 bytes in params.out, its scale in
// aux[1] (linear) and aux[2] (swizzled); the global scale is aux[0]'s float.
extern "C" __global__ void nvfp4_blocks(const __grid_constant__ collc_params params) {{
  const u64 b = u64(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= params.count)
    return;
  const float* x = static_cast<const float*>(params.in) + b * 16;
  const float global_scale = *static_cast<const float*>(params.aux[0]);
  unsigned amax = 0;
  for (int e = 0; e < 16; ++e)
    amax = nvfp4_amax_with(amax, x[e]);
  const unsigned scale = nvfp4_block_scale(amax, global_scale);
  const float factor = nvfp4_block_factor(scale, global_scale);
  for (int e = 0; e < 16; e += 2)
    static_cast<unsigned char*>(params.out)[b * 8 + e / 2] =
        (unsigned char)nvfp4_quantize_pair(x[e], x[e + 1], factor);
  static_cast<unsigned char*>(params.aux[1])[b] = (unsigned char)scale;
  static_cast<unsigned char*>(params.aux[2])[nvfp4_swizzled_offset(
      b / kBlocksPerRow, b % kBlocksPerRow, kBlocksPerRow)] = (unsigned char)scale;
}}
)cuda",
                     blocksPerRow);
}

/// A row loop as the code generator prints it, calling rows_nvfp4.cuh: rows of kHidden floats, one
/// block per row, kThreads threads of kVec elements; scales linear, or swizzled with `swizzled`.
std::string rowsSource(int vec, int threads, uint64_t hidden, bool swizzled) {
  return std::string(kernelAbiHeader()) +
         fmt::format("typedef unsigned long long u64;\n"
                     "constexpr int kVec = {};\n"
                     "constexpr int kThreads = {};\n"
                     "constexpr u64 kHidden = {};\n",
                     vec, threads, hidden) +
         deviceFile("fp8_e4m3.cuh") + deviceFile("quant_nvfp4.cuh") + deviceFile("rows_nvfp4.cuh") +
         fmt::format(R"cuda(
extern "C" __global__ void nvfp4_rows(const __grid_constant__ collc_params params) {{
  const float* in = static_cast<const float*>(params.in);
  unsigned char* packed = static_cast<unsigned char*>(params.out);
  const float global_scale = *static_cast<const float*>(params.aux[0]);
  unsigned char* scales = static_cast<unsigned char*>(params.aux[1]);
  for (u64 row = blockIdx.x; row < params.count; row += gridDim.x) {{
    const u64 row_begin = row * kHidden, row_end = row_begin + kHidden;
    for (u64 i = row_begin + threadIdx.x * kVec; i < row_end; i += kThreads * kVec) {{
      float x[kVec];
      for (int e = 0; e < kVec; ++e)
        x[e] = in[i + e];
      nvfp4_store_vector<{}>(packed + row_begin / 2, scales, row, i - row_begin, x, global_scale);
    }}
  }}
}}
)cuda",
                     swizzled);
}

/// GPU 0's architecture, and its family's target where it has the e2m1 instruction.
std::vector<std::string> archsOfGpu0() {
  std::vector<std::string> archs = {gpuArch(0)};
  const int capability = computeCapability(0);
  if (capability >= 100 && capability < 130)
    archs.push_back(archs[0] + "f");
  return archs;
}

float floatOf(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

class Nvfp4Gpu : public ::testing::Test {
protected:
  void SetUp() override {
    // NVRTC needs no GPU: the kernels compile everywhere, they run where a GPU is.
    JitOptions jit;
    jit.arch = "sm_90";
    for (const std::string& source :
         {kernelSource(256), rowsSource(1, 128, 2048, true), rowsSource(8, 1024, 5120, false)}) {
      auto cubin = compileCuda(source, "nvfp4_gpu_test", JitOutput::Cubin, jit);
      ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
      EXPECT_EQ(cubin->log.find("warning"), std::string::npos) << cubin->log;
    }
    Expected<int> count = gpuCount();
    if (!count)
      GTEST_SKIP() << toString(count.takeError());
  }

  std::unique_ptr<LoadedKernel> load(const std::string& arch, uint64_t blocksPerRow,
                                     const char* name) {
    JitOptions jit;
    jit.arch = arch;
    auto cubin = compileCuda(kernelSource(blocksPerRow), "nvfp4_gpu_test", JitOutput::Cubin, jit);
    EXPECT_TRUE(bool(cubin)) << toString(cubin.takeError());
    if (!cubin)
      return nullptr;
    auto kernel = LoadedKernel::load({0}, cubin->image, name);
    EXPECT_TRUE(bool(kernel)) << toString(kernel.takeError());
    return kernel ? std::move(*kernel) : nullptr;
  }
};

TEST_F(Nvfp4Gpu, ConversionsAreTheReferenceOnEveryFloatWhereTheyRound) {
  struct Range {
    uint32_t first, stride;
    uint64_t count;
  };
  const Range ranges[] = {{0x3e000000u, 1, 0x41800000u - 0x3e000000u}, // e2m1: 2^-3 to 2^4
                          {0x3a000000u, 1, 0x3d000000u - 0x3a000000u}, // e4m3: 2^-11 to 2^-5
                          {0x43000000u, 1, 0x44000000u - 0x43000000u}, // e4m3: 2^7 to 2^9
                          {0, 4099, 0x80000000u / 4099 + 1}}; // a sample of every bit pattern
  for (const std::string& arch : archsOfGpu0()) {
    std::unique_ptr<LoadedKernel> kernel = load(arch, 1, "nvfp4_conversions");
    ASSERT_TRUE(kernel);
    for (const Range& range : ranges) {
      auto in = DeviceBuffer::allocate(0, 2 * sizeof(uint32_t));
      auto out = DeviceBuffer::allocate(0, range.count * 4);
      ASSERT_TRUE(in && out);
      const uint32_t words[2] = {range.first, range.stride};
      ASSERT_EQ(cudaMemcpy(in->get(), words, sizeof words, cudaMemcpyHostToDevice), cudaSuccess);
      collc_params params{};
      params.in = in->get();
      params.out = out->get();
      params.count = range.count;
      ASSERT_FALSE(bool(kernel->launch(0, dim3(1024), dim3(256), params, nullptr)));
      std::vector<uint8_t> got(range.count * 4);
      ASSERT_EQ(cudaMemcpy(got.data(), out->get(), got.size(), cudaMemcpyDeviceToHost),
                cudaSuccess);
      uint64_t mismatches = 0;
      for (uint64_t i = 0; i < range.count; ++i) {
        const float x = floatOf(range.first + uint32_t(i) * range.stride);
        const uint8_t e2m1 = toE2M1(x), negated = toE2M1(-double(x));
        const uint8_t expected[4] = {uint8_t(e2m1 | negated << 4), toE4M3(x), toE4M3(-double(x)),
                                     uint8_t(negated | e2m1 << 4)};
        if (std::memcmp(expected, &got[4 * i], 4) != 0 && ++mismatches <= 5)
          ADD_FAILURE() << arch << ": " << x << " gives " << int(got[4 * i]) << " "
                        << int(got[4 * i + 1]) << " " << int(got[4 * i + 2]) << " "
                        << int(got[4 * i + 3]) << ", the reference " << int(expected[0]) << " "
                        << int(expected[1]) << " " << int(expected[2]) << " " << int(expected[3]);
      }
      EXPECT_EQ(mismatches, 0u) << arch << " from bits " << range.first;
    }
    std::printf("nvfp4 conversions on %s (%s): every float checked agrees\n", arch.c_str(),
                gpuName(0).c_str());
  }
}

TEST_F(Nvfp4Gpu, BlocksAreTheReferenceExceptWithinFloatErrorOfABoundary) {
  const double relativeError =
      std::ldexp(1.0, -22); // 3 roundings before a scale, 2 before an element
  std::mt19937_64 random(2048);
  std::normal_distribution<double> values(0.0, 1.0);
  std::uniform_real_distribution<double> exponents(-8.0, 8.0);
  for (const std::string& arch : archsOfGpu0())
    for (uint64_t hidden : {2048, 4096, 5120, 8192})
      for (double calibration : {1.0, 64.0}) { // 64: many scales saturate at 448
        const uint64_t rows = 64, blocksPerRow = hidden / 16, blocks = rows * blocksPerRow;
        std::vector<float> x(rows * hidden);
        double amax = 0;
        for (uint64_t r = 0; r < rows; ++r) {
          const double magnitude = std::exp2(exponents(random));
          for (uint64_t i = 0; i < hidden; ++i) {
            float v = float(values(random) * magnitude);
            uint32_t bits;
            std::memcpy(&bits, &v, sizeof bits);
            x[r * hidden + i] = floatOf(bits & 0xffff0000u); // a bf16 value
            amax = std::max(amax, std::fabs(double(x[r * hidden + i])));
          }
        }
        x[5] = NAN;            // left out of its block's scale, and +6
        x[hidden] = -INFINITY; // saturates its block's scale and itself
        for (uint64_t i = 2 * hidden; i < 2 * hidden + 16; ++i)
          x[i] = 0.0f; // an all-zero block
        const float g = float(448.0 * 6.0 / amax * calibration);

        std::unique_ptr<LoadedKernel> kernel = load(arch, blocksPerRow, "nvfp4_blocks");
        ASSERT_TRUE(kernel);
        const uint64_t swizzledBytes = nvfp4SwizzledBytes(rows, blocksPerRow);
        auto in = DeviceBuffer::allocate(0, x.size() * sizeof(float));
        auto out = DeviceBuffer::allocate(0, blocks * 8);
        auto scale = DeviceBuffer::allocate(0, sizeof(float));
        auto linear = DeviceBuffer::allocate(0, blocks);
        auto swizzled = DeviceBuffer::allocate(0, swizzledBytes);
        ASSERT_TRUE(in && out && scale && linear && swizzled);
        ASSERT_EQ(cudaMemcpy(in->get(), x.data(), in->bytes(), cudaMemcpyHostToDevice),
                  cudaSuccess);
        ASSERT_EQ(cudaMemcpy(scale->get(), &g, sizeof g, cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(cudaMemset(swizzled->get(), 0xab, swizzledBytes), cudaSuccess);
        collc_params params{};
        params.in = in->get();
        params.out = out->get();
        params.count = blocks;
        params.aux[0] = scale->get();
        params.aux[1] = linear->get();
        params.aux[2] = swizzled->get();
        ASSERT_FALSE(bool(
            kernel->launch(0, dim3(unsigned((blocks + 255) / 256)), dim3(256), params, nullptr)));
        std::vector<uint8_t> packed(blocks * 8), scales(blocks), swizzledScales(swizzledBytes);
        ASSERT_EQ(cudaMemcpy(packed.data(), out->get(), packed.size(), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        ASSERT_EQ(cudaMemcpy(scales.data(), linear->get(), blocks, cudaMemcpyDeviceToHost),
                  cudaSuccess);
        ASSERT_EQ(cudaMemcpy(swizzledScales.data(), swizzled->get(), swizzledBytes,
                             cudaMemcpyDeviceToHost),
                  cudaSuccess);

        Nvfp4Agreement agreement;
        for (uint64_t r = 0; r < rows; ++r) {
          for (uint64_t c = 0; c < blocksPerRow; ++c)
            ASSERT_EQ(swizzledScales[nvfp4SwizzledOffset(r, c, blocksPerRow)],
                      scales[r * blocksPerRow + c])
                << "row " << r << " block " << c;
          compareNvfp4Row(std::vector<double>(x.begin() + r * hidden, x.begin() + (r + 1) * hidden),
                          double(g), &packed[r * hidden / 2], &scales[r * blocksPerRow],
                          relativeError, fmt::format("{} hidden {} row {}", arch, hidden, r),
                          agreement);
        }
        // Padding: the swizzled matrix's bytes past the rows' blocks are the kernel's to leave.
        uint64_t untouched = 0;
        for (uint8_t byte : swizzledScales)
          untouched += byte == 0xab;
        EXPECT_EQ(agreement.differences, 0) << agreement.firstDifference;
        EXPECT_EQ(untouched, swizzledBytes - blocks) << "the swizzled offsets are not one-to-one";
        std::printf("nvfp4 blocks on %s, hidden %llu, G %g: %lld blocks (%lld within float error "
                    "of a scale's rounding boundary), %lld elements compared (%lld within it), "
                    "%lld differ\n",
                    arch.c_str(), (unsigned long long)hidden, double(g),
                    (long long)agreement.blocks, (long long)agreement.blocksNearABoundary,
                    (long long)agreement.elements, (long long)agreement.elementsNearABoundary,
                    (long long)agreement.differences);
      }
}

// rows_nvfp4.cuh in the row loops of every vector width and two block sizes, for the hidden sizes
// and token counts of the fused epilogues: the lanes of a block share its amax, store its bytes and
// its scale where the layout says.
TEST_F(Nvfp4Gpu, RowLoopsQuantizeEachBlockOfLanesAsTheReference) {
  const double relativeError = std::ldexp(1.0, -22);
  std::mt19937_64 random(4096);
  std::normal_distribution<double> values(0.0, 1.0);
  std::uniform_real_distribution<double> exponents(-6.0, 6.0);
  const uint64_t maxRows = 64;
  const std::string arch = gpuArch(0);
  int64_t cases = 0;
  Nvfp4Agreement total;
  for (int vec : {1, 2, 4, 8})
    for (int threads : {128, 1024})
      for (uint64_t hidden : {2048, 4096, 5120, 8192})
        for (bool swizzled : {false, true}) {
          JitOptions jit;
          jit.arch = arch;
          auto cubin = compileCuda(rowsSource(vec, threads, hidden, swizzled), "nvfp4_rows",
                                   JitOutput::Cubin, jit);
          ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
          auto kernel = LoadedKernel::load({0}, cubin->image, "nvfp4_rows");
          ASSERT_TRUE(bool(kernel)) << toString(kernel.takeError());
          std::vector<float> x(maxRows * hidden);
          for (uint64_t r = 0; r < maxRows; ++r) {
            const double magnitude = std::exp2(exponents(random));
            for (uint64_t i = 0; i < hidden; ++i)
              x[r * hidden + i] = float(values(random) * magnitude);
          }
          const float g = float(448.0 * 6.0 / 16.0);
          const uint64_t blocksPerRow = hidden / 16;
          auto in = DeviceBuffer::allocate(0, x.size() * sizeof(float));
          auto out = DeviceBuffer::allocate(0, maxRows * hidden / 2);
          auto scale = DeviceBuffer::allocate(0, sizeof(float));
          auto scales = DeviceBuffer::allocate(0, nvfp4SwizzledBytes(maxRows, blocksPerRow));
          ASSERT_TRUE(in && out && scale && scales);
          ASSERT_EQ(cudaMemcpy(in->get(), x.data(), in->bytes(), cudaMemcpyHostToDevice),
                    cudaSuccess);
          ASSERT_EQ(cudaMemcpy(scale->get(), &g, sizeof g, cudaMemcpyHostToDevice), cudaSuccess);
          for (uint64_t rows : {1, 13, 64}) {
            ASSERT_EQ(cudaMemset(out->get(), 0, out->bytes()), cudaSuccess);
            ASSERT_EQ(cudaMemset(scales->get(), 0, scales->bytes()), cudaSuccess);
            collc_params params{};
            params.in = in->get();
            params.out = out->get();
            params.count = rows;
            params.aux[0] = scale->get();
            params.aux[1] = scales->get();
            ASSERT_FALSE(
                bool((*kernel)->launch(0, dim3(unsigned(rows)), dim3(threads), params, nullptr)));
            std::vector<uint8_t> packed(rows * hidden / 2), matrix(scales->bytes());
            ASSERT_EQ(cudaMemcpy(packed.data(), out->get(), packed.size(), cudaMemcpyDeviceToHost),
                      cudaSuccess);
            ASSERT_EQ(
                cudaMemcpy(matrix.data(), scales->get(), matrix.size(), cudaMemcpyDeviceToHost),
                cudaSuccess);
            Nvfp4Agreement agreement;
            for (uint64_t r = 0; r < rows; ++r) {
              std::vector<uint8_t> rowScales(blocksPerRow);
              for (uint64_t c = 0; c < blocksPerRow; ++c)
                rowScales[c] = matrix[swizzled ? nvfp4SwizzledOffset(r, c, blocksPerRow)
                                               : r * blocksPerRow + c];
              compareNvfp4Row(
                  std::vector<double>(x.begin() + r * hidden, x.begin() + (r + 1) * hidden),
                  double(g), &packed[r * hidden / 2], rowScales.data(), relativeError,
                  fmt::format("kVec {} kThreads {} hidden {} {} scales, row {} of {}", vec, threads,
                              hidden, swizzled ? "swizzled" : "linear", r, rows),
                  agreement);
            }
            EXPECT_EQ(agreement.differences, 0) << agreement.firstDifference;
            EXPECT_EQ(agreement.blocks, int64_t(rows * blocksPerRow));
            total.blocks += agreement.blocks;
            total.blocksNearABoundary += agreement.blocksNearABoundary;
            total.elements += agreement.elements;
            total.elementsNearABoundary += agreement.elementsNearABoundary;
            total.differences += agreement.differences;
            ++cases;
          }
        }
  std::printf("nvfp4 row loops on %s: %lld cases, %lld blocks (%lld within float error of a "
              "scale's rounding boundary), %lld elements compared (%lld within it), %lld differ\n",
              arch.c_str(), (long long)cases, (long long)total.blocks,
              (long long)total.blocksNearABoundary, (long long)total.elements,
              (long long)total.elementsNearABoundary, (long long)total.differences);
}

} // namespace
} // namespace collc
