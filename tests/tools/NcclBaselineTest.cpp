// The NCCL baseline of `collc bench`: its behaviour where it cannot run, and its measurements on
// the GPU machine. Everything here passes on a machine without NCCL or without a GPU; the GPU
// parts skip there and say why.
#include "tools/bench/NcclBaseline.h"

#include "compiler/Compile.h"
#include "runtime/Devices.h"
#include "runtime/NcclLibrary.h"
#include "tools/bench/Benchmark.h"

#include <algorithm>
#include <cstdlib>
#include <gtest/gtest.h>
#include <iostream>
#include <regex>
#include <string>

namespace collc {
namespace {

/// Skips the calling test unless at least `needed` GPUs are visible.
#define REQUIRE_GPUS(needed)                                                                       \
  do {                                                                                             \
    Expected<int> gpus = gpuCount();                                                               \
    if (!gpus)                                                                                     \
      GTEST_SKIP() << toString(gpus.takeError());                                                  \
    if (*gpus < (needed))                                                                          \
      GTEST_SKIP() << "no GPU: " << (needed) << " needed, " << *gpus << " visible";                \
  } while (false)

/// NCCL's results are checked against the stdlib spec that states its kind most directly.
std::shared_ptr<const ir::Program> referenceOf(const NcclCollective& collective, int nranks) {
  const char* spec = "allreduce_oneshot";
  switch (collective.kind) {
  case CollectiveKind::AllReduce:
    break;
  case CollectiveKind::AllGather:
    spec = "allgather_direct";
    break;
  case CollectiveKind::ReduceScatter:
    spec = "reducescatter_direct";
    break;
  case CollectiveKind::Broadcast:
    spec = "broadcast_direct";
    break;
  case CollectiveKind::Reduce:
    spec = "reduce_direct";
    break;
  case CollectiveKind::AllToAll:
    spec = "alltoall_direct";
    break;
  }
  Expected<SpecSource> source = loadSpec(spec);
  EXPECT_TRUE(bool(source)) << toString(source.takeError());
  if (!source)
    return nullptr;
  CompileOptions options;
  options.dtype = collective.dtype;
  options.op = collective.op;
  options.nranks = nranks;
  options.root = collective.root;
  auto programs = lowerVariantPrograms(*source, options, std::cerr);
  EXPECT_TRUE(bool(programs)) << toString(programs.takeError());
  return programs ? programs->spec : nullptr;
}

std::shared_ptr<const ir::Program> allReduceReference(DType type, ReduceOp op) {
  NcclCollective collective;
  collective.dtype = type;
  collective.op = op;
  return referenceOf(collective, 2);
}

TEST(NcclBaseline, BuffersHoldTheLargerSide) {
  NcclCollective collective;
  collective.dtype = DType::BF16;
  EXPECT_EQ(ncclBaselineBytes(collective, 512, 8), 1024u); // allreduce: n elements
  collective.kind = CollectiveKind::ReduceScatter;
  EXPECT_EQ(ncclBaselineBytes(collective, 512, 8), 8192u); // the input: n * nranks
  collective.kind = CollectiveKind::AllGather;
  collective.dtype = DType::F32;
  EXPECT_EQ(ncclBaselineBytes(collective, 512, 2), 4096u); // the output: n * nranks
}

TEST(NcclBaseline, CreateReportsWhyItCannotRun) {
  Expected<int> gpus = gpuCount();
  if (gpus && ncclVersionString() != "not found")
    GTEST_SKIP() << "this machine has a GPU and NCCL: see the GPU tests below";
  consumeError(gpus.takeError());
  Expected<std::unique_ptr<NcclBaseline>> baseline = NcclBaseline::create({0, 1}, 1 << 20);
  ASSERT_FALSE(static_cast<bool>(baseline));
  const std::string message = toString(baseline.takeError());
  EXPECT_EQ(message.rfind("nccl baseline: ", 0), 0u) << message;
  EXPECT_TRUE(message.find("no GPU") != std::string::npos ||
              message.find("NCCL not found") != std::string::npos)
      << message;
}

TEST(NcclBaseline, CreateRejectsBadArguments) {
  for (auto [devices, bytes, expected] :
       {std::make_tuple(std::vector<int>{}, uint64_t(1024), "no devices"),
        std::make_tuple(std::vector<int>{0}, uint64_t(0), "maxBytes")}) {
    Expected<std::unique_ptr<NcclBaseline>> baseline = NcclBaseline::create(devices, bytes);
    ASSERT_FALSE(static_cast<bool>(baseline));
    const std::string message = toString(baseline.takeError());
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
}

TEST(NcclBaseline, RefusesNvlinkMulticast) {
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  // create() refuses before NCCL sees the variable, but a process that drives GPUs should never
  // hold NCCL_NVLS_ENABLE=1 even for a moment (see the README): only where there is no GPU.
  Expected<int> gpus = gpuCount();
  if (gpus)
    GTEST_SKIP() << "not run on a machine with a GPU";
  consumeError(gpus.takeError());
  const char* saved = std::getenv("NCCL_NVLS_ENABLE");
  const std::string savedValue = saved ? saved : "";
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  Expected<std::unique_ptr<NcclBaseline>> baseline = NcclBaseline::create({0, 1}, 4096);
  if (saved)
    setenv("NCCL_NVLS_ENABLE", savedValue.c_str(), 1);
  else
    unsetenv("NCCL_NVLS_ENABLE");
  ASSERT_FALSE(static_cast<bool>(baseline));
  const std::string message = toString(baseline.takeError());
  EXPECT_NE(message.find("NCCL_NVLS_ENABLE=1"), std::string::npos) << message;
}

// ---- GPU machine only --------------------------------------------------------------------

TEST(NcclBaselineGpu, RejectsRepeatedDevice) {
  REQUIRE_GPUS(1);
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  Expected<std::unique_ptr<NcclBaseline>> baseline = NcclBaseline::create({0, 0}, 4096);
  ASSERT_FALSE(static_cast<bool>(baseline));
  const std::string message = toString(baseline.takeError());
  EXPECT_NE(message.find("given twice"), std::string::npos) << message;
}

TEST(NcclBaselineGpu, MeasuresPlainAndSymmetricAllReduce) {
  REQUIRE_GPUS(2);
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  Expected<std::unique_ptr<NcclBaseline>> created = NcclBaseline::create({0, 1}, 1 << 20);
  ASSERT_TRUE(static_cast<bool>(created)) << toString(created.takeError());
  NcclBaseline& baseline = **created;
  EXPECT_EQ(baseline.nranks(), 2);
  NcclBaselineOptions options;
  options.graphOps = 20;
  options.replays = 3;
  for (bool symmetric : {false, true})
    for (DType type : {DType::BF16, DType::F32})
      for (uint64_t count : {uint64_t(1), uint64_t(512), uint64_t(65536)}) {
        SCOPED_TRACE(std::string(symmetric ? "symmetric " : "plain ") + std::string(name(type)) +
                     " x " + std::to_string(count));
        options.reference = allReduceReference(type, ReduceOp::Sum);
        Expected<NcclTiming> timing =
            baseline.measureAllReduce(count, type, ReduceOp::Sum, symmetric, options);
        ASSERT_TRUE(static_cast<bool>(timing)) << toString(timing.takeError());
        EXPECT_TRUE(timing->correct) << timing->firstMismatches;
        EXPECT_GT(timing->usPerOp, 0.0);
        EXPECT_LT(timing->usPerOp, 10000.0);
        ASSERT_EQ(timing->usPerOpPerRank.size(), 2u);
      }
  // Max and min must match exactly.
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min}) {
    options.reference = allReduceReference(DType::F16, op);
    Expected<NcclTiming> timing = baseline.measureAllReduce(4096, DType::F16, op, false, options);
    ASSERT_TRUE(static_cast<bool>(timing)) << toString(timing.takeError());
    EXPECT_TRUE(timing->correct) << timing->firstMismatches;
  }
}

TEST(NcclBaselineGpu, RejectsCountsBeyondTheBuffers) {
  REQUIRE_GPUS(2);
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  Expected<std::unique_ptr<NcclBaseline>> created = NcclBaseline::create({0, 1}, 4096);
  ASSERT_TRUE(static_cast<bool>(created)) << toString(created.takeError());
  Expected<NcclTiming> timing =
      (*created)->measureAllReduce(4097, DType::F32, ReduceOp::Sum, false, {});
  ASSERT_FALSE(static_cast<bool>(timing));
  const std::string message = toString(timing.takeError());
  EXPECT_NE(message.find("elements fit"), std::string::npos) << message;
}

/// Every kind but AllReduce (measured above), as `collc bench` asks for it: rooted kinds with a
/// root other than 0, so that a root mix-up cannot pass.
std::vector<NcclCollective> otherKinds(DType type) {
  std::vector<NcclCollective> collectives;
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::Broadcast,
        CollectiveKind::Reduce, CollectiveKind::AllToAll}) {
    NcclCollective collective;
    collective.kind = kind;
    collective.dtype = type;
    collective.root = 1;
    collectives.push_back(collective);
  }
  return collectives;
}

