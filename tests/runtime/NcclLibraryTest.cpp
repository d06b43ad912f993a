// NCCL loaded lazily: its version, the functions collc needs, and errors that name the call.
// Everything here passes on a machine without NCCL or without a GPU.
#include "runtime/NcclLibrary.h"

#include "runtime/Devices.h"

#include <algorithm>
#include <cstdlib>
#include <gtest/gtest.h>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

namespace collc {
namespace {

TEST(NcclLibrary, VersionIsDottedOrNotFound) {
  const std::string version = ncclVersionString();
  if (version == "not found") {
    Expected<const NcclLibrary*> lib = ncclLibrary();
    ASSERT_FALSE(static_cast<bool>(lib));
    const std::string message = toString(lib.takeError());
    EXPECT_NE(message.find("NCCL"), std::string::npos) << message;
    return;
  }
  EXPECT_TRUE(std::regex_match(version, std::regex(R"(\d+\.\d+\.\d+)"))) << version;
  EXPECT_EQ(version.rfind("2.", 0), 0u) << "collc expects NCCL 2.x, got " << version;
}

TEST(NcclLibrary, LoadedLibraryHasRequiredFunctions) {
  Expected<const NcclLibrary*> loaded = ncclLibrary();
  if (!loaded)
    GTEST_SKIP() << toString(loaded.takeError());
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
  Expected<const NcclLibrary*> again = ncclLibrary();
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(*again, *loaded);
  // Every kind's NCCL call (ncclSend/ncclRecv came with 2.7; the others are older still).
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::Broadcast, CollectiveKind::Reduce, CollectiveKind::AllToAll}) {
    Error err = lib.requireCollective(kind);
    if (kind == CollectiveKind::AllToAll && lib.versionCode < 20700)
      EXPECT_NE(toString(std::move(err)).find("2.7"), std::string::npos);
    else
      EXPECT_FALSE(static_cast<bool>(err)) << name(kind) << ": " << toString(std::move(err));
  }
  // NCCL 2.27 brought the windows; older ones must say so rather than crash.
  if (lib.versionCode >= 22700)
    EXPECT_FALSE(static_cast<bool>(lib.requireSymmetric()));
  else
    EXPECT_NE(toString(lib.requireSymmetric()).find("2.27"), std::string::npos);
}

TEST(NcclLibrary, ErrorsNameTheCallAndNcclReason) {
  Expected<const NcclLibrary*> loaded = ncclLibrary();
  if (!loaded)
    GTEST_SKIP() << toString(loaded.takeError());
  const NcclLibrary& lib = **loaded;
  EXPECT_FALSE(static_cast<bool>(COLLC_NCCL_CHECK(lib, ncclSuccess)));
  const std::string message = toString(COLLC_NCCL_CHECK(lib, ncclInvalidArgument));
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
  const std::string message = toString(lib.requireSymmetric());
  EXPECT_NE(message.find("ncclCommWindowRegister"), std::string::npos) << message;
  EXPECT_NE(message.find("ncclMemAlloc"), std::string::npos) << message;
  EXPECT_NE(message.find("2.18.5"), std::string::npos) << message;
  EXPECT_NE(message.find("/somewhere/libnccl.so.2"), std::string::npos) << message;
}

TEST(NcclLibrary, MissingCollectiveFunctionsAreReported) {
  NcclLibrary lib; // nothing resolved
  lib.versionCode = 20604;
  lib.path = "/old/libnccl.so.2";
  const std::string allToAll = toString(lib.requireCollective(CollectiveKind::AllToAll));
  EXPECT_NE(allToAll.find("NCCL 2.6.4 at /old/libnccl.so.2 lacks ncclSend, ncclRecv (NCCL 2.7 "
                          "and later have them): cannot run alltoall through NCCL"),
            std::string::npos)
      << allToAll;
  const std::string reduceScatter = toString(lib.requireCollective(CollectiveKind::ReduceScatter));
  EXPECT_NE(reduceScatter.find("lacks ncclReduceScatter (NCCL 2.4 and later have it): cannot run "
                               "reducescatter"),
            std::string::npos)
      << reduceScatter;
  EXPECT_NE(toString(lib.requireCollective(CollectiveKind::Reduce)).find("ncclReduce"),
            std::string::npos);
  // One that is there is enough for its kind, whatever else is missing.
  lib.reduce = [](const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                  cudaStream_t) { return ncclSuccess; };
  EXPECT_FALSE(static_cast<bool>(lib.requireCollective(CollectiveKind::Reduce)));
  EXPECT_TRUE(static_cast<bool>(lib.requireCollective(CollectiveKind::AllGather)));
  consumeError(lib.requireCollective(CollectiveKind::AllGather));
}

/// Every variable of the process's environment, as NAME=VALUE, sorted.
std::vector<std::string> environmentNow() {
  std::vector<std::string> variables;
  for (char** entry = environ; *entry; ++entry)
    variables.push_back(*entry);
  std::sort(variables.begin(), variables.end());
  return variables;
}

// collc is a guest in its host's process: loading NCCL (found or not) changes no variable, so
// NCCL reads the host's own settings (ctest runs this test in a fresh process: the load is here).
TEST(NcclLibrary, LoadingLeavesTheEnvironmentAlone) {
  const std::vector<std::string> before = environmentNow();
  Expected<const NcclLibrary*> nccl = ncclLibrary();
  consumeError(nccl.takeError());
  (void)ncclVersionString();
  EXPECT_EQ(environmentNow(), before);
}

} // namespace
} // namespace collc
