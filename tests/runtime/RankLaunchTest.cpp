// One launch of every rank of a one-GPU world (runtime/RankLaunch.h), the parts that need no GPU:
// the refusal of a grid that could not be resident, the gathering of the ranks' calls into one,
// the kernel's argument, the world's choice of launch, and the spec copies the GPU suites compile
// past a spec's declared ranks.
#include "runtime/RankLaunch.h"

#include "runtime/SharedGpuWorld.h"
#include "tests/SpecForRanks.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

TEST(RankLaunch, EveryRankOfAnH200FitsWithOneBlockEach) {
  // 132 SMs: 72 ranks of one block and 64 of two fit even at one block per SM.
  EXPECT_EQ(rankLaunchProblem(1, 72, 0, 9, 132, 1), "");
  EXPECT_EQ(rankLaunchProblem(2, 64, 0, 9, 132, 1), "");
  EXPECT_EQ(rankLaunchProblem(3, 72, 0, 9, 132, 2), ""); // 216 of 264
}

TEST(RankLaunch, RefusesAGridThatCannotBeResidentWithTheNumbers) {
  const std::string tooMany = rankLaunchProblem(2, 72, 0, 9, 132, 1);
  EXPECT_NE(tooMany.find("72 ranks of 2 blocks are 144 blocks in one launch, but GPU 0 holds at "
                         "most 132 of this kernel's blocks at once (132 multiprocessors x 1)"),
            std::string::npos)
      << tooMany;
  EXPECT_NE(tooMany.find("compile for at most 1 blocks per rank (--blocks 1)"), std::string::npos)
      << tooMany;
  const std::string none = rankLaunchProblem(1, 72, 3, 9, 60, 1);
  EXPECT_NE(none.find("run at most 60 ranks"), std::string::npos) << none;
  EXPECT_NE(none.find("GPU 3"), std::string::npos) << none;
}

TEST(RankLaunch, RefusesWhatTheAbiOrTheGpuCannotTake) {
  EXPECT_NE(rankLaunchProblem(1, 73, 0, 9, 132, 1)
                .find("73 ranks in one launch; the ABI allows 1 "
                      "to 72"),
            std::string::npos);
  EXPECT_NE(rankLaunchProblem(0, 8, 0, 9, 132, 1).find("0 blocks per rank"), std::string::npos);
  EXPECT_NE(rankLaunchProblem(1, 8, 0, 6, 132, 1).find("compute capability 6.x"),
            std::string::npos);
  EXPECT_NE(rankLaunchProblem(1, 8, 0, 9, 0, 1).find("could not be read"), std::string::npos);
  EXPECT_NE(rankLaunchProblem(1, 8, 0, 9, 132, 0).find("could not be read"), std::string::npos);
}

TEST(RankLaunch, ArgumentFitsTheKernelParametersOfALargeLaunch) {
  EXPECT_LE(sizeof(collc_rank_launch), kLargeKernelParamBytes);
  // Past the 4 KB every architecture takes: why the launch needs sm_70 (rankLaunchProblem).
  EXPECT_GT(sizeof(collc_rank_launch), size_t(4096));
}

RankCall callOf(int rank, uint64_t count, cudaStream_t stream) {
  RankCall call;
  call.in = reinterpret_cast<const void*>(uintptr_t(0x1000 + 0x10 * rank));
  call.out = reinterpret_cast<void*>(uintptr_t(0x2000 + 0x10 * rank));
  call.aux[1] = reinterpret_cast<void*>(uintptr_t(0x3000 + rank));
  call.count = count;
  call.stream = stream;
  return call;
}

TEST(RankCallGather, LaunchesEachCallWhenTheLastRankMakesIt) {
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(uintptr_t(0x77));
  RankCallGather gather(3);
  // Rank 0 makes two calls before the others make any (a graph captured per rank does so).
  for (uint64_t count : {5, 9}) {
    auto none = gather.add(0, callOf(0, count, stream));
    ASSERT_TRUE(bool(none)) << toString(none.takeError());
    EXPECT_FALSE(none->has_value());
  }
  EXPECT_EQ(gather.waiting(0), 2u);
  auto none = gather.add(2, callOf(2, 5, stream));
  ASSERT_TRUE(bool(none)) << toString(none.takeError());
  EXPECT_FALSE(none->has_value());
  auto first = gather.add(1, callOf(1, 5, stream));
  ASSERT_TRUE(bool(first)) << toString(first.takeError());
  ASSERT_TRUE(first->has_value());
  ASSERT_EQ((*first)->size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ((**first)[size_t(r)].count, 5u);
    EXPECT_EQ((**first)[size_t(r)].in, callOf(r, 5, stream).in);
  }
  EXPECT_EQ(gather.waiting(0), 1u);
  EXPECT_EQ(gather.waiting(1), 0u);
  ASSERT_FALSE(gather.add(1, callOf(1, 9, stream))->has_value());
  auto second = gather.add(2, callOf(2, 9, stream));
  ASSERT_TRUE(bool(second));
  ASSERT_TRUE(second->has_value());
  EXPECT_EQ((**second)[0].count, 9u);
  EXPECT_EQ((**second)[2].out, callOf(2, 9, stream).out);
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(gather.waiting(r), 0u);
}

