// NCCL loaded lazily, and the NCCL baseline's behaviour where it cannot run. Everything here
// passes on a machine without NCCL or without a GPU; the GPU parts skip there and say why.
#include "runtime/NcclLibrary.h"

#include "runtime/Benchmark.h"
#include "runtime/Devices.h"
#include "runtime/NcclBaseline.h"

#include <algorithm>
#include <cstdlib>
#include <gtest/gtest.h>
#include <regex>
#include <string>

namespace collc {
namespace {

/// Skips the calling test unless at least `needed` GPUs are visible.
#define REQUIRE_GPUS(needed)                                                                       \
  do {                                                                                             \
    llvm::Expected<int> gpus = gpuCount();                                                         \
    if (!gpus)                                                                                     \
      GTEST_SKIP() << llvm::toString(gpus.takeError());                                            \
    if (*gpus < (needed))                                                                          \
      GTEST_SKIP() << "no GPU: " << (needed) << " needed, " << *gpus << " visible";                \
  } while (false)

TEST(NcclLibrary, VersionIsDottedOrNotFound) {
  const std::string version = ncclVersionString();
  if (version == "not found") {
    llvm::Expected<const NcclLibrary*> lib = ncclLibrary();
    ASSERT_FALSE(static_cast<bool>(lib));
    const std::string message = llvm::toString(lib.takeError());
    EXPECT_NE(message.find("NCCL"), std::string::npos) << message;
    return;
  }
  EXPECT_TRUE(std::regex_match(version, std::regex(R"(\d+\.\d+\.\d+)"))) << version;
  EXPECT_EQ(version.rfind("2.", 0), 0u) << "collc expects NCCL 2.x, got " << version;
}

TEST(NcclLibrary, LoadedLibraryHasRequiredFunctions) {
  llvm::Expected<const NcclLibrary*> loaded = ncclLibrary();
  if (!loaded)
    GTEST_SKIP() << llvm::toString(loaded.takeError());
  const NcclLibrary& lib = **loaded;
  EXPECT_NE(lib.getVersion, nullptr);
  EXPECT_NE(lib.getErrorString, nullptr);
  EXPECT_NE(lib.commInitAll, nullptr);
  EXPECT_NE(lib.commDestroy, nullptr);
  EXPECT_NE(lib.commAbort, nullptr);
  EXPECT_NE(lib.commGetAsyncError, nullptr);
  EXPECT_NE(lib.allReduce, nullptr);
  EXPECT_NE(lib.groupStart, nullptr);
  EXPECT_NE(lib.groupEnd, nullptr);
  // What one process per GPU needs (runtime/ProcessWorld.cpp).
  EXPECT_NE(lib.getUniqueId, nullptr);
  EXPECT_NE(lib.commInitRank, nullptr);
  EXPECT_NE(lib.allGather, nullptr);
  EXPECT_NE(lib.broadcast, nullptr);
  EXPECT_NE(lib.commCount, nullptr);
  EXPECT_NE(lib.commCuDevice, nullptr);
  EXPECT_NE(lib.commUserRank, nullptr);
  EXPECT_FALSE(lib.path.empty());
  EXPECT_EQ(lib.versionString(), ncclVersionString());
  // The same object every time.
  llvm::Expected<const NcclLibrary*> again = ncclLibrary();
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(*again, *loaded);
  // Every kind's NCCL call (ncclSend/ncclRecv came with 2.7; the others are older still).
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::Broadcast, CollectiveKind::Reduce, CollectiveKind::AllToAll}) {
    llvm::Error err = lib.requireCollective(kind);
    if (kind == CollectiveKind::AllToAll && lib.versionCode < 20700)
      EXPECT_NE(llvm::toString(std::move(err)).find("2.7"), std::string::npos);
    else
      EXPECT_FALSE(static_cast<bool>(err)) << name(kind) << ": " << llvm::toString(std::move(err));
  }
  // NCCL 2.27 brought the windows; older ones must say so rather than crash.
  if (lib.versionCode >= 22700)
    EXPECT_FALSE(static_cast<bool>(lib.requireSymmetric()));
  else
    EXPECT_NE(llvm::toString(lib.requireSymmetric()).find("2.27"), std::string::npos);
}

