// The run harness's pieces that need no GPU.
#include "tools/harness/RunHarness.h"

#include <gtest/gtest.h>
#include <set>

namespace collc {
namespace {

TEST(RunHarness, RankInputSeedsAreDistinctAndStable) {
  std::set<uint64_t> seeds;
  for (uint64_t seed : {1, 2})
    for (uint64_t round = 0; round < 16; ++round)
      for (int rank = 0; rank < 8; ++rank)
        seeds.insert(rankInputSeed(seed, round, rank));
  EXPECT_EQ(seeds.size(), 2u * 16 * 8);
  // The same in every process: a fixed function of its arguments.
  EXPECT_EQ(rankInputSeed(1, 0, 1), rankInputSeed(1, 0, 1));
  EXPECT_NE(rankInputSeed(1, 0, 1), rankInputSeed(1, 1, 0));
}

} // namespace
} // namespace collc
