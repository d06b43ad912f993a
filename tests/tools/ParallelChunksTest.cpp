// tools/harness/ParallelChunks.h: every element visited once whatever the thread count, and
// failures counted across chunks with the first ones reported in order.
#include "tools/harness/ParallelChunks.h"

#include <atomic>
#include <gtest/gtest.h>
#include <vector>

namespace collc {
namespace {

TEST(ParallelChunks, EveryElementOnceInItsChunk) {
  const uint64_t count = 3 * kParallelChunk + 17;
  std::vector<std::atomic<int>> visits(count);
  std::atomic<uint64_t> chunks{0};
  forEachChunk(count, [&](uint64_t chunk, uint64_t begin, uint64_t end) {
    EXPECT_EQ(begin, chunk * kParallelChunk);
    EXPECT_LE(end, count);
    for (uint64_t i = begin; i < end; ++i)
      ++visits[i];
    ++chunks;
  });
  EXPECT_EQ(chunks.load(), parallelChunkCount(count));
  EXPECT_EQ(parallelChunkCount(count), 4u);
  for (uint64_t i = 0; i < count; ++i)
    ASSERT_EQ(visits[i].load(), 1) << i;
  forEachChunk(0, [](uint64_t, uint64_t, uint64_t) { ADD_FAILURE() << "no chunk for nothing"; });
}

TEST(ParallelChunks, FailuresAreAllCountedAndTheFirstReportedInOrder) {
  const uint64_t count = 4 * kParallelChunk;
  // Failing: element 5 of chunk 0, none in chunk 1, three in chunk 2, every 1000th in chunk 3.
  auto fails = [&](uint64_t i) {
    const uint64_t chunk = i / kParallelChunk, at = i % kParallelChunk;
    return (chunk == 0 && at == 5) || (chunk == 2 && at < 3) || (chunk == 3 && at % 1000 == 0);
  };
  std::vector<uint64_t> reported;
  const uint64_t failures = countFailures(
      count, 3, [&](uint64_t i) { return !fails(i); }, [&](uint64_t i) { reported.push_back(i); });
  const uint64_t inLastChunk = (kParallelChunk + 999) / 1000;
  EXPECT_EQ(failures, 1 + 3 + inLastChunk);
  EXPECT_EQ(reported, (std::vector<uint64_t>{5, 2 * kParallelChunk, 2 * kParallelChunk + 1}));
  reported.clear();
  EXPECT_EQ(countFailures(
                count, 0, [&](uint64_t i) { return !fails(i); },
                [&](uint64_t i) { reported.push_back(i); }),
            failures);
  EXPECT_TRUE(reported.empty());
}

} // namespace
} // namespace collc
