// Many ranks on one GPU, the parts that need no GPU: the co-residency rule (every block of every
// rank sharing a GPU resident at once), the carving of one allocation into the ranks' heaps, the
// check that every rank's stream can have a hardware work queue, and the counts the GPU matrix
// runs.
#include "runtime/SharedGpuWorld.h"

#include "runtime/CoResidency.h"
#include "runtime/HeapSize.h"
#include "tests/ManyRankCounts.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <limits>
#include <string>

namespace collc {
namespace {

TEST(CoResidency, GroupsLocalRanksByGpu) {
  std::vector<GpuRanks> gpus = ranksPerGpu(std::vector<int>{0, 1});
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].device, 0);
  EXPECT_EQ(gpus[0].ranks, 1);
  EXPECT_EQ(gpus[1].device, 1);
  EXPECT_FALSE(ranksShareAGpu(gpus));

  gpus = ranksPerGpu(std::vector<int>{3, 3, 3, 3, 3});
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].device, 3);
  EXPECT_EQ(gpus[0].ranks, 5);
  EXPECT_TRUE(ranksShareAGpu(gpus));

  gpus = ranksPerGpu(std::vector<int>{2, 0, 2});
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].device, 2);
  EXPECT_EQ(gpus[0].ranks, 2);
  EXPECT_EQ(gpus[1].ranks, 1);
  EXPECT_TRUE(ranksShareAGpu(gpus));
  EXPECT_TRUE(ranksPerGpu(std::vector<int>{}).empty());
}

TEST(CoResidency, BlocksOfEveryRankOnAGpuMustFitItsMultiprocessors) {
  // An H200 has 132: 8 ranks of 16 blocks fit, of 17 do not.
  EXPECT_EQ(coResidencyProblem(16, 8, 0, 132), "");
  EXPECT_EQ(coResidencyProblem(132, 1, 0, 132), "");
  EXPECT_EQ(coResidencyProblem(44, 3, 0, 132), "");
  EXPECT_EQ(maxCoResidentBlocksPerRank(132, 8), 16);
  EXPECT_EQ(maxCoResidentBlocksPerRank(132, 5), 26);
  EXPECT_EQ(maxCoResidentBlocksPerRank(4, 8), 0);
  EXPECT_EQ(maxCoResidentBlocksPerRank(0, 2), 0);

  const std::string shared = coResidencyProblem(17, 8, 0, 132);
  EXPECT_NE(shared.find("8 ranks share GPU 0 with 17 blocks each: 136 blocks, but it has 132 "
                        "multiprocessors"),
            std::string::npos)
      << shared;
  EXPECT_NE(shared.find("at most 16 blocks per rank (--blocks 16)"), std::string::npos) << shared;

  const std::string three = coResidencyProblem(45, 3, 1, 132);
  EXPECT_NE(three.find("3 ranks share GPU 1 with 45 blocks each: 135 blocks"), std::string::npos)
      << three;
  EXPECT_NE(three.find("--blocks 44"), std::string::npos) << three;

  // One rank per GPU: the rank's own blocks, as before ranks could share a GPU.
  const std::string alone = coResidencyProblem(133, 1, 1, 132);
  EXPECT_EQ(alone, "133 blocks, but GPU 1 has 132 multiprocessors: blocks that wait on each other "
                   "must all be resident");

  // More ranks than multiprocessors: not even one block each.
  const std::string crowded = coResidencyProblem(1, 8, 0, 4);
  EXPECT_NE(crowded.find("run at most 4 ranks"), std::string::npos) << crowded;

  const std::string unknown = coResidencyProblem(1, 2, 0, 0);
  EXPECT_NE(unknown.find("multiprocessor count of GPU 0 could not be read"), std::string::npos)
      << unknown;
}

TEST(SharedHeapLayout, RegionsStartOnScratchPages) {
  const uint64_t MiB = uint64_t(1) << 20;
  Expected<SharedHeapLayout> layout = sharedHeapLayout(3, 1 * MiB);
  ASSERT_TRUE(bool(layout)) << toString(layout.takeError());
  EXPECT_EQ(layout->regionBytes, 1 * MiB);
  EXPECT_EQ(layout->regionStride, kScratchAlign);
  EXPECT_EQ(layout->totalBytes, 3 * kScratchAlign);
  EXPECT_EQ(layout->allocationBytes, 4 * kScratchAlign);
  EXPECT_EQ(layout->offset(0), 0u);
  EXPECT_EQ(layout->offset(1), kScratchAlign);
  EXPECT_EQ(layout->offset(2), 2 * kScratchAlign);

  // One byte over a page takes two; a whole number of pages takes just those.
  layout = sharedHeapLayout(8, kScratchAlign + 1);
  ASSERT_TRUE(bool(layout)) << toString(layout.takeError());
  EXPECT_EQ(layout->regionStride, 2 * kScratchAlign);
  EXPECT_EQ(layout->offset(7), 14 * kScratchAlign);
  EXPECT_EQ(layout->totalBytes, 16 * kScratchAlign);
  layout = sharedHeapLayout(2, 256 * MiB);
  ASSERT_TRUE(bool(layout)) << toString(layout.takeError());
  EXPECT_EQ(layout->regionStride, 256 * MiB);
  // Regions never overlap: each ends before the next begins, the last before the end.
  EXPECT_LE(layout->offset(0) + layout->regionBytes, layout->offset(1));
  EXPECT_LE(layout->offset(1) + layout->regionBytes, layout->totalBytes);
}

