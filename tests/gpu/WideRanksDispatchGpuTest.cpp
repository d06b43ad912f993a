// Dispatch by the built-in rule past 24 ranks: 25 ranks as co-resident kernels on GPU 0
// (SharedGpuWorld), where the rule runs the two-shot from 4 MiB as it does at 8 ranks, since
// allreduce_twoshot declares ranks 2..72. One Dispatcher of bf16 sums, its variants compiled with
// the blocks that let all 25 ranks' blocks be resident together (the plan gives one rank the whole
// GPU's multiprocessors); eager calls from 2 bytes to 4 MiB a rank, across three of the rule's
// ranges at 25 ranks (the one-shot's two and the two-shot sentinel's), each call checked on every
// rank against the float64 reference; then one CUDA graph per rank of calls of mixed sizes,
// replayed with fresh inputs. The log says which variant each size ran. (Past the two-shot's
// rank counts the rule would keep to the one-shot, tests/runtime/DispatchPlanTest.cpp.)
#include "pipeline/CompileDispatch.h"
#include "runtime/CoResidency.h"
#include "runtime/Devices.h"
#include "runtime/Dispatcher.h"
#include "tests/gpu/DispatchCalls.h"
#include "tests/gpu/GpuTestMain.h"

#include <cstdio>
#include <set>

namespace collc {
namespace {

constexpr int kRanks = 25;
constexpr uint64_t K = 1024;
constexpr DType kDType = DType::BF16; // 1 MiB is 512 Ki elements, 4 MiB is 2 Mi

/// Counts in three of the rule's ranges at 25 ranks (below 1 MiB, from it, from 4 MiB), with odd
/// counts at the edges of the vectorized paths. The largest, 4 MiB and 6 bytes, is the two-shot
/// sentinel's. No larger: every variant is made for the largest call, and the one-shot's keep
/// three copies of 25 slots of it, so 16 MiB (the two-shot barrier's range) would take 2.5 GiB of
/// heap a rank, 63 GB of the GPU's memory for the 25 ranks.
const uint64_t kCounts[] = {1, 7, 9, 512, 4097, 512 * K - 1, 512 * K, 1024 * K + 5, 2048 * K + 3};
constexpr uint64_t kMaxCount = 2048 * K + 3;

using gputest::CallBuffers;

class WideRanksDispatchOneGpu : public ::testing::Test {
protected:
  void SetUp() override { COLLC_REQUIRE_SHARED_GPU_WORLD(world_, kRanks); }

  /// The built-in rule's dispatcher at kRanks ranks for calls of up to kMaxCount elements, on a
  /// world of kRanks ranks with the heap it needs; null, with a failure, where it could not be
  /// made.
  std::unique_ptr<Dispatcher> makeRuleDispatcher() {
    DispatchRequest request;
    request.dtype = kDType;
    request.nranks = kRanks;
    request.maxCount = kMaxCount;
    request.table = "none";
    const int mostBlocks = maxCoResidentBlocksPerRank(multiprocessorCount(0), kRanks);
    auto program = compileDispatchProgram(request, mostBlocks);
    EXPECT_TRUE(bool(program)) << toString(program.takeError());
    if (!program)
      return nullptr;
    EXPECT_FALSE(program->plan().fromTable) << program->plan().source;
    EXPECT_EQ(program->plan().source.find("declares ranks"), std::string::npos)
        << program->plan().source;
    EXPECT_EQ(program->variants().size(), 3u) << program->description();
    for (size_t v = 0; v < program->variants().size(); ++v) {
      const DispatchVariant& variant = program->variants()[v];
      // The one-shot below 4 MiB (two ranges), the two-shot sentinel from it (the barrier's
      // range, from 16 MiB, is past the largest call).
      EXPECT_EQ(variant.compiled.specName, v < 2 ? "allreduce_oneshot" : "allreduce_twoshot");
      EXPECT_LE(variant.compiled.launch.blocks, mostBlocks);
      std::printf("%s: compiled with %d blocks of %d threads a rank (%d ranks share GPU 0)\n",
                  variant.variant.text().c_str(), variant.compiled.launch.blocks,
                  variant.compiled.launch.threads, kRanks);
    }
    std::string skip, error;
    world_ = gputest::sharedGpuWorld(kRanks, skip, error, program->heapBytes());
    EXPECT_NE(world_, nullptr) << error << skip;
    if (!world_)
      return nullptr;
    return gputest::makeDispatcher(*world_, std::move(*program));
  }

  /// Which variant a call of `count` elements runs, printed.
  size_t variantPrinted(const Dispatcher& dispatcher, uint64_t count) {
    const size_t variant = dispatcher.variantFor(count);
    std::printf("count %llu (%llu bytes a rank): %s\n", static_cast<unsigned long long>(count),
                static_cast<unsigned long long>(count * sizeOf(kDType)),
                dispatcher.program().variants()[variant].variant.text().c_str());
    return variant;
  }

  SharedGpuWorld* world_ = nullptr;
};

TEST_F(WideRanksDispatchOneGpu, EagerCallsAcrossEveryRangeOfTheRuleAt25Ranks) {
  std::unique_ptr<Dispatcher> dispatcher = makeRuleDispatcher();
  ASSERT_TRUE(dispatcher);
  const DispatchRequest& request = dispatcher->program().request();
  std::set<size_t> used;
  uint64_t seed = 1;
  for (uint64_t count : kCounts) {
    used.insert(variantPrinted(*dispatcher, count));
    CallBuffers call = gputest::allocateCall(*world_, request.dtype, count);
    ASSERT_EQ(call.in.size(), size_t(kRanks));
    // Two calls per size, so that each variant runs twice in a row and after the other.
    for (int round = 0; round < 2; ++round) {
      ASSERT_NO_FATAL_FAILURE(gputest::refillCall(*world_, call, request.dtype, seed++));
      ASSERT_NO_FATAL_FAILURE(gputest::launchCall(*world_, *dispatcher, call));
      ASSERT_NO_FATAL_FAILURE(gputest::synchronizeCalls(*world_, *dispatcher));
      gputest::checkCall(call, request.dtype, request.op,
                         "count " + std::to_string(count) + " round " + std::to_string(round));
    }
  }
  EXPECT_EQ(used.size(), 3u) << "the sizes should reach three variants of the rule at 25 ranks";
}

TEST_F(WideRanksDispatchOneGpu, AGraphOfMixedSizesReplaysAt25Ranks) {
  std::unique_ptr<Dispatcher> dispatcher = makeRuleDispatcher();
  ASSERT_TRUE(dispatcher);
  // Three variants, the two-shot's at 4 MiB between the one-shot's, then the first again.
  const uint64_t counts[] = {4097, 1024 * K + 5, kMaxCount, 512};
  std::set<size_t> used;
  std::vector<CallBuffers> calls;
  for (uint64_t count : counts) {
    used.insert(variantPrinted(*dispatcher, count));
    calls.push_back(gputest::allocateCall(*world_, kDType, count));
    ASSERT_EQ(calls.back().in.size(), size_t(kRanks));
  }
  EXPECT_EQ(used.size(), 3u);
  gputest::captureAndReplayChecked(*world_, *dispatcher, calls, /*replays=*/2, /*seed=*/1000);
}

} // namespace
} // namespace collc
