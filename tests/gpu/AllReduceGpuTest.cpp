// The stdlib AllReduce specs, compiled for every sync strategy and JIT-compiled for the GPUs at
// hand, run on 2 GPUs and checked against a float64 reference: every dtype and op over sizes that
// hit the edges of the vectorized paths (1, 7, 8, 9 elements, odd and large counts), with inputs
// that include -0.0, subnormals, NaN, +-inf and large magnitudes; a graph of 10,000 back-to-back
// calls with every call checked; and the watchdog's report when a peer never shows up.
#include "compiler/Compile.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "tests/StdlibApplicability.h"
#include "tests/StdlibStrategies.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <chrono>
#include <llvm/Support/raw_ostream.h>
#include <map>
#include <ostream>
#include <tuple>

namespace collc {
namespace {

/// A spec compiled for one (dtype, op) on 2 ranks, with its cubin; or why that failed.
using gputest::Variant;
using gputest::variantFor;

std::string shortSpecName(const std::string& spec) {
  const std::string prefix = "allreduce_";
  return spec.rfind(prefix, 0) == 0 ? spec.substr(prefix.size()) : spec;
}

using tests::kGpuStrategies;
using tests::strategyApplies;

struct AllReduceCase {
  std::string spec;
  SyncKind sync;
  DType dtype;
  ReduceOp op;
  uint64_t count;
};

void PrintTo(const AllReduceCase& c, std::ostream* os) {
  *os << c.spec << " " << name(c.sync) << " " << name(c.dtype) << " " << name(c.op) << " count "
      << c.count;
}

std::vector<AllReduceCase> allReduceCases() {
  const uint64_t counts[] = {1, 7, 8, 9, 1000, 4097, 65536 + 3, 1 << 20};
  std::vector<AllReduceCase> cases;
  for (const char* spec : {"allreduce_oneshot", "allreduce_twoshot"}) {
    for (SyncKind sync : kGpuStrategies) {
      for (DType dtype : kAllDTypes)
        for (ReduceOp op : kAllReduceOps)
          for (uint64_t count : counts)
            if (strategyApplies(sync, op))
              cases.push_back({spec, sync, dtype, op, count});
      // 16 Mi elements (64 MiB per rank) only in f32: the large-size paths are the same per type.
      for (ReduceOp op : kAllReduceOps)
        if (strategyApplies(sync, op))
          cases.push_back({spec, sync, DType::F32, op, uint64_t(16) << 20});
    }
  }
  return cases;
}

class AllReduceGpu : public ::testing::TestWithParam<AllReduceCase> {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

/// Runs `variant` on `count` elements with special values among the inputs, every call checked
/// against the float64 reference.
void expectMatchesReference(const Variant& variant, uint64_t count, uint64_t seed) {
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  LocalWorld& world = *gputest::world();
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, variant.compiled, variant.cubin, count);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  RunOptions options;
  options.reference = variant.spec;
  options.count = count;
  options.time = false;
  options.specialValues = true;
  options.seed = seed;
  Expected<RunReport> report = runAndCheck(world, **instance, variant.compiled, options);
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_TRUE(report->correct) << report->firstMismatches;
  EXPECT_EQ(report->checkedCalls, options.checks);
}

TEST_P(AllReduceGpu, MatchesFloat64Reference) {
  const AllReduceCase& c = GetParam();
  expectMatchesReference(variantFor(c.spec, c.dtype, c.op, c.sync), c.count,
                         c.count * 31 + static_cast<uint64_t>(c.dtype));
}

INSTANTIATE_TEST_SUITE_P(Stdlib, AllReduceGpu, ::testing::ValuesIn(allReduceCases()),
                         [](const ::testing::TestParamInfo<AllReduceCase>& info) {
                           const AllReduceCase& c = info.param;
                           return shortSpecName(c.spec) + "_" + std::string(name(c.sync)) + "_" +
                                  std::string(name(c.dtype)) + "_" + std::string(name(c.op)) +
                                  "_n" + std::to_string(c.count);
                         });

// Unroll: each thread takes several vectors, a stride apart, per loop iteration. Sizes below
// one stride, at a stride's tail and of many strides (two-shot's 16 x 512 threads move 64 Ki
// elements of bf16 a stride, so 1 Mi elements take 16), for every strategy that unroll applies
// to (ll128's line loops are refused).
struct UnrolledCase {
  std::string spec;
  SyncKind sync;
  int unroll;
  uint64_t count;
};

void PrintTo(const UnrolledCase& c, std::ostream* os) {
  *os << c.spec << " " << name(c.sync) << " unroll " << c.unroll << " count " << c.count;
}

std::vector<UnrolledCase> unrolledCases() {
  std::vector<UnrolledCase> cases;
  for (const char* spec : {"allreduce_oneshot", "allreduce_twoshot"})
    for (SyncKind sync : kGpuStrategies)
      for (int unroll : {2, 4})
        for (uint64_t count : {uint64_t(9), uint64_t(65536 + 3), uint64_t(1) << 20})
          if (strategyApplies(sync, ReduceOp::Sum))
            cases.push_back({spec, sync, unroll, count});
  return cases;
}

class UnrolledGpu : public ::testing::TestWithParam<UnrolledCase> {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

TEST_P(UnrolledGpu, MatchesFloat64Reference) {
  const UnrolledCase& c = GetParam();
  const Variant& variant = variantFor(c.spec, DType::BF16, ReduceOp::Sum, c.sync, /*root=*/0,
                                      /*rowLength=*/0, /*threads=*/0, c.unroll);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  ASSERT_NE(variant.compiled.cudaSource.find("i_unrolled"), std::string::npos)
      << "the kernel has no unrolled loop";
  expectMatchesReference(variant, c.count, c.count * 37 + uint64_t(c.unroll));
}

INSTANTIATE_TEST_SUITE_P(Stdlib, UnrolledGpu, ::testing::ValuesIn(unrolledCases()),
                         [](const ::testing::TestParamInfo<UnrolledCase>& info) {
                           const UnrolledCase& c = info.param;
                           return shortSpecName(c.spec) + "_" + std::string(name(c.sync)) + "_u" +
                                  std::to_string(c.unroll) + "_n" + std::to_string(c.count);
                         });

// Whole stores (one store instruction per vector): every AllReduce strategy, two element types,
// below one stride, at a stride's tail and of many strides. The vector path and the element path
// of store_plain both run.
struct WholeStoresCase {
  std::string spec;
  SyncKind sync;
  DType dtype;
  uint64_t count;
};

void PrintTo(const WholeStoresCase& c, std::ostream* os) {
  *os << c.spec << " " << name(c.sync) << " " << name(c.dtype) << " count " << c.count;
}

std::vector<WholeStoresCase> wholeStoresCases() {
  std::vector<WholeStoresCase> cases;
  for (const char* spec : {"allreduce_oneshot", "allreduce_twoshot", "allreduce_ring"})
    for (SyncKind sync : kGpuStrategies)
      for (DType dtype : {DType::BF16, DType::F32})
        for (uint64_t count : {uint64_t(9), uint64_t(65536 + 3), uint64_t(1) << 20})
          if (strategyApplies(sync, ReduceOp::Sum) &&
              tests::specAccepts(*tests::findStdlibSpec(spec), sync, ReduceOp::Sum))
            cases.push_back({spec, sync, dtype, count});
  return cases;
}

class WholeStoresGpu : public ::testing::TestWithParam<WholeStoresCase> {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

TEST_P(WholeStoresGpu, MatchesFloat64Reference) {
  const WholeStoresCase& c = GetParam();
  const Variant& variant = variantFor(c.spec, c.dtype, ReduceOp::Sum, c.sync, /*root=*/0,
                                      /*rowLength=*/0, /*threads=*/0, /*unroll=*/1,
                                      /*wholeStores=*/1);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  ASSERT_NE(variant.compiled.cudaSource.find("kWholeStores = true"), std::string::npos);
  expectMatchesReference(variant, c.count, c.count * 41 + 7);
}

INSTANTIATE_TEST_SUITE_P(Stdlib, WholeStoresGpu, ::testing::ValuesIn(wholeStoresCases()),
                         [](const ::testing::TestParamInfo<WholeStoresCase>& info) {
                           const WholeStoresCase& c = info.param;
                           return shortSpecName(c.spec) + "_" + std::string(name(c.sync)) + "_" +
                                  std::string(name(c.dtype)) + "_n" + std::to_string(c.count);
                         });

struct StressCase {
  std::string spec;
  SyncKind sync;
  DType dtype;
  int threads = 0; // per block; 0: the spec's own
};

void PrintTo(const StressCase& c, std::ostream* os) {
  *os << c.spec << " " << name(c.sync) << " " << name(c.dtype) << " sum";
  if (c.threads)
    *os << " " << c.threads << " threads";
}

std::vector<StressCase> stressCases() {
  std::vector<StressCase> cases;
  for (const char* spec : {"allreduce_oneshot", "allreduce_twoshot"})
    for (SyncKind sync : kGpuStrategies)
      for (DType dtype : {DType::F32, DType::BF16})
        cases.push_back({spec, sync, dtype});
  // Blocks of one warp (the tuner's picks at small sizes): the epoch's read and store at the
  // kernel's head are ordered by __syncwarp there, not by a block barrier.
  for (const char* spec : {"allreduce_oneshot", "allreduce_twoshot"})
    for (SyncKind sync : kGpuStrategies)
      cases.push_back({spec, sync, DType::BF16, 32});
  return cases;
}

class GraphStressGpu : public ::testing::TestWithParam<StressCase> {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

// 10,000 calls back to back in one graph, each with its own input and output: a call that starts
// before its peers finished the previous one (copy, flag or epoch reuse) corrupts some call's
// output.
TEST_P(GraphStressGpu, TenThousandBackToBackCallsAllCorrect) {
  const StressCase& c = GetParam();
  const uint64_t count = 1024 + 5;
  const int calls = 10000;
  LocalWorld& world = *gputest::world();
  const Variant& variant =
      variantFor(c.spec, c.dtype, ReduceOp::Sum, c.sync, /*root=*/0, /*rowLength=*/0, c.threads);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, variant.compiled, variant.cubin, count);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  Expected<RunReport> report =
      runGraphStress(world, **instance, variant.compiled, count, calls, /*seed=*/42,
                     variant.spec.get(), /*specialValues=*/true);
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_TRUE(report->correct) << report->firstMismatches;
  EXPECT_EQ(report->checkedCalls, calls);
  RecordProperty("us_per_call", std::to_string(report->usPerOp));
}

INSTANTIATE_TEST_SUITE_P(Stdlib, GraphStressGpu, ::testing::ValuesIn(stressCases()),
                         [](const ::testing::TestParamInfo<StressCase>& info) {
                           return shortSpecName(info.param.spec) + "_" +
                                  std::string(name(info.param.sync)) + "_" +
                                  std::string(name(info.param.dtype)) + "_sum" +
                                  (info.param.threads ? "_t" + std::to_string(info.param.threads)
                                                      : std::string());
                         });

struct WatchdogCase {
  std::string spec;
  SyncKind sync;
};

void PrintTo(const WatchdogCase& c, std::ostream* os) {
  *os << c.spec << " " << name(c.sync);
}

std::vector<WatchdogCase> watchdogCases() {
  std::vector<WatchdogCase> cases;
  for (const char* spec : {"allreduce_oneshot", "allreduce_twoshot"})
    for (SyncKind sync : kGpuStrategies)
      cases.push_back({spec, sync});
  return cases;
}

class WatchdogGpu : public ::testing::TestWithParam<WatchdogCase> {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

// Rank 1 never launches: rank 0's kernel must give up after its timeout, within a second of it,
// and say what it waited for (the peer's barrier flag, or the buffer whose data never came),
// instead of hanging the process.
TEST_P(WatchdogGpu, ReportsAPeerThatNeverCame) {
  const uint64_t count = 4096;
  LocalWorld& world = *gputest::world();
  const WatchdogCase& c = GetParam();
  const Variant& variant = variantFor(c.spec, DType::F32, ReduceOp::Sum, c.sync);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, variant.compiled, variant.cubin, count,
                                 /*timeoutNs=*/200'000'000);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  Expected<DeviceBuffer> in = DeviceBuffer::allocate(world.device(0), count * 4);
  ASSERT_TRUE(bool(in)) << toString(in.takeError());
  Expected<DeviceBuffer> out = DeviceBuffer::allocate(world.device(0), count * 4);
  ASSERT_TRUE(bool(out)) << toString(out.takeError());
  Expected<DeviceBuffer> in1 = DeviceBuffer::allocate(world.device(1), count * 4);
  ASSERT_TRUE(bool(in1)) << toString(in1.takeError());
  Expected<DeviceBuffer> out1 = DeviceBuffer::allocate(world.device(1), count * 4);
  ASSERT_TRUE(bool(out1)) << toString(out1.takeError());
  std::vector<cudaStream_t> streams = {world.stream(0), world.stream(1)};