TEST(NcclBaselineGpu, MeasuresEveryKindPlainAndSymmetric) {
  REQUIRE_GPUS(2);
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  const uint64_t largest = 65536;
  uint64_t bytes = 0;
  for (const NcclCollective& collective : otherKinds(DType::F32))
    bytes = std::max(bytes, ncclBaselineBytes(collective, largest, 2));
  Expected<std::unique_ptr<NcclBaseline>> created = NcclBaseline::create({0, 1}, bytes);
  ASSERT_TRUE(static_cast<bool>(created)) << toString(created.takeError());
  NcclBaseline& baseline = **created;
  NcclBaselineOptions options;
  options.graphOps = 20;
  options.replays = 3;
  for (bool symmetric : {false, true})
    for (DType type : {DType::BF16, DType::F32})
      for (const NcclCollective& collective : otherKinds(type))
        for (uint64_t count : {uint64_t(1), uint64_t(512), largest}) {
          SCOPED_TRACE(std::string(name(collective.kind)) +
                       (symmetric ? " symmetric " : " plain ") + std::string(name(type)) + " x " +
                       std::to_string(count));
          options.reference = referenceOf(collective, 2);
          Expected<NcclTiming> timing =
              baseline.measureCollective(collective, count, symmetric, options);
          ASSERT_TRUE(static_cast<bool>(timing)) << toString(timing.takeError());
          EXPECT_TRUE(timing->correct) << timing->firstMismatches;
          EXPECT_GT(timing->usPerOp, 0.0);
          EXPECT_LT(timing->usPerOp, 10000.0);
          ASSERT_EQ(timing->usPerOpPerRank.size(), 2u);
        }
  // Max must match exactly in the reducing kinds too.
  for (NcclCollective collective : otherKinds(DType::F16)) {
    collective.op = ReduceOp::Max;
    options.reference = referenceOf(collective, 2);
    Expected<NcclTiming> timing = baseline.measureCollective(collective, 4096, false, options);
    ASSERT_TRUE(static_cast<bool>(timing)) << toString(timing.takeError());
    EXPECT_TRUE(timing->correct) << name(collective.kind) << ": " << timing->firstMismatches;
  }
}

