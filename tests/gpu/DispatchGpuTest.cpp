// Dispatch by size on 2 GPUs: one Dispatcher whose calls of different sizes run different
// variants, each call checked against a float64 reference: eager calls across every range of the
// built-in rule, a CUDA graph that captures calls of three sizes and is replayed with fresh
// inputs, two host threads (one per rank) launching the same mixed sequence, and a table that
// overrides the built-in rule.
#include "pipeline/CompileDispatch.h"
#include "runtime/Dispatcher.h"
#include "tests/gpu/DispatchCalls.h"
#include "tests/gpu/GpuTestMain.h"

#include <fstream>
#include <llvm/Support/FileSystem.h>
#include <set>
#include <thread>

namespace collc {
namespace {

constexpr uint64_t K = 1024;

using gputest::CallBuffers;

/// The 2-GPU world's dispatch calls (tests/gpu/DispatchCalls.h).
class DispatchGpu : public ::testing::Test {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }

  std::unique_ptr<Dispatcher> makeDispatcher(DispatchRequest request) {
    LocalWorld& world = *gputest::world();
    request.nranks = world.nranks();
    auto program = compileDispatchProgram(request);
    EXPECT_TRUE(bool(program)) << toString(program.takeError());
    if (!program)
      return nullptr;
    return gputest::makeDispatcher(world, std::move(*program));
  }