  Error launched = (*instance)->launch(0, in->get(), out->get(), count, streams[0]);
  ASSERT_FALSE(bool(launched)) << toString(std::move(launched));
  const auto start = std::chrono::steady_clock::now();
  Error waited = (*instance)->synchronize(streams);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string message = waited ? toString(std::move(waited)) : "";
  EXPECT_NE(message.find("watchdog: rank 0 block"), std::string::npos) << message;
  if (c.sync == SyncKind::Barrier)
    EXPECT_NE(message.find("for rank 1"), std::string::npos) << message;
  else
    EXPECT_NE(message.find(" of scratch '"), std::string::npos) << message;
  EXPECT_EQ(message.find("hang:"), std::string::npos) << message;
  EXPECT_LT(seconds, 0.2 + 1.0) << "the error must come within the bound plus a second";
  RecordProperty("seconds_to_report", std::to_string(seconds));

  // Let rank 1 make the same call, so that a rank-0 kernel still waiting (a watchdog that
  // reported but did not give up) can finish and the process can exit; its own watchdog may
  // trip in turn, which is expected here.
  launched = (*instance)->launch(1, in1->get(), out1->get(), count, streams[1]);
  ASSERT_FALSE(bool(launched)) << toString(std::move(launched));
  Error drained = (*instance)->synchronize(streams);
  std::string drainedMessage = drained ? toString(std::move(drained)) : "";
  EXPECT_EQ(drainedMessage.find("hang:"), std::string::npos) << drainedMessage;
}

INSTANTIATE_TEST_SUITE_P(Stdlib, WatchdogGpu, ::testing::ValuesIn(watchdogCases()),
                         [](const ::testing::TestParamInfo<WatchdogCase>& info) {
                           return shortSpecName(info.param.spec) + "_" +
                                  std::string(name(info.param.sync));
                         });

class LocalWorldGpu : public ::testing::Test {
protected:
  void SetUp() override { COLLC_REQUIRE_GPU_WORLD(); }
};

TEST_F(LocalWorldGpu, AllocationsAreAlignedAndGivenBack) {
  LocalWorld& world = *gputest::world();
  const uint64_t mark = world.heapUsed();
  Expected<uint64_t> a = world.allocate(3, 256);
  ASSERT_TRUE(bool(a)) << toString(a.takeError());
  Expected<uint64_t> b = world.allocate(10, 4096);
  ASSERT_TRUE(bool(b)) << toString(b.takeError());
  EXPECT_EQ(*a % 256, 0u);
  EXPECT_EQ(*b % 4096, 0u);
  EXPECT_GE(*b, *a + 3);
  Expected<uint64_t> tooBig = world.allocate(world.heapBytes());
  EXPECT_FALSE(bool(tooBig));
  EXPECT_NE(toString(tooBig.takeError()).find("heap exhausted"), std::string::npos);
  world.releaseTo(mark);
  EXPECT_EQ(world.heapUsed(), mark);
}

TEST_F(LocalWorldGpu, RejectsOneGpuForTwoRanks) {
  Expected<std::unique_ptr<LocalWorld>> world = LocalWorld::create({0, 0}, 1 << 20);
  ASSERT_FALSE(bool(world));
  EXPECT_NE(toString(world.takeError()).find("both use GPU 0"), std::string::npos);
}

TEST_F(LocalWorldGpu, InstanceRejectsTooManyElements) {
  LocalWorld& world = *gputest::world();
  const Variant& variant = variantFor("allreduce_oneshot", DType::F32, ReduceOp::Sum);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, variant.compiled, variant.cubin, 100);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  Error err = (*instance)->launch(0, nullptr, nullptr, 101, world.stream(0));
  ASSERT_TRUE(bool(err));
  EXPECT_NE(toString(std::move(err)).find("at most 100"), std::string::npos);
}

} // namespace
} // namespace collc