TEST(NcclBaselineGpu, BenchSweepsEveryKindItIsGiven) {
  REQUIRE_GPUS(2);
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  BenchSettings settings;
  settings.counts = {256, 4096};
  settings.graphOps = 10;
  settings.replays = 3;
  std::vector<NcclCollective> collectives = otherKinds(DType::BF16);
  std::vector<std::shared_ptr<const ir::Program>> references;
  for (const NcclCollective& collective : collectives)
    references.push_back(referenceOf(collective, 2));
  Expected<std::vector<NcclPoint>> points =
      benchNcclBaseline({0, 1}, collectives, references, settings);
  ASSERT_TRUE(static_cast<bool>(points)) << toString(points.takeError());
  ASSERT_EQ(points->size(), collectives.size() * settings.counts.size());
  for (size_t i = 0; i < points->size(); ++i) {
    const NcclPoint& point = (*points)[i];
    SCOPED_TRACE(std::string(name(point.kind)) + " " + std::to_string(point.bytes));
    EXPECT_EQ(point.kind, collectives[i / 2].kind);
    EXPECT_EQ(point.bytes, settings.counts[i % 2] * 2);
    EXPECT_TRUE(point.plain.ok()) << point.plain.note;
    EXPECT_TRUE(point.symmetric.ok()) << point.symmetric.note;
  }
}

TEST(NcclBaselineGpu, RejectsWhatTheBuffersOrRanksCannotHold) {
  REQUIRE_GPUS(2);
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  Expected<std::unique_ptr<NcclBaseline>> created = NcclBaseline::create({0, 1}, 4096);
  ASSERT_TRUE(static_cast<bool>(created)) << toString(created.takeError());
  NcclCollective gather;
  gather.kind = CollectiveKind::AllGather;
  // 1024 f32 fit an allreduce's 4096 bytes, not an allgather's output of twice that.
  Expected<NcclTiming> timing = (*created)->measureCollective(gather, 1024, false, {});
  ASSERT_FALSE(static_cast<bool>(timing));
  std::string message = toString(timing.takeError());
  EXPECT_NE(message.find("between 1 and 512 elements"), std::string::npos) << message;
  NcclCollective broadcast;
  broadcast.kind = CollectiveKind::Broadcast;
  broadcast.root = 2;
  timing = (*created)->measureCollective(broadcast, 16, false, {});
  ASSERT_FALSE(static_cast<bool>(timing));
  message = toString(timing.takeError());
  EXPECT_NE(message.find("root 2 is not a rank of 2"), std::string::npos) << message;
}

} // namespace
} // namespace collc