  CallBuffers allocate(DType dtype, uint64_t count) {
    return gputest::allocateCall(*gputest::world(), dtype, count);
  }
  void refill(CallBuffers& call, DType dtype, uint64_t seed) {
    gputest::refillCall(*gputest::world(), call, dtype, seed);
  }
  void check(const CallBuffers& call, DType dtype, ReduceOp op, const std::string& what) {
    gputest::checkCall(call, dtype, op, what);
  }
  void launchAll(const Dispatcher& dispatcher, const CallBuffers& call) {
    gputest::launchCall(*gputest::world(), dispatcher, call);
  }
  void synchronize(const Dispatcher& dispatcher) {
    gputest::synchronizeCalls(*gputest::world(), dispatcher);
  }
};

/// Element counts that reach every range of the built-in rule (bf16: 1 MiB is 512 Ki elements,
/// 4 MiB is 2 Mi, 16 MiB is 8 Mi), with odd counts at the edges of the vectorized paths.
const uint64_t kCounts[] = {
    1, 7, 9, 512, 4097, 512 * K - 1, 512 * K, 1024 * K + 5, 2048 * K + 3, 8192 * K + 1};

TEST_F(DispatchGpu, EagerCallsAcrossEveryRangeOfTheDefaultRule) {
  DispatchRequest request;
  request.dtype = DType::BF16;
  request.maxCount = 8192 * K + 1; // the largest of kCounts
  request.table = "none";
  auto dispatcher = makeDispatcher(request);
  ASSERT_TRUE(dispatcher);
  EXPECT_FALSE(dispatcher->program().plan().fromTable);
  std::set<size_t> used;
  uint64_t seed = 1;
  for (uint64_t count : kCounts) {
    used.insert(dispatcher->variantFor(count));
    CallBuffers call = allocate(request.dtype, count);
    ASSERT_EQ(call.in.size(), size_t(gputest::world()->nranks()));
    // Two calls per size, so that each variant runs twice in a row and after another variant.
    for (int round = 0; round < 2; ++round) {
      refill(call, request.dtype, seed++);
      launchAll(*dispatcher, call);
      synchronize(*dispatcher);
      check(call, request.dtype, request.op,
            "count " + std::to_string(count) + " round " + std::to_string(round));
    }
  }
  EXPECT_EQ(used.size(), 4u) << "the sizes should reach all four variants of the rule";
}

TEST_F(DispatchGpu, EveryDtypeAndOpDispatches) {
  for (DType dtype : kAllDTypes)
    for (ReduceOp op : kAllReduceOps) {
      DispatchRequest request;
      request.dtype = dtype;
      request.op = op;
      request.maxCount = 512 * K;
      request.table = "none";
      auto dispatcher = makeDispatcher(request);
      ASSERT_TRUE(dispatcher);
      for (uint64_t count : {uint64_t(7), 16 * K, 512 * K}) {
        CallBuffers call = allocate(dtype, count);
        refill(call, dtype, count);
        launchAll(*dispatcher, call);
        synchronize(*dispatcher);
        check(call, dtype, op,
              std::string(name(dtype)) + " " + std::string(name(op)) + " count " +
                  std::to_string(count));
      }
    }
}

TEST_F(DispatchGpu, GraphCapturesTheChoiceOfEachCallAndReplays) {
  LocalWorld& world = *gputest::world();
  DispatchRequest request;
  request.dtype = DType::BF16;
  request.maxCount = 2048 * K;
  request.table = "none";
  auto dispatcher = makeDispatcher(request);
  ASSERT_TRUE(dispatcher);
  const uint64_t counts[] = {512, 1024 * K, 2048 * K, 512}; // three variants, then the first again
  std::set<size_t> used;
  for (uint64_t count : counts)
    used.insert(dispatcher->variantFor(count));
  EXPECT_EQ(used.size(), 3u);
  std::vector<CallBuffers> calls;
  for (uint64_t count : counts)
    calls.push_back(allocate(request.dtype, count));
  gputest::captureAndReplayChecked(world, *dispatcher, calls, /*replays=*/3, /*seed=*/1000);
}

TEST_F(DispatchGpu, TwoThreadsOneRankEachLaunchTheSameMixedSequence) {
  LocalWorld& world = *gputest::world();
  ASSERT_EQ(world.nranks(), 2);
  DispatchRequest request;
  request.dtype = DType::F16;
  request.maxCount = 8192 * K + 1; // the largest of kCounts
  request.table = "none";
  auto dispatcher = makeDispatcher(request);
  ASSERT_TRUE(dispatcher);
  std::vector<CallBuffers> calls;
  for (int i = 0; i < 24; ++i) {
    calls.push_back(allocate(request.dtype, kCounts[size_t(i) % std::size(kCounts)]));
    refill(calls.back(), request.dtype, 77 + i);
  }
  std::string errors[2];
  auto rankThread = [&](int rank) {
    for (const CallBuffers& call : calls)
      if (Error err = dispatcher->launch(rank, call.in[rank].get(), call.out[rank].get(),
                                         call.count, world.stream(rank)))
        errors[rank] += toString(std::move(err)) + "\n";
  };
  std::thread rank0(rankThread, 0), rank1(rankThread, 1);
  rank0.join();
  rank1.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  synchronize(*dispatcher);
  for (size_t c = 0; c < calls.size(); ++c)
    check(calls[c], request.dtype, request.op, "call " + std::to_string(c));
}

TEST_F(DispatchGpu, ATableOverridesTheDefaultRule) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("collc-dispatch", "tsv", path));
  {
    std::ofstream table(path.c_str());
    table << "# gpu ranks topology collective dtype op from to bytes spec sync blocks threads "
             "vector unroll us best\n"
             "* 2 * allreduce bf16 sum 0 4K 1K allreduce_twoshot ll 4 256 16 1 3.0 *\n"
             "* 2 * allreduce bf16 sum 4K inf 1M allreduce_oneshot barrier 16 256 8 2 9.0 *\n";
  }
  DispatchRequest request;
  request.dtype = DType::BF16;
  request.maxCount = 256 * K;
  request.table = std::string(path);
  auto dispatcher = makeDispatcher(request);
  llvm::sys::fs::remove(path);
  ASSERT_TRUE(dispatcher);
  const DispatchProgram& program = dispatcher->program();
  EXPECT_TRUE(program.plan().fromTable) << program.plan().source;
  ASSERT_EQ(program.variants().size(), 2u);
  EXPECT_EQ(program.variants()[dispatcher->variantFor(100)].compiled.specName, "allreduce_twoshot");
  EXPECT_EQ(program.variants()[dispatcher->variantFor(100)].compiled.launch.blocks, 4);
  EXPECT_EQ(program.variants()[dispatcher->variantFor(4 * K)].compiled.launch.threads, 256);
  for (uint64_t count : {uint64_t(100), uint64_t(2 * K), uint64_t(2 * K + 1), 256 * K}) {
    CallBuffers call = allocate(request.dtype, count);
    refill(call, request.dtype, count);
    launchAll(*dispatcher, call);
    synchronize(*dispatcher);
    check(call, request.dtype, request.op, "count " + std::to_string(count));
  }
}

TEST_F(DispatchGpu, ACallAboveMaxCountIsAnError) {
  DispatchRequest request;
  request.maxCount = 1024;
  request.table = "none";
  auto dispatcher = makeDispatcher(request);
  ASSERT_TRUE(dispatcher);
  CallBuffers call = allocate(request.dtype, 2048);
  Error err =
      dispatcher->launch(0, call.in[0].get(), call.out[0].get(), 2048, gputest::world()->stream(0));
  ASSERT_TRUE(bool(err));
  EXPECT_NE(toString(std::move(err)).find("at most 1024"), std::string::npos);
}

} // namespace
} // namespace collc
