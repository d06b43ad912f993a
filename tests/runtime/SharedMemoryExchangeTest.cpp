// The host exchanges of a world whose ranks share a GPU, without a GPU: forked processes join one
// shared-memory segment and all-gather frames through it, many times in a row; a rank count that
// differs, a rank that never comes and a rank that exits are errors that say so, never hangs; the
// segment's name is gone once every rank has joined. And the checking mode's comparison of the
// ranks' calls.
#include "runtime/SharedMemoryExchange.h"

#include "runtime/CallCheck.h"

#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace collc {
namespace {

constexpr size_t kSlot = 256;

std::string freshName() {
  std::random_device entropy;
  const std::string token = std::to_string(getpid()) + "-" + std::to_string(entropy());
  return SharedMemoryExchange::segmentName(Span<const char>(token.data(), token.size()));
}

/// Runs `body(rank)` in `nranks` forked processes; returns their exit statuses (0: passed).
template <class Body> std::vector<int> inProcesses(int nranks, Body body) {
  std::vector<pid_t> children;
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0)
      _exit(body(r));
    children.push_back(pid);
  }
  std::vector<int> statuses;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
  }
  return statuses;
}

TEST(SharedMemoryExchange, NamesAreDerivedFromTheToken) {
  const char a[] = "world-a", b[] = "world-b";
  EXPECT_EQ(SharedMemoryExchange::segmentName(a), SharedMemoryExchange::segmentName(a));
  EXPECT_NE(SharedMemoryExchange::segmentName(a), SharedMemoryExchange::segmentName(b));
  EXPECT_EQ(SharedMemoryExchange::segmentName(a).rfind("/collc-", 0), 0u);
}

TEST(SharedMemoryExchange, EveryRankGetsEveryFrameManyTimes) {
  for (int nranks : {1, 2, 4}) {
    const std::string name = freshName();
    std::vector<int> statuses = inProcesses(nranks, [&](int rank) {
      Expected<std::unique_ptr<SharedMemoryExchange>> exchange =
          SharedMemoryExchange::join(name, rank, nranks, kSlot, 30);
      if (!exchange)
        return 2;
      std::vector<char> mine(kSlot), all(kSlot * nranks);
      // Back-to-back exchanges: a fast rank must not overwrite a frame a slow one still reads.
      for (int round = 0; round < 300; ++round) {
        std::memset(mine.data(), 0, kSlot);
        std::snprintf(mine.data(), kSlot, "rank %d round %d", rank, round);
        if (Error err = (*exchange)->allGather(mine.data(), all.data(), 30))
          return 3;
        for (int r = 0; r < nranks; ++r) {
          char expected[64];
          std::snprintf(expected, sizeof expected, "rank %d round %d", r, round);
          if (std::strcmp(all.data() + r * kSlot, expected) != 0)
            return 4;
        }
      }
      return 0;
    });
    EXPECT_EQ(statuses, std::vector<int>(nranks, 0)) << nranks << " ranks";
    // Rank 0 removed the name after the first exchange.
    EXPECT_EQ(shm_unlink(name.c_str()), -1) << name << " was left behind";
  }
}

TEST(SharedMemoryExchange, ADifferentRankCountIsNamed) {
  const std::string name = freshName();
  std::vector<int> statuses = inProcesses(2, [&](int rank) {
    // Rank 0 makes it for 2 ranks; rank 1 believes in 3.
    Expected<std::unique_ptr<SharedMemoryExchange>> exchange =
        SharedMemoryExchange::join(name, rank, rank == 0 ? 2 : 3, kSlot, 10);
    if (rank == 0) {
      if (!exchange)
        return 2;
      std::vector<char> mine(kSlot), all(2 * kSlot);
      Error err = (*exchange)->allGather(mine.data(), all.data(), 2); // rank 1 never comes
      return err && toString(std::move(err)).find("rank 1 did not come within 2 s") !=
                         std::string::npos
                 ? 0
                 : 3;
    }
    if (exchange)
      return 4;
    const std::string message = toString(exchange.takeError());
    return message.find("rank 0 made it for 2 ranks") != std::string::npos ? 0 : 5;
  });
  EXPECT_EQ(statuses, (std::vector<int>{0, 0}));
  shm_unlink(name.c_str());
}