TEST(RankCallGather, RefusesACallThatDiffersFromAnotherRanksSameCall) {
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(uintptr_t(0x77));
  cudaStream_t other = reinterpret_cast<cudaStream_t>(uintptr_t(0x78));
  RankCallGather gather(2);
  ASSERT_TRUE(bool(gather.add(0, callOf(0, 5, stream))));
  auto count = gather.add(1, callOf(1, 6, stream));
  ASSERT_FALSE(bool(count));
  EXPECT_NE(toString(count.takeError())
                .find("rank 1 calls with 6 elements, but rank 0 made the same call with 5"),
            std::string::npos);
  auto streams = gather.add(1, callOf(1, 5, other));
  ASSERT_FALSE(bool(streams));
  EXPECT_NE(toString(streams.takeError()).find("rank 1 calls on another stream than rank 0"),
            std::string::npos);
  EXPECT_EQ(gather.waiting(1), 0u); // nothing added by a refused call
  auto rank = gather.add(2, callOf(2, 5, stream));
  ASSERT_FALSE(bool(rank));
  EXPECT_NE(toString(rank.takeError()).find("no rank 2 among 2"), std::string::npos);
  // The refusals left the gather as it was: rank 1's right call completes the first one.
  auto done = gather.add(1, callOf(1, 5, stream));
  ASSERT_TRUE(bool(done));
  EXPECT_TRUE(done->has_value());
}

TEST(RankCallGather, RefusesARankFarAheadOfOneThatNeverCalls) {
  RankCallGather gather(2);
  for (size_t i = 0; i < RankCallGather::kMostCallsAhead; ++i)
    ASSERT_TRUE(bool(gather.add(0, callOf(0, 1, nullptr))));
  auto ahead = gather.add(0, callOf(0, 1, nullptr));
  ASSERT_FALSE(bool(ahead));
  EXPECT_NE(toString(ahead.takeError())
                .find("rank 0 is 4096 calls ahead of rank 1, which has made none of them"),
            std::string::npos);
}

TEST(RankLaunch, ArgumentHoldsEachRanksOwnPartsAndTheCommonRest) {
  collc_params common{};
  common.count = 1234;
  common.nranks = 3;
  common.rank = 0;
  common.in = reinterpret_cast<const void*>(uintptr_t(0xdead));
  common.flags_offset = 4096;
  common.timeout_ns = 5;
  for (int r = 0; r < 3; ++r)
    common.heap[r] = reinterpret_cast<char*>(uintptr_t(0x100000) * uintptr_t(r + 1));
  std::vector<RankCall> calls;
  std::vector<unsigned long long*> epochs;
  std::vector<collc_watchdog*> watchdogs;
  for (int r = 0; r < 3; ++r) {
    calls.push_back(callOf(r, 1234, nullptr));
    epochs.push_back(reinterpret_cast<unsigned long long*>(uintptr_t(0x5000 + 0x100 * r)));
    watchdogs.push_back(reinterpret_cast<collc_watchdog*>(uintptr_t(0x6000 + 0x100 * r)));
  }
  const collc_rank_launch launch = buildRankLaunch(common, calls, epochs, watchdogs);
  EXPECT_EQ(launch.common.count, 1234u);
  EXPECT_EQ(launch.common.nranks, 3);
  EXPECT_EQ(launch.common.flags_offset, 4096u);
  EXPECT_EQ(launch.common.timeout_ns, 5u);
  EXPECT_EQ(launch.common.heap[2], common.heap[2]);
  // Nothing of rank 0's own stays in the common part.
  EXPECT_EQ(launch.common.in, nullptr);
  EXPECT_EQ(launch.common.rank, -1);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(launch.ranks[r].in, calls[size_t(r)].in);
    EXPECT_EQ(launch.ranks[r].out, calls[size_t(r)].out);
    EXPECT_EQ(launch.ranks[r].aux[1], calls[size_t(r)].aux[1]);
    EXPECT_EQ(launch.ranks[r].aux[0], nullptr);
    EXPECT_EQ(launch.ranks[r].epochs, epochs[size_t(r)]);
    EXPECT_EQ(launch.ranks[r].watchdog, watchdogs[size_t(r)]);
  }
  EXPECT_EQ(launch.ranks[3].in, nullptr);
}

TEST(RankLaunch, AOneGpuWorldLaunchesAsOnePastTheWorkQueues) {
  EXPECT_EQ(sharedGpuLaunchFor(8), SharedGpuLaunch::StreamPerRank);
  EXPECT_EQ(sharedGpuLaunchFor(kMostWorkQueues), SharedGpuLaunch::StreamPerRank);
  EXPECT_EQ(sharedGpuLaunchFor(kMostWorkQueues + 1), SharedGpuLaunch::OneLaunch);
  EXPECT_EQ(sharedGpuLaunchFor(COLLC_MAX_RANKS), SharedGpuLaunch::OneLaunch);
}

TEST(SpecForRanks, DeclaresTheRankCountAloneAndKeepsTheRest) {
  const std::string text = "collective x kind allreduce\n  # ranks 4..5 in a comment\n"
                           "  ranks 2..16\n  buffers in: T[n]\n";
  ASSERT_TRUE(tests::declaredRanks(text).has_value());
  EXPECT_EQ(*tests::declaredRanks(text), std::make_pair(2, 16));
  EXPECT_TRUE(tests::declaresRanks(text, 16));
  EXPECT_FALSE(tests::declaresRanks(text, 32));
  const std::string wide = tests::specTextForRanks(text, 72);
  EXPECT_EQ(wide, "collective x kind allreduce\n  # ranks 4..5 in a comment\n"
                  "  ranks 72..72\n  buffers in: T[n]\n");
  EXPECT_TRUE(tests::declaresRanks(wide, 72));
  EXPECT_FALSE(tests::declaresRanks(wide, 71));
  EXPECT_EQ(tests::specTextForRanks("collective y kind allgather\n", 72), "");
  EXPECT_TRUE(tests::declaresRanks("collective y kind allgather\n", 8));
  EXPECT_FALSE(tests::declaresRanks("collective y kind allgather\n", 9));
}

} // namespace
} // namespace collc