TEST(SharedHeapLayout, RefusesWhatCannotBeCarved) {
  auto message = [](int nranks, uint64_t bytes) {
    Expected<SharedHeapLayout> layout = sharedHeapLayout(nranks, bytes);
    return layout ? std::string("accepted") : toString(layout.takeError());
  };
  EXPECT_NE(message(0, 1024).find("0 ranks asked for; 1 to 72 are supported"), std::string::npos);
  EXPECT_NE(message(73, 1024).find("73 ranks asked for"), std::string::npos);
  EXPECT_NE(message(2, 0).find("must not be empty"), std::string::npos);
  const uint64_t huge = std::numeric_limits<uint64_t>::max() / 4;
  EXPECT_NE(message(8, huge).find("do not fit in 64 bits"), std::string::npos);
  EXPECT_EQ(message(1, 1), "accepted");
}

TEST(SharedGpuWorld, RefusesFewerWorkQueuesThanRanks) {
  // Unset: CUDA's 8 queues, one for each of up to 8 ranks.
  EXPECT_EQ(workQueueProblem(nullptr, 8), "");
  EXPECT_EQ(workQueueProblem("32", 8), "");
  EXPECT_EQ(workQueueProblem("4", 4), "");
  // CUDA_DEVICE_MAX_CONNECTIONS=1, as some training frameworks set: every stream in one queue.
  const std::string one = workQueueProblem("1", 4);
  EXPECT_NE(one.find("CUDA_DEVICE_MAX_CONNECTIONS=1 gives the streams of 4 ranks 1 hardware work "
                     "queue: ranks whose streams share a queue can wait on each other forever"),
            std::string::npos)
      << one;
  EXPECT_NE(one.find("Set it to at least 4, or unset it (CUDA's default is 8)"), std::string::npos)
      << one;
  EXPECT_NE(workQueueProblem("7", 8).find("7 hardware work queues"), std::string::npos);
  // 32 is CUDA's most: a larger value does not give 64 ranks a queue each.
  EXPECT_EQ(workQueueProblem("32", 32), "");
  for (const char* value : {"32", "64", "72"})
    EXPECT_NE(workQueueProblem(value, 64).find("64 ranks cannot each have a hardware work queue: "
                                               "CUDA gives at most 32"),
              std::string::npos)
        << value;
  EXPECT_NE(workQueueProblem(nullptr, 72).find("72 ranks cannot each have"), std::string::npos);
  for (const char* notACount : {"", "0", "many", "-3", "4x", "123456"})
    EXPECT_NE(workQueueProblem(notACount, 2).find("is not a count of hardware work queues"),
              std::string::npos)
        << "'" << notACount << "'";
}

TEST(SharedGpuWorld, CreateSetsNoVariable) {
  // With the variable unset, creating a world (which fails here without a GPU, or succeeds on
  // one) leaves it unset: the environment is the program's.
  if (std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"))
    GTEST_SKIP() << "CUDA_DEVICE_MAX_CONNECTIONS is set in this test's environment";
  Expected<std::unique_ptr<SharedGpuWorld>> world = SharedGpuWorld::create(2, 0, 1 << 20);
  if (!world)
    consumeError(world.takeError());
  EXPECT_EQ(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), nullptr);
}

TEST(ManyRankCounts, ReachTheLastChunk) {
  // Small odd counts leave the last chunks empty from 5 ranks on: 197 over 8 ranks is 32 x 6, 5, 0.
  EXPECT_EQ(tests::chunkLength(197, 8, 6), 5u);
  EXPECT_EQ(tests::chunkLength(197, 8, 7), 0u);
  EXPECT_FALSE(tests::lastChunkPartial(197, 8));
  for (int nranks : {2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 72}) {
    SCOPED_TRACE("nranks " + std::to_string(nranks));
    const std::vector<uint64_t> counts = tests::manyRankCounts(nranks);
    ASSERT_EQ(counts.size(), 3u);
    EXPECT_EQ(counts[0], 1u);
    EXPECT_EQ(tests::chunkLength(counts[1], nranks, nranks - 1), 1u);
    EXPECT_TRUE(tests::lastChunkPartial(counts[1], nranks));
    EXPECT_TRUE(tests::lastChunkPartial(counts[2], nranks));
    EXPECT_EQ(counts[2] % 2, 1u);
    // Every chunk before the last is whole.
    for (int k = 0; k + 1 < nranks; ++k)
      EXPECT_EQ(tests::chunkLength(counts[2], nranks, k), chunkSize(counts[2], nranks));
    uint64_t sum = 0;
    for (int k = 0; k < nranks; ++k)
      sum += tests::chunkLength(counts[2], nranks, k);
    EXPECT_EQ(sum, counts[2]);
  }
}

} // namespace
} // namespace collc
