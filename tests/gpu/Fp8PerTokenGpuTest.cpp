// Per-token FP8's device code (compiler/device/fp8_per_token.cuh, rows_fp8_per_token.cuh) run on
// GPU 0 against the float64 reference (compiler/interpret/Float8.h): rows of bf16 values, one
// block per row, for several vector widths, block sizes and row lengths (5000: not a multiple of
// 16), 1, 7 and 64 tokens, with rows of zeros, a NaN, an infinity and an outlier among them. The
// block-wide amax and so each row's scale must be the reference's bit for bit; each element's code
// too, except where the GPU's float quotient x / scale and the exact one round to different codes
// (within a float rounding of a boundary), which is counted and printed. No statement of the
// language uses this code yet: this checks its arithmetic on the hardware.
#include "GpuTestMain.h"
#include "compiler/CudaCodeGen.h"
#include "compiler/DevicePrelude.h"
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

struct RowShape {
  int vec, threads;
  uint64_t hidden;
};

/// A row loop as the code generator prints it: rows of kHidden floats, one block per row, kThreads
/// threads of kVec elements; the codes in params.out, each row's scale in aux[0].
std::string rowsSource(const RowShape& shape) {
  return std::string(kernelAbiHeader()) +
         fmt::format("typedef unsigned long long u64;\n"
                     "constexpr int kVec = {};\n"
                     "constexpr int kThreads = {};\n"
                     "constexpr u64 kHidden = {};\n",
                     shape.vec, shape.threads, shape.hidden) +
         deviceFile("fp8_e4m3.cuh") + deviceFile("fp8_per_token.cuh") +
         deviceFile("rows_fp8_per_token.cuh") + R"cuda(
extern "C" __global__ void fp8_per_token_rows(const __grid_constant__ collc_params params) {
  const float* in = static_cast<const float*>(params.in);
  unsigned char* out = static_cast<unsigned char*>(params.out);
  float* token_scale = static_cast<float*>(params.aux[0]);
  for (u64 row = blockIdx.x; row < params.count; row += gridDim.x) {
    const u64 row_begin = row * kHidden, row_end = row_begin + kHidden;
    float amax = 0.0f;
    for (u64 i = row_begin + threadIdx.x * kVec; i < row_end; i += kThreads * kVec) {
      float x[kVec];
      for (int e = 0; e < kVec; ++e)
        x[e] = in[i + e];
      fp8_token_amax_add(amax, x);
    }
    const float scale = fp8_token_scale(block_amax(amax));
    if (threadIdx.x == 0)
      token_scale[row] = scale;
    for (u64 i = row_begin + threadIdx.x * kVec; i < row_end; i += kThreads * kVec) {
      float x[kVec];
      for (int e = 0; e < kVec; ++e)
        x[e] = in[i + e];
      fp8_token_store(out, i, x, scale);
    }
  }
}
)cuda";
}

const RowShape kShapes[] = {
    {8, 1024, 8192}, {8, 512, 4096}, {4, 256, 5120}, {2, 128, 2048}, {8, 512, 5000}, {1, 128, 2048},
};