TEST(NcclLibrary, ErrorsNameTheCallAndNcclReason) {
  llvm::Expected<const NcclLibrary*> loaded = ncclLibrary();
  if (!loaded)
    GTEST_SKIP() << llvm::toString(loaded.takeError());
  const NcclLibrary& lib = **loaded;
  EXPECT_FALSE(static_cast<bool>(COLLC_NCCL_CHECK(lib, ncclSuccess)));
  const std::string message = llvm::toString(COLLC_NCCL_CHECK(lib, ncclInvalidArgument));
  EXPECT_NE(message.find("ncclInvalidArgument failed at"), std::string::npos) << message;
  EXPECT_NE(message.find("NcclLibraryTest.cpp"), std::string::npos) << message;
  EXPECT_NE(message.find(lib.getErrorString(ncclInvalidArgument)), std::string::npos) << message;
}

TEST(NcclLibrary, VersionCodeDecoding) {
  NcclLibrary lib;
  lib.versionCode = 22803; // NCCL_VERSION(2, 28, 3)
  EXPECT_EQ(lib.versionString(), "2.28.3");
  lib.versionCode = 2804; // NCCL_VERSION(2, 8, 4): the old encoding
  EXPECT_EQ(lib.versionString(), "2.8.4");
  lib.versionCode = 21903;
  EXPECT_EQ(lib.versionString(), "2.19.3");
}

TEST(NcclLibrary, MissingSymmetricFunctionsAreReported) {
  NcclLibrary lib; // nothing resolved, as in an NCCL older than 2.19
  lib.versionCode = 21805;
  lib.path = "/somewhere/libnccl.so.2";
  const std::string message = llvm::toString(lib.requireSymmetric());
  EXPECT_NE(message.find("ncclCommWindowRegister"), std::string::npos) << message;
  EXPECT_NE(message.find("ncclMemAlloc"), std::string::npos) << message;
  EXPECT_NE(message.find("2.18.5"), std::string::npos) << message;
  EXPECT_NE(message.find("/somewhere/libnccl.so.2"), std::string::npos) << message;
}

TEST(NcclLibrary, MissingCollectiveFunctionsAreReported) {
  NcclLibrary lib; // nothing resolved
  lib.versionCode = 20604;
  lib.path = "/old/libnccl.so.2";
  const std::string allToAll = llvm::toString(lib.requireCollective(CollectiveKind::AllToAll));
  EXPECT_NE(allToAll.find("NCCL 2.6.4 at /old/libnccl.so.2 lacks ncclSend, ncclRecv (NCCL 2.7 "
                          "and later have them): cannot run alltoall through NCCL"),
            std::string::npos)
      << allToAll;
  const std::string reduceScatter =
      llvm::toString(lib.requireCollective(CollectiveKind::ReduceScatter));
  EXPECT_NE(reduceScatter.find("lacks ncclReduceScatter (NCCL 2.4 and later have it): cannot run "
                               "reducescatter"),
            std::string::npos)
      << reduceScatter;
  EXPECT_NE(llvm::toString(lib.requireCollective(CollectiveKind::Reduce)).find("ncclReduce"),
            std::string::npos);
  // One that is there is enough for its kind, whatever else is missing.
  lib.reduce = [](const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                  cudaStream_t) { return ncclSuccess; };
  EXPECT_FALSE(static_cast<bool>(lib.requireCollective(CollectiveKind::Reduce)));
  EXPECT_TRUE(static_cast<bool>(lib.requireCollective(CollectiveKind::AllGather)));
  llvm::consumeError(lib.requireCollective(CollectiveKind::AllGather));
}

