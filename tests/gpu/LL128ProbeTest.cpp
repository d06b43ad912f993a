// The assumption the ll128 strategy stands on, tested on the machine: when 8 threads store a
// 128-byte line into a peer's memory with one warp instruction, and 8 threads of the peer load it
// with one warp instruction, a reader that sees the line's flag also sees the line's data. Nothing
// in the CUDA or NVLink documentation promises it, so the probe hammers it: GPU 0 rewrites many
// lines in GPU 1's memory thousands of times (data words and flag tagged with the iteration) while
// GPU 1 reads them as fast as it can, and every read whose flag is set is checked word by word. A
// "torn" read (the flag of iteration k with data of an earlier one) is exactly what would make an
// ll128 kernel take stale data; there must be none.
#include "GpuTestMain.h"
#include "compiler/CudaCodeGen.h"
#include "runtime/CudaCheck.h"
#include "runtime/Jit.h"
#include "runtime/LoadedKernel.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

namespace collc {
namespace {

constexpr int kIterations = 2000;
constexpr int kBlocks = 132, kThreads = 512;
constexpr unsigned long long kLines = 4ull * kBlocks * kThreads / 8; // 4 lines per 8 threads
constexpr double kTimeLimitSeconds = 20;

// The result words of the reader, in order.
// Then kTornByThread counts of torn words by the thread (0-7) of the line that loaded them.
enum Result { Reads, FlaggedReads, Torn, DataAheadOfFlag, WrongWord, Unfinished, TornByThread };
constexpr int kResults = TornByThread + 8;

/// How the reader meets the writer's lines.
enum class ReadPattern {
  /// Round robin over its lines, reading each once per pass: many reads of lines mid-rewrite.
  Sweep,
  /// As an ll128 kernel does: for each iteration, each line in turn is polled until its flag
  /// reaches that iteration, so reads cluster at the very moment a line lands.
  Poll,
};

std::string probeSource(ReadPattern pattern) {
  return fmt::format(R"cuda(
{3}
typedef unsigned long long u64;
constexpr int kIterations = {0};
constexpr u64 kTimeLimitNs = {1}ull;
constexpr bool kPoll = {4};

__device__ __forceinline__ u64 word_value(u64 iteration, u64 line, int word) {{
  return (iteration << 32) | (line * 16 + word);
}}
__device__ __forceinline__ u64 now_ns() {{
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}}

// Rank 0 writes params.heap[1]'s lines, rank 1 reads its own; params.count lines; the reader adds
// its counts to params.out (u64[{2}]).
extern "C" __global__ void ll128_probe(const __grid_constant__ collc_params params) {{
  const unsigned lane8 = threadIdx.x % 8;
  const unsigned mask = 0xffu << ((threadIdx.x % 32) & ~7u);
  const u64 group = (u64(blockIdx.x) * blockDim.x + threadIdx.x) / 8;
  const u64 groups = u64(gridDim.x) * blockDim.x / 8;
  uint4* lines = reinterpret_cast<uint4*>(params.heap[1]);
  if (params.rank == 0) {{
    for (u64 it = 1; it <= kIterations; ++it)
      for (u64 line = group; line < params.count; line += groups) {{
        const u64 a = word_value(it, line, 2 * lane8), b = word_value(it, line, 2 * lane8 + 1);
        const u64 second = lane8 == 7 ? it : b; // thread 7: data word 14, then the flag
        __syncwarp(mask);
        asm volatile("st.volatile.global.v4.u32 [%0], {{%1, %2, %3, %4}};" ::"l"(lines + line * 8 + lane8),
                     "r"(unsigned(a)), "r"(unsigned(a >> 32)), "r"(unsigned(second)),
                     "r"(unsigned(second >> 32)) : "memory");
      }}
    return;
  }}
  u64 reads = 0, flagged = 0, torn = 0, ahead = 0, wrong = 0, unfinished = 0;
  const u64 start = now_ns();
  // Checks one load of a line; returns its flag.
  auto look = [&](u64 line) -> u64 {{
    unsigned x, y, z, w;
    __syncwarp(mask);
    asm volatile("ld.volatile.global.v4.u32 {{%0, %1, %2, %3}}, [%4];"
                 : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "l"(lines + line * 8 + lane8) : "memory");
    const u64 a = (u64(y) << 32) | x, b = (u64(w) << 32) | z;
    const u64 flag = __shfl_sync(mask, b, 7, 8);
    ++reads;
    if (flag == 0)
      return 0;
    ++flagged;
    bool mine_torn = false;
    for (int k = 0; k < (lane8 == 7 ? 1 : 2); ++k) {{
      const u64 v = k == 0 ? a : b;
      const u64 iteration = v >> 32;
      if ((v & 0xffffffffull) != line * 16 + 2 * lane8 + k)
        ++wrong;
      else if (iteration < flag)
        ++torn, mine_torn = true;
      else if (iteration > flag)
        ++ahead;
    }}
    if (mine_torn)
      atomicAdd(static_cast<u64*>(params.out) + {5} + lane8, 1ull);
    return flag;
  }};
  if (kPoll) {{
    for (u64 it = 1; it <= kIterations && !unfinished; ++it)
      for (u64 line = group; line < params.count; line += groups) {{
        while (look(line) < it)
          if (__any_sync(mask, now_ns() - start > kTimeLimitNs)) {{ // the line leaves together
            ++unfinished;
            break;
          }}
        if (unfinished)
          break;
      }}
  }} else {{
    bool done = false;
    // Round robin over this group's lines, so that reads land on lines while they are rewritten.
    while (!done) {{
      done = true;
      for (u64 line = group; line < params.count; line += groups)
        if (look(line) != kIterations)
          done = false;
      done = __all_sync(0xffffffffu, done);
      if (!done && now_ns() - start > kTimeLimitNs) {{
        ++unfinished;
        break;
      }}
    }}
  }}
  u64* out = static_cast<u64*>(params.out);
  atomicAdd(out + 0, reads);
  atomicAdd(out + 1, flagged);
  atomicAdd(out + 2, torn);
  atomicAdd(out + 3, ahead);
  atomicAdd(out + 4, wrong);
  atomicAdd(out + 5, unfinished);
}}
)cuda",
                     kIterations, static_cast<unsigned long long>(kTimeLimitSeconds * 1e9),
                     int(kResults), kernelAbiHeader(), pattern == ReadPattern::Poll,
                     int(TornByThread));
}

class LL128Probe : public ::testing::TestWithParam<ReadPattern> {};

TEST_P(LL128Probe, AWarpsLineStoreIsSeenWholeByAWarpsLineLoadAcrossNVLink) {
  // NVRTC needs no GPU: the probe's source is checked everywhere, the probe runs where GPUs are.
  auto compiled = compileCuda(probeSource(GetParam()), "ll128_probe.cu", JitOutput::Cubin);
  ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError());
  COLLC_REQUIRE_GPU_WORLD();
  LocalWorld& world = *gputest::world();
  auto kernel =
      LoadedKernel::load({world.device(0), world.device(1)}, compiled->image, "ll128_probe");
  ASSERT_TRUE(bool(kernel)) << toString(kernel.takeError());