TEST(SharedMemoryExchange, ARankThatNeverComesIsAnErrorNotAHang) {
  const std::string name = freshName();
  Expected<std::unique_ptr<SharedMemoryExchange>> waiting =
      SharedMemoryExchange::join(name, 1, 2, kSlot, 0.3);
  ASSERT_FALSE(bool(waiting));
  EXPECT_NE(toString(waiting.takeError()).find("rank 0 did not make it within 0.3 s"),
            std::string::npos);
}

TEST(SharedMemoryExchange, APeerThatExitedIsNamedAtOnce) {
  const std::string name = freshName();
  std::vector<int> statuses = inProcesses(2, [&](int rank) {
    Expected<std::unique_ptr<SharedMemoryExchange>> exchange =
        SharedMemoryExchange::join(name, rank, 2, kSlot, 10);
    if (!exchange)
      return 2;
    std::vector<char> mine(kSlot), all(2 * kSlot);
    if (Error err = (*exchange)->allGather(mine.data(), all.data(), 10))
      return 3;
    if (rank == 1)
      _exit(0); // gone before the second exchange
    // Long before the 60 s bound: the liveness check notices the exit.
    Error err = (*exchange)->allGather(mine.data(), all.data(), 60);
    if (!err)
      return 4;
    return toString(std::move(err)).find("rank 1's process") != std::string::npos ? 0 : 5;
  });
  EXPECT_EQ(statuses, (std::vector<int>{0, 0}));
}

TEST(CallCheck, TheSameCallsPassAndDifferentOnesNameEveryRank) {
  std::vector<uint64_t> table;
  auto add = [&](uint64_t kernel, uint64_t count, CollectiveKind kind, DType dtype, ReduceOp op,
                 int root, bool refused = false) {
    table.insert(table.end(), {kernel, count, uint64_t(kind), uint64_t(dtype), uint64_t(op),
                               uint64_t(root), uint64_t(refused)});
  };
  add(7, 4097, CollectiveKind::AllReduce, DType::F32, ReduceOp::Sum, 0);
  add(7, 4097, CollectiveKind::AllReduce, DType::F32, ReduceOp::Sum, 0);
  EXPECT_EQ(compareCalls(table, 2), "");

  add(9, 4096, CollectiveKind::AllReduce, DType::F32, ReduceOp::Max, 0);
  const std::string message = compareCalls(table, 3);
  EXPECT_NE(message.find("rank 0: allreduce f32 sum, 4097 elements"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 2: allreduce f32 max, 4096 elements"), std::string::npos) << message;

  table.clear();
  add(7, 8, CollectiveKind::Reduce, DType::BF16, ReduceOp::Sum, 1);
  add(7, 8, CollectiveKind::Reduce, DType::BF16, ReduceOp::Sum, 0);
  EXPECT_NE(compareCalls(table, 2).find("rank 1: reduce bf16 sum root 0, 8 elements"),
            std::string::npos)
      << compareCalls(table, 2);

  // Only the variant differs (another strategy): the kernels are told apart.
  table.clear();
  add(1, 8, CollectiveKind::AllGather, DType::F16, ReduceOp::Sum, 0);
  add(2, 8, CollectiveKind::AllGather, DType::F16, ReduceOp::Sum, 0);
  EXPECT_NE(compareCalls(table, 2).find("(kernel #0000000000000002)"), std::string::npos)
      << compareCalls(table, 2);

  // A rank that refused its own call fails it everywhere.
  table.clear();
  add(1, 8, CollectiveKind::AllGather, DType::F16, ReduceOp::Sum, 0);
  add(1, 8, CollectiveKind::AllGather, DType::F16, ReduceOp::Sum, 0, true);
  EXPECT_NE(compareCalls(table, 2).find("rank(s) 1 refused the call"), std::string::npos);
}

} // namespace
} // namespace collc