TEST(NcclLibrary, LoadingTurnsNvlinkMulticastOff) {
  // Whatever the outcome of loading, NCCL_NVLS_ENABLE is set afterwards (to 0 unless it was set
  // by hand before the process started).
  (void)ncclVersionString();
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  ASSERT_NE(nvls, nullptr);
}

TEST(NcclBaseline, CreateReportsWhyItCannotRun) {
  llvm::Expected<int> gpus = gpuCount();
  if (gpus && ncclVersionString() != "not found")
    GTEST_SKIP() << "this machine has a GPU and NCCL: see the GPU tests below";
  llvm::consumeError(gpus.takeError());
  llvm::Expected<std::unique_ptr<NcclBaseline>> baseline = NcclBaseline::create({0, 1}, 1 << 20);
  ASSERT_FALSE(static_cast<bool>(baseline));
  const std::string message = llvm::toString(baseline.takeError());
  EXPECT_EQ(message.rfind("nccl baseline: ", 0), 0u) << message;
  EXPECT_TRUE(message.find("no GPU") != std::string::npos ||
              message.find("NCCL not found") != std::string::npos)
      << message;
}

TEST(NcclBaseline, CreateRejectsBadArguments) {
  for (auto [devices, bytes, expected] :
       {std::make_tuple(std::vector<int>{}, uint64_t(1024), "no devices"),
        std::make_tuple(std::vector<int>{0}, uint64_t(0), "maxBytes")}) {
    llvm::Expected<std::unique_ptr<NcclBaseline>> baseline = NcclBaseline::create(devices, bytes);
    ASSERT_FALSE(static_cast<bool>(baseline));
    const std::string message = llvm::toString(baseline.takeError());
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
}

TEST(NcclBaseline, RefusesNvlinkMulticast) {
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  // create() refuses before NCCL sees the variable, but a process that drives GPUs should never
  // hold NCCL_NVLS_ENABLE=1 even for a moment (GPU.md): only where there is no GPU.
  llvm::Expected<int> gpus = gpuCount();
  if (gpus)
    GTEST_SKIP() << "not run on a machine with a GPU";
  llvm::consumeError(gpus.takeError());
  const char* saved = std::getenv("NCCL_NVLS_ENABLE");
  const std::string savedValue = saved ? saved : "";
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  llvm::Expected<std::unique_ptr<NcclBaseline>> baseline = NcclBaseline::create({0, 1}, 4096);
  if (saved)
    setenv("NCCL_NVLS_ENABLE", savedValue.c_str(), 1);
  else
    unsetenv("NCCL_NVLS_ENABLE");
  ASSERT_FALSE(static_cast<bool>(baseline));
  const std::string message = llvm::toString(baseline.takeError());
  EXPECT_NE(message.find("NCCL_NVLS_ENABLE=1"), std::string::npos) << message;
}

// ---- GPU machine only --------------------------------------------------------------------

TEST(NcclBaselineGpu, RejectsRepeatedDevice) {
  REQUIRE_GPUS(1);
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  llvm::Expected<std::unique_ptr<NcclBaseline>> baseline = NcclBaseline::create({0, 0}, 4096);
  ASSERT_FALSE(static_cast<bool>(baseline));
  const std::string message = llvm::toString(baseline.takeError());
  EXPECT_NE(message.find("given twice"), std::string::npos) << message;
}

TEST(NcclBaselineGpu, MeasuresPlainAndSymmetricAllReduce) {
  REQUIRE_GPUS(2);
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  llvm::Expected<std::unique_ptr<NcclBaseline>> created = NcclBaseline::create({0, 1}, 1 << 20);
  ASSERT_TRUE(static_cast<bool>(created)) << llvm::toString(created.takeError());
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
        llvm::Expected<NcclTiming> timing =
            baseline.measureAllReduce(count, type, ReduceOp::Sum, symmetric, options);
        ASSERT_TRUE(static_cast<bool>(timing)) << llvm::toString(timing.takeError());
        EXPECT_TRUE(timing->correct) << timing->firstMismatches;
        EXPECT_GT(timing->usPerOp, 0.0);
        EXPECT_LT(timing->usPerOp, 10000.0);
        ASSERT_EQ(timing->usPerOpPerRank.size(), 2u);
      }
  // Max and min must match exactly.
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min}) {
    llvm::Expected<NcclTiming> timing =
        baseline.measureAllReduce(4096, DType::F16, op, false, options);
    ASSERT_TRUE(static_cast<bool>(timing)) << llvm::toString(timing.takeError());
    EXPECT_TRUE(timing->correct) << timing->firstMismatches;
  }
}

