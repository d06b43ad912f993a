#include "tools/bench/PlainRmsNorm.h"

#include "compiler/CudaCodeGen.h"
#include "compiler/RowEpilogue.h"

#include <fmt/format.h>

namespace collc {

namespace {

Error plainError(const std::string& message) {
  return makeError("rmsnorm baseline: " + message);
}

// Conversions by PTX, so that the source needs no toolkit header.
constexpr const char* kF32Conversions = R"(typedef float elem_t;
__device__ __forceinline__ float to_f(elem_t x) { return x; }
__device__ __forceinline__ elem_t from_f(float x) { return x; }
)";
constexpr const char* kF16Conversions = R"(typedef unsigned short elem_t;
__device__ __forceinline__ float to_f(elem_t x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
  return f;
}
__device__ __forceinline__ elem_t from_f(float x) {
  elem_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
)";
constexpr const char* kBf16Conversions = R"(typedef unsigned short elem_t;
__device__ __forceinline__ float to_f(elem_t x) { return __uint_as_float((unsigned)x << 16); }
__device__ __forceinline__ elem_t from_f(float x) {
  elem_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
)";

constexpr const char* kBody = R"(
union Vec {
  uint4 u;
  elem_t e[kVecElems];
};

// Sum over the block; every thread gets the total. Threads past the row's end pass 0.
__device__ __forceinline__ float block_sum(float x) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    partial[warp] = x;
  __syncthreads();
  x = lane < (int)(blockDim.x / 32) ? partial[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, o);
  __syncthreads(); // partial is reused by the next row
  return x;
}

extern "C" __global__ void KERNEL_NAME(collc_params p) {
  const uint4* sum = (const uint4*)p.in;
  uint4* out = (uint4*)p.out;
  const uint4* residual = (const uint4*)p.aux[kResidualIn];
  uint4* residual_out = (uint4*)p.aux[kResidualOut];
  const uint4* weight = (const uint4*)p.aux[kWeight];
  const unsigned long long rows = p.count / kHidden;
  for (unsigned long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const unsigned long long base = row * kVectors;
    Vec y[kPerThread];
    float sum_sq = 0.0f;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int v = threadIdx.x + k * blockDim.x;
      if (v >= kVectors)
        continue;
      Vec a, r;
      a.u = sum[base + v];
      r.u = residual[base + v];
#pragma unroll
      for (int e = 0; e < kVecElems; ++e) {
        y[k].e[e] = from_f(to_f(a.e[e]) + to_f(r.e[e]));
        const float f = to_f(y[k].e[e]);
        sum_sq += f * f;
      }
      residual_out[base + v] = y[k].u;
    }
    const float scale = rsqrtf(block_sum(sum_sq) / float(kHidden) + kEps);
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int v = threadIdx.x + k * blockDim.x;
      if (v >= kVectors)
        continue;
      Vec w, o;
      w.u = weight[v];
#pragma unroll
      for (int e = 0; e < kVecElems; ++e)
        o.e[e] = from_f(to_f(y[k].e[e]) * scale * to_f(w.e[e]));
      out[base + v] = o.u;
    }
  }
}
)";

} // namespace

Expected<PlainRmsNormKernel> plainRmsNormKernel(const CompiledCollective& fused,
                                                const ir::Program& spec) {
  const std::optional<AddRmsNormEpilogue> epilogue = findAddRmsNorm(spec);
  if (!epilogue)
    return plainError("'" + fused.specName + "' is not the fused residual add + RMSNorm");
  const AddRmsNormEpilogue& e = *epilogue;
  const int64_t hidden = fused.rowLength;
  const int64_t vecElems = 16 / int64_t(sizeOf(fused.dtype));
  if (hidden <= 0 || hidden % vecElems != 0)
    return plainError(fmt::format("a row of {} elements is not whole 16-byte vectors of {}", hidden,
                                  name(fused.dtype)));
  const int64_t vectors = hidden / vecElems;
  const int threads = int(std::min<int64_t>(1024, (vectors + 31) / 32 * 32));
  const int64_t perThread = (vectors + threads - 1) / threads;
  if (perThread > 8)
    return plainError(fmt::format("a row of {} elements needs {} vectors per thread (at most 8)",
                                  hidden, perThread));
  PlainRmsNormKernel kernel;
  kernel.name = fmt::format("collc_plain_add_rmsnorm_{}_{}", name(fused.dtype), hidden);
  kernel.threads = threads;
  const char* conversions = fused.dtype == DType::F32   ? kF32Conversions
                            : fused.dtype == DType::F16 ? kF16Conversions
                                                        : kBf16Conversions;
  kernel.source = std::string(kernelAbiHeader()) + "\n" + conversions +
                  fmt::format("#define KERNEL_NAME {}\n"
                              "constexpr int kHidden = {};\n"
                              "constexpr int kVecElems = {};\n"
                              "constexpr int kVectors = {};\n"
                              "constexpr int kPerThread = {};\n"
                              "constexpr float kEps = {:.9g}f;\n"
                              "constexpr int kResidualIn = {}, kResidualOut = {}, kWeight = {};\n",
                              kernel.name, hidden, vecElems, vectors, perThread, fused.eps,
                              e.residualIn, e.residualOut, e.weight) +
                  kBody;
  return kernel;
}

} // namespace collc