  const size_t lineBytes = kLines * 128;
  auto lines = DeviceBuffer::allocate(world.device(1), lineBytes);
  ASSERT_TRUE(bool(lines)) << toString(lines.takeError());
  auto results = DeviceBuffer::allocate(world.device(1), kResults * sizeof(unsigned long long));
  ASSERT_TRUE(bool(results)) << toString(results.takeError());
  ASSERT_EQ(cudaSetDevice(world.device(1)), cudaSuccess);
  ASSERT_EQ(cudaMemset(lines->get(), 0, lineBytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(results->get(), 0, results->bytes()), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  collc_params params{};
  params.count = kLines;
  params.nranks = 2;
  params.heap[1] = lines->as<char>();
  params.out = results->get();
  // The reader first, so that it already polls when the first lines land.
  params.rank = 1;
  ASSERT_FALSE(bool((*kernel)->launch(1, dim3(kBlocks), dim3(kThreads), params, world.stream(1))));
  params.rank = 0;
  ASSERT_FALSE(bool((*kernel)->launch(0, dim3(kBlocks), dim3(kThreads), params, world.stream(0))));
  ASSERT_EQ(cudaStreamSynchronize(world.stream(0)), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(world.stream(1)), cudaSuccess);

  unsigned long long counts[kResults] = {};
  ASSERT_EQ(cudaMemcpy(counts, results->get(), sizeof(counts), cudaMemcpyDeviceToHost),
            cudaSuccess);
  const unsigned long long written = kLines * kIterations;
  std::string byThread;
  for (int t = 0; t < 8; ++t)
    byThread += fmt::format("{}{}", t ? "/" : "", counts[TornByThread + t]);
  std::printf(
      "ll128 probe (%s): %llu lines written %d times over NVLink (%llu line stores); %llu line "
      "reads, %llu with a flag; torn (flag newer than data): %llu; data newer than "
      "flag: %llu; wrong words: %llu; groups out of time: %llu; torn loads by thread 0-7 of "
      "the line: %s\n",
      GetParam() == ReadPattern::Poll ? "poll" : "sweep", kLines, kIterations, written,
      counts[Reads], counts[FlaggedReads], counts[Torn], counts[DataAheadOfFlag], counts[WrongWord],
      counts[Unfinished], byThread.c_str());
  EXPECT_EQ(counts[Unfinished], 0u) << "the reader did not see the last iteration in time";
  EXPECT_EQ(counts[WrongWord], 0u);
  // The probe must have read lines while they were being rewritten, or it proves nothing.
  EXPECT_GE(counts[FlaggedReads], kLines * (GetParam() == ReadPattern::Poll ? kIterations : 10));
  EXPECT_EQ(counts[Torn], 0u) << "a line's flag arrived before its data: ll128 is unsafe here";
}

INSTANTIATE_TEST_SUITE_P(Reads, LL128Probe,
                         ::testing::Values(ReadPattern::Sweep, ReadPattern::Poll),
                         [](const ::testing::TestParamInfo<ReadPattern>& info) {
                           return info.param == ReadPattern::Poll ? "poll" : "sweep";
                         });

} // namespace
} // namespace collc