TEST(NcclBaselineGpu, RejectsCountsBeyondTheBuffers) {
  REQUIRE_GPUS(2);
  if (ncclVersionString() == "not found")
    GTEST_SKIP() << "NCCL not found";
  llvm::Expected<std::unique_ptr<NcclBaseline>> created = NcclBaseline::create({0, 1}, 4096);
  ASSERT_TRUE(static_cast<bool>(created)) << llvm::toString(created.takeError());
  llvm::Expected<NcclTiming> timing =
      (*created)->measureAllReduce(4097, DType::F32, ReduceOp::Sum, false, {});
  ASSERT_FALSE(static_cast<bool>(timing));
  const std::string message = llvm::toString(timing.takeError());
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
  llvm::Expected<std::unique_ptr<NcclBaseline>> created = NcclBaseline::create({0, 1}, bytes);
  ASSERT_TRUE(static_cast<bool>(created)) << llvm::toString(created.takeError());
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
          llvm::Expected<NcclTiming> timing =
              baseline.measureCollective(collective, count, symmetric, options);
          ASSERT_TRUE(static_cast<bool>(timing)) << llvm::toString(timing.takeError());
          EXPECT_TRUE(timing->correct) << timing->firstMismatches;
          EXPECT_GT(timing->usPerOp, 0.0);
          EXPECT_LT(timing->usPerOp, 10000.0);
          ASSERT_EQ(timing->usPerOpPerRank.size(), 2u);
        }
  // Max must match exactly in the reducing kinds too.
  for (NcclCollective collective : otherKinds(DType::F16)) {
    collective.op = ReduceOp::Max;
    llvm::Expected<NcclTiming> timing =
        baseline.measureCollective(collective, 4096, false, options);
    ASSERT_TRUE(static_cast<bool>(timing)) << llvm::toString(timing.takeError());
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
  llvm::Expected<std::vector<NcclPoint>> points = benchNcclBaseline({0, 1}, collectives, settings);
  ASSERT_TRUE(static_cast<bool>(points)) << llvm::toString(points.takeError());
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
  llvm::Expected<std::unique_ptr<NcclBaseline>> created = NcclBaseline::create({0, 1}, 4096);
  ASSERT_TRUE(static_cast<bool>(created)) << llvm::toString(created.takeError());
  NcclCollective gather;
  gather.kind = CollectiveKind::AllGather;
  // 1024 f32 fit an allreduce's 4096 bytes, not an allgather's output of twice that.
  llvm::Expected<NcclTiming> timing = (*created)->measureCollective(gather, 1024, false, {});
  ASSERT_FALSE(static_cast<bool>(timing));
  std::string message = llvm::toString(timing.takeError());
  EXPECT_NE(message.find("between 1 and 512 elements"), std::string::npos) << message;
  NcclCollective broadcast;
  broadcast.kind = CollectiveKind::Broadcast;
  broadcast.root = 2;
  timing = (*created)->measureCollective(broadcast, 16, false, {});
  ASSERT_FALSE(static_cast<bool>(timing));
  message = llvm::toString(timing.takeError());
  EXPECT_NE(message.find("root 2 is not a rank of 2"), std::string::npos) << message;
}

} // namespace
} // namespace collc
