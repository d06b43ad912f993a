// The parts of a process-per-GPU world that need no GPU: where collectives run (Topology), the
// frames of host exchanges and how a desynchronised peer shows, whether a peer process still
// lives, the symmetric heap's allocator, per-rank input seeds, and ProcessWorld's errors on a
// machine without a launcher or a GPU.
#include "runtime/ExchangeFrame.h"
#include "runtime/ProcessIdentity.h"
#include "runtime/ProcessWorld.h"
#include "runtime/SymmetricWorld.h"
#include "runtime/Topology.h"

#include <csignal>
#include <cstdlib>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace collc {
namespace {

TEST(Topology, OneHostIsOneNodeAndRunsCollcKernels) {
  NodeLayout layout = layoutNodes({"a:boot", "a:boot"}, 0, "");
  EXPECT_EQ(layout.nodeCount, 1);
  EXPECT_EQ(layout.nodeOf, (std::vector<int>{0, 0}));
  CollectivePath path = choosePath(layout, {"", ""});
  EXPECT_FALSE(path.viaNccl);
  EXPECT_NE(path.description.find("2 ranks on 1 node"), std::string::npos) << path.description;
  EXPECT_NE(path.description.find("collc kernels"), std::string::npos) << path.description;
}

TEST(Topology, HostsMakeNodesAndSpanningWorldsGoToNccl) {
  NodeLayout layout = layoutNodes({"b:1", "a:1", "b:1", "a:1"}, 0, "");
  EXPECT_EQ(layout.nodeCount, 2);
  EXPECT_EQ(layout.nodeOf, (std::vector<int>{0, 1, 0, 1}));
  CollectivePath path = choosePath(layout, {});
  EXPECT_TRUE(path.viaNccl);
  EXPECT_NE(path.description.find("4 ranks on 2 nodes (by host)"), std::string::npos)
      << path.description;
  EXPECT_NE(path.description.find("handed wholly to NCCL"), std::string::npos);
}

TEST(Topology, OverridesMakeOneMachineLookLikeSeveralNodes) {
  NodeLayout each = layoutNodes({"a:1", "a:1"}, 1, "COLLC_TREAT_EACH_GPU_AS_NODE=1");
  EXPECT_EQ(each.nodeCount, 2);
  CollectivePath path = choosePath(each, {"", ""});
  EXPECT_TRUE(path.viaNccl);
  EXPECT_NE(path.description.find("(COLLC_TREAT_EACH_GPU_AS_NODE=1)"), std::string::npos)
      << path.description;
  NodeLayout pairs = layoutNodes(std::vector<std::string>(5, "a:1"), 2, "COLLC_NODE_SIZE=2");
  EXPECT_EQ(pairs.nodeCount, 3);
  EXPECT_EQ(pairs.nodeOf, (std::vector<int>{0, 0, 1, 1, 2}));
  NodeLayout whole = layoutNodes(std::vector<std::string>(4, "a:1"), 8, "COLLC_NODE_SIZE=8");
  EXPECT_EQ(whole.nodeCount, 1);
  EXPECT_FALSE(choosePath(whole, std::vector<std::string>(4)).viaNccl);
}

TEST(Topology, AnUnreachablePeerOnOneNodeGoesToNccl) {
  NodeLayout layout = layoutNodes({"a:1", "a:1", "a:1"}, 0, "");
  CollectivePath path =
      choosePath(layout, {"", "has no peer access to rank 2's GPU (PCI 0000:3b:00.0)", ""});
  EXPECT_TRUE(path.viaNccl);
  EXPECT_NE(path.description.find("rank 1 has no peer access to rank 2's GPU"), std::string::npos)
      << path.description;
}

TEST(ExchangeFrame, RoundTripsPayloadsInRankOrder) {
  std::vector<char> slots(3 * kExchangeSlotBytes);
  const std::string payloads[] = {"", std::string(kExchangePayloadBytes, 'x'),
                                  std::string("a\0b", 3)};
  for (int r = 0; r < 3; ++r)
    ASSERT_FALSE(bool(packExchangeFrame(7, r, "layout of allreduce_oneshot", payloads[r],
                                        slots.data() + r * kExchangeSlotBytes)));
  Expected<std::vector<std::string>> got =
      unpackExchangeFrames(slots.data(), 3, 7, "layout of allreduce_oneshot", 0);
  ASSERT_TRUE(bool(got)) << toString(got.takeError());
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ((*got)[r], payloads[r]);
}

TEST(ExchangeFrame, TooBigPayloadIsAnError) {
  std::vector<char> slot(kExchangeSlotBytes);
  Error err =
      packExchangeFrame(1, 0, "big", std::string(kExchangePayloadBytes + 1, 'x'), slot.data());
  ASSERT_TRUE(bool(err));
  EXPECT_NE(toString(std::move(err)).find("at most"), std::string::npos);
}

TEST(ExchangeFrame, APeerInAnotherExchangeIsNamed) {
  std::vector<char> slots(2 * kExchangeSlotBytes);
  ASSERT_FALSE(bool(packExchangeFrame(12, 0, "run verdicts", "", slots.data())));
  ASSERT_FALSE(bool(packExchangeFrame(12, 1, "layout of allreduce_twoshot", "",
                                      slots.data() + kExchangeSlotBytes)));
  Expected<std::vector<std::string>> got =
      unpackExchangeFrames(slots.data(), 2, 12, "run verdicts", 0);
  ASSERT_FALSE(bool(got));
  const std::string message = toString(got.takeError());
  EXPECT_NE(message.find("rank 1 is at exchange #12 'layout of allreduce_twoshot'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("different sequences of collective calls"), std::string::npos);
  // A rank one exchange behind.
  ASSERT_FALSE(
      bool(packExchangeFrame(11, 1, "run verdicts", "", slots.data() + kExchangeSlotBytes)));
  got = unpackExchangeFrames(slots.data(), 2, 12, "run verdicts", 0);
  ASSERT_FALSE(bool(got));
  EXPECT_NE(toString(got.takeError()).find("rank 1 is at exchange #11"), std::string::npos);
  // Zeros (a slot NCCL never filled) are not a frame.
  std::fill(slots.begin() + kExchangeSlotBytes, slots.end(), 0);
  got = unpackExchangeFrames(slots.data(), 2, 12, "run verdicts", 0);
  ASSERT_FALSE(bool(got));
  EXPECT_NE(toString(got.takeError()).find("not a collc exchange frame"), std::string::npos);
}

TEST(ProcessIdentity, ThisProcessIsAlive) {
  ProcessIdentity self = thisProcessIdentity();
  EXPECT_EQ(self.pid, getpid());
  EXPECT_GT(self.startTicks, 0u);
  EXPECT_FALSE(self.host.empty());
  EXPECT_EQ(checkLiveness(self), Liveness::Alive);
  ProcessIdentity elsewhere = self;
  elsewhere.host += "-other";
  EXPECT_EQ(checkLiveness(elsewhere), Liveness::Unknown);
  ProcessIdentity reused = self;
  reused.startTicks += 1; // the same pid, another process
  EXPECT_EQ(checkLiveness(reused), Liveness::Gone);
}

TEST(ProcessIdentity, AnExitedChildIsGoneEvenAsAZombie) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause(); // until killed
    _exit(0);
  }
  ProcessIdentity identity = thisProcessIdentity();
  identity.pid = child;
  uint64_t start = 0;
  char state = '?';
  ASSERT_TRUE(readProcessStat(child, start, state));
  identity.startTicks = start;
  EXPECT_EQ(checkLiveness(identity), Liveness::Alive);
  kill(child, SIGKILL);
  // Not reaped yet: a zombie, which has exited all the same.
  for (int i = 0; i < 200 && readProcessStat(child, start, state) && state != 'Z'; ++i)
    usleep(10000);
  EXPECT_EQ(checkLiveness(identity), Liveness::Gone);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(checkLiveness(identity), Liveness::Gone);
}

/// A world without GPUs: enough to exercise the allocator every backend shares.
class FakeWorld final : public SymmetricWorld {
public:
  explicit FakeWorld(size_t heapBytes) : SymmetricWorld(heapBytes) {}
  int nranks() const override { return 4; }
  const std::vector<int>& localRanks() const override { return local_; }
  int device(int) const override { return 0; }
  cudaStream_t stream(int) const override { return nullptr; }
  char* heapBase(int) const override { return nullptr; }
  char* peerHeap(int, int) const override { return nullptr; }
  std::string pathDescription() const override { return "fake"; }

private:
  std::vector<int> local_ = {2};
};

TEST(SymmetricWorld, AllocatorAlignsExhaustsAndReleases) {
  FakeWorld world(1 << 20);
  EXPECT_EQ(world.localIndex(2), 0);
  EXPECT_EQ(world.localIndex(1), -1);
  EXPECT_TRUE(world.isLocal(2));
  EXPECT_FALSE(world.isLocal(0));
  Expected<uint64_t> a = world.allocate(3, 256);
  ASSERT_TRUE(bool(a));
  Expected<uint64_t> b = world.allocate(10, 4096);
  ASSERT_TRUE(bool(b));
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, 4096u);
  const uint64_t mark = world.heapUsed();
  Expected<uint64_t> tooBig = world.allocate(1 << 20);
  ASSERT_FALSE(bool(tooBig));
  EXPECT_NE(toString(tooBig.takeError()).find("heap exhausted"), std::string::npos);
  Expected<uint64_t> badAlign = world.allocate(8, 3);
  ASSERT_FALSE(bool(badAlign));
  EXPECT_NE(toString(badAlign.takeError()).find("not a power of two"), std::string::npos);
  EXPECT_EQ(world.heapUsed(), mark);
  world.releaseTo(0);
  EXPECT_EQ(world.heapUsed(), 0u);
  // One process: every row of a gather is already there; a wrong table size is an error.
  std::vector<uint64_t> table(4 * 2);
  EXPECT_FALSE(bool(world.allGatherRanks("t", table, 2)));
  Error wrong = world.allGatherRanks("t", table, 3);
  ASSERT_TRUE(bool(wrong));
  consumeError(std::move(wrong));
  EXPECT_FALSE(bool(world.barrier("b")));
}