float bf16Value(double v) {
  float x = float(v);
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits &= 0xffff0000u;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

uint32_t bitsOf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

class Fp8PerTokenGpu : public ::testing::Test {
protected:
  void SetUp() override {
    // NVRTC needs no GPU: every row shape's kernel compiles everywhere, it runs where a GPU is.
    JitOptions jit;
    jit.arch = "sm_90";
    for (const RowShape& shape : kShapes) {
      auto cubin = compileCuda(rowsSource(shape), "fp8_per_token_gpu_test", JitOutput::Cubin, jit);
      ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
      EXPECT_EQ(cubin->log.find("warning"), std::string::npos) << cubin->log;
    }
    Expected<int> count = gpuCount();
    if (!count)
      GTEST_SKIP() << toString(count.takeError());
  }
};

TEST_F(Fp8PerTokenGpu, RowsAreTheReferenceExceptWithinAFloatRoundingOfABoundary) {
  std::mt19937_64 random(4096);
  std::normal_distribution<double> values(0.0, 1.0);
  std::uniform_real_distribution<double> exponents(-8.0, 8.0);
  for (const RowShape& shape : kShapes) {
    JitOptions jit;
    jit.arch = gpuArch(0);
    auto cubin = compileCuda(rowsSource(shape), "fp8_per_token_gpu_test", JitOutput::Cubin, jit);
    ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
    auto kernel = LoadedKernel::load({0}, cubin->image, "fp8_per_token_rows");
    ASSERT_TRUE(bool(kernel)) << toString(kernel.takeError());
    for (uint64_t tokens : {1, 7, 64}) {
      const uint64_t h = shape.hidden;
      std::vector<float> x(tokens * h);
      for (uint64_t r = 0; r < tokens; ++r) {
        const double magnitude = std::exp2(exponents(random));
        for (uint64_t i = 0; i < h; ++i)
          x[r * h + i] = bf16Value(values(random) * magnitude);
      }
      // The special rows, where there are enough rows for them (the last row stays ordinary).
      if (tokens > 4) {
        std::fill(x.begin(), x.begin() + long(h), 0.0f); // row 0: zeros, the floor
        x[h + 17] = NAN;                                 // row 1: passed over by amax
        x[2 * h + h - 1] = -INFINITY;                    // row 2: an infinite scale
        x[3 * h + 3] = bf16Value(-1e30);                 // row 3: past FP8's range
      }
      auto in = DeviceBuffer::allocate(0, x.size() * sizeof(float));
      auto out = DeviceBuffer::allocate(0, x.size());
      auto scales = DeviceBuffer::allocate(0, tokens * sizeof(float));
      ASSERT_TRUE(in && out && scales);
      ASSERT_EQ(cudaMemcpy(in->get(), x.data(), in->bytes(), cudaMemcpyHostToDevice), cudaSuccess);
      collc_params params{};
      params.in = in->get();
      params.out = out->get();
      params.aux[0] = scales->get();
      params.count = tokens;
      ASSERT_FALSE(bool((*kernel)->launch(0, dim3(unsigned(std::min<uint64_t>(tokens, 32))),
                                          dim3(unsigned(shape.threads)), params, nullptr)));
      std::vector<uint8_t> codes(x.size());
      std::vector<float> gotScales(tokens);
      ASSERT_EQ(cudaMemcpy(codes.data(), out->get(), codes.size(), cudaMemcpyDeviceToHost),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpy(gotScales.data(), scales->get(), tokens * sizeof(float),
                           cudaMemcpyDeviceToHost),
                cudaSuccess);
      int64_t nearBoundary = 0, differences = 0;
      for (uint64_t r = 0; r < tokens; ++r) {
        const std::vector<double> row(x.begin() + long(r * h), x.begin() + long((r + 1) * h));
        const float scale = float(tokenScaleE4M3(amaxOfNumbers(row.data(), int64_t(h))));
        ASSERT_EQ(bitsOf(gotScales[r]), bitsOf(scale))
            << "hidden " << h << " vec " << shape.vec << " row " << r << ": " << gotScales[r]
            << " != " << scale;
        for (uint64_t i = 0; i < h; ++i) {
          const double exact = row[i] / double(scale);
          const uint8_t expected = toE4M3(exact);
          if (codes[r * h + i] == expected)
            continue;
          const double quotient = double(float(row[i]) / scale);
          if (toE4M3(std::min(exact, quotient)) != toE4M3(std::max(exact, quotient)))
            ++nearBoundary;
          else if (++differences <= 5)
            ADD_FAILURE() << "hidden " << h << " row " << r << " element " << i << " (" << row[i]
                          << "): " << int(codes[r * h + i]) << " != " << int(expected);
        }
      }
      EXPECT_EQ(differences, 0);
      if (tokens > 4) {
        EXPECT_EQ(gotScales[0], float(kE4M3MinTokenScale));
        EXPECT_TRUE(std::isinf(gotScales[2]));
        EXPECT_EQ(codes[h + 17], 0x7f);
        EXPECT_EQ(codes[3 * h + 3], 0xfe); // -448
      }
      std::printf("fp8 per token on %s, hidden %llu, vec %d x %d threads, %llu tokens: scales "
                  "bit for bit, %llu codes, %lld within a float rounding of a boundary\n",
                  gpuArch(0).c_str(), (unsigned long long)h, shape.vec, shape.threads,
                  (unsigned long long)tokens, (unsigned long long)x.size(),
                  (long long)nearBoundary);
    }
  }
}

} // namespace
} // namespace collc
