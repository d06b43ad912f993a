// The C API's launch-time checks on 2 GPUs: a count over the instance's maximum, buffers that
// overlap where the collective does not allow it, a world that outlives its instances. Without
// 2 GPUs every test skips and says why.
#include "collc/collc.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <string>

namespace {

constexpr uint64_t kMaxCount = 1024;

/// A 2-GPU world with the one-shot AllReduce (f32, in place allowed) and the direct AllGather (its
/// output is every rank's input: never in place) made for kMaxCount elements, and device buffers.
class CApiGpu : public ::testing::Test {
protected:
  void SetUp() override {
    int gpus = 0;
    if (collc_device_count(&gpus) != COLLC_OK)
      GTEST_SKIP() << collc_last_error(); // "no GPU: ..."
    if (gpus < 2)
      GTEST_SKIP() << "no GPU pair: needs 2 GPUs, " << gpus << " visible";
    const int devices[2] = {0, 1};
    ASSERT_EQ(collc_world_create_local(devices, 2, 64 << 20, &world_), COLLC_OK)
        << collc_last_error();
    collc_compile_options options;
    ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
    ASSERT_EQ(collc_compile("allreduce_oneshot", &options, &compiled_), COLLC_OK)
        << collc_last_error();
    ASSERT_EQ(collc_instance_create(world_, compiled_, kMaxCount, &instance_), COLLC_OK)
        << collc_last_error();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    // Room for an all-gather's output of 2 ranks, and an offset view into it.
    ASSERT_EQ(cudaMalloc(&buffer_, 4 * kMaxCount * sizeof(float)), cudaSuccess);
  }
  void TearDown() override {
    if (buffer_)
      (void)cudaFree(buffer_);
    EXPECT_EQ(collc_instance_destroy(instance_), COLLC_OK);
    EXPECT_EQ(collc_compiled_destroy(compiled_), COLLC_OK);
    EXPECT_EQ(collc_world_destroy(world_), COLLC_OK);
  }

  collc_world* world_ = nullptr;
  collc_compiled* compiled_ = nullptr;
  collc_instance* instance_ = nullptr;
  void* buffer_ = nullptr;
};

TEST_F(CApiGpu, CountOverTheMaximumIsRefused) {
  float* in = static_cast<float*>(buffer_);
  float* out = in + 2 * kMaxCount;
  EXPECT_EQ(collc_launch(instance_, 0, in, out, nullptr, 0, kMaxCount + 1, nullptr),
            COLLC_INVALID_ARGUMENT);
  const std::string message = collc_last_error();
  EXPECT_NE(message.find(std::to_string(kMaxCount + 1) + " elements"), std::string::npos)
      << message;
  EXPECT_NE(message.find(std::to_string(kMaxCount)), std::string::npos) << message;
  EXPECT_EQ(collc_launch(instance_, 0, in, out, nullptr, 0, 0, nullptr), COLLC_INVALID_ARGUMENT);
  uint64_t max = 0;
  ASSERT_EQ(collc_instance_max_count(instance_, &max), COLLC_OK);
  EXPECT_EQ(max, kMaxCount);
}

TEST_F(CApiGpu, WrongRankOrAuxIsRefused) {
  float* in = static_cast<float*>(buffer_);
  float* out = in + 2 * kMaxCount;
  EXPECT_EQ(collc_launch(instance_, 2, in, out, nullptr, 0, 1, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_launch(instance_, 0, in, out, nullptr, 1, 1, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_launch(instance_, 0, nullptr, out, nullptr, 0, 1, nullptr),
            COLLC_INVALID_ARGUMENT);
}

TEST_F(CApiGpu, OverlapOnlyWhereTheCollectiveAllowsIt) {
  ASSERT_EQ(collc_compiled_in_place(compiled_), 1);
  float* in = static_cast<float*>(buffer_);
  // Half a buffer apart: not the same memory, not distinct memory.
  EXPECT_EQ(collc_launch(instance_, 0, in, in + kMaxCount / 2, nullptr, 0, kMaxCount, nullptr),
            COLLC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(collc_last_error()).find("overlap"), std::string::npos)
      << collc_last_error();

  collc_compiled* gather = nullptr;
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  ASSERT_EQ(collc_compile("allgather_direct", &options, &gather), COLLC_OK) << collc_last_error();
  // Its output (every rank's part) is not the input's shape: the proof does not allow in place.
  ASSERT_EQ(collc_compiled_in_place(gather), 0);
  collc_instance* instance = nullptr;
  ASSERT_EQ(collc_instance_create(world_, gather, kMaxCount, &instance), COLLC_OK)
      << collc_last_error();
  EXPECT_EQ(collc_launch(instance, 0, in, in, nullptr, 0, kMaxCount, nullptr),
            COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_instance_destroy(instance), COLLC_OK);
  EXPECT_EQ(collc_compiled_destroy(gather), COLLC_OK);
}

TEST_F(CApiGpu, WorldOutlivesItsInstances) {
  EXPECT_EQ(collc_world_destroy(world_), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(collc_last_error()).find("destroy them first"), std::string::npos);
  int nranks = 0, nlocal = 0, ranks[2] = {-1, -1};
  uint64_t heap = 0;
  ASSERT_EQ(collc_world_nranks(world_, &nranks), COLLC_OK);
  EXPECT_EQ(nranks, 2);
  ASSERT_EQ(collc_world_heap_bytes(world_, &heap), COLLC_OK);
  EXPECT_EQ(heap, uint64_t(64) << 20);
  ASSERT_EQ(collc_world_local_ranks(world_, ranks, 2, &nlocal), COLLC_OK);
  EXPECT_EQ(nlocal, 2);
  EXPECT_EQ(ranks[1], 1);
}

TEST_F(CApiGpu, DispatcherByTheBuiltInRule) {
  collc_dispatch_options options;
  ASSERT_EQ(collc_dispatch_options_init(&options), COLLC_OK);
  options.dtype = COLLC_F32;
  EXPECT_EQ(collc_dispatcher_create(world_, &options, nullptr), COLLC_INVALID_ARGUMENT);
  collc_dispatcher* dispatcher = nullptr;
  // max_count left at 0: the largest call must be said.
  EXPECT_EQ(collc_dispatcher_create(world_, &options, &dispatcher), COLLC_INVALID_ARGUMENT);
  options.max_count = kMaxCount;
  ASSERT_EQ(collc_dispatcher_create(world_, &options, &dispatcher), COLLC_OK) << collc_last_error();
  EXPECT_NE(std::string(collc_dispatcher_description(dispatcher)).find("built-in"),
            std::string::npos)
      << collc_dispatcher_description(dispatcher);
  float* in = static_cast<float*>(buffer_);
  float* out = in + 2 * kMaxCount;
  EXPECT_EQ(collc_dispatcher_launch(dispatcher, 0, in, out, kMaxCount + 1, nullptr),
            COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_dispatcher_launch(dispatcher, 3, in, out, 1, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_destroy(world_), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_dispatcher_destroy(dispatcher), COLLC_OK);
}

} // namespace