TEST(ProcessWorld, SaysWhyItCannotStart) {
  // Not launched: the error says how to launch.
  for (const char* name : {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"})
    if (std::getenv(name))
      GTEST_SKIP() << name << " is set: this test runs outside a launcher";
  Expected<std::unique_ptr<ProcessWorld>> world = ProcessWorld::fromEnvironment();
  ASSERT_FALSE(bool(world));
  EXPECT_NE(toString(world.takeError()).find("collc run --procs N"), std::string::npos);
  // Launched, but the rendezvous is malformed or (here) there is no GPU: named either way.
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("COLLC_RENDEZVOUS", "tcp:nohost", 1);
  world = ProcessWorld::fromEnvironment();
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  unsetenv("COLLC_RENDEZVOUS");
  ASSERT_FALSE(bool(world));
  const std::string message = toString(world.takeError());
  EXPECT_EQ(message.rfind("rank 0: process world: ", 0), 0u) << message;
  EXPECT_TRUE(message.find("no GPU") != std::string::npos ||
              message.find("COLLC_RENDEZVOUS='tcp:nohost'") != std::string::npos)
      << message;
}

TEST(ProcessWorld, AdoptRejectsNullCommunicator) {
  Expected<std::unique_ptr<ProcessWorld>> world = ProcessWorld::adopt(nullptr);
  ASSERT_FALSE(bool(world));
  const std::string message = toString(world.takeError());
  EXPECT_TRUE(message.find("needs a communicator") != std::string::npos ||
              message.find("NCCL not found") != std::string::npos)
      << message;
}

} // namespace
} // namespace collc
