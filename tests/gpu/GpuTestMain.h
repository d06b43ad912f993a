// The one LocalWorld the GPU tests share (peer access and the symmetric heap are set up once per
// process), and the rule every GPU test starts with: skip with the reason where there is no world
// to run on, fail where GPUs exist but the world could not be built. Tests of many ranks on one GPU
// get a SharedGpuWorld instead (sharedGpuWorld), which a machine with one GPU has too.
#ifndef COLLC_TESTS_GPU_GPUTESTMAIN_H
#define COLLC_TESTS_GPU_GPUTESTMAIN_H

#include "abi/CompiledCollective.h"
#include "runtime/LocalWorld.h"
#include "runtime/SharedGpuWorld.h"

#include <cstdint>
#include <gtest/gtest.h>
#include <memory>
#include <string>

namespace collc::ir {
struct Program;
}

namespace collc::gputest {

/// The shared world over GPUs {0, 1}, or null (see skipReason / setupError).
LocalWorld* world();
/// Why there is no world on this machine ("no GPU: ...", or fewer than 2 GPUs); empty otherwise.
const std::string& skipReason();
/// Why building the world failed although the GPUs are there; empty otherwise.
const std::string& setupError();

/// `nranks` ranks on GPU 0 (a SharedGpuWorld; past 32 ranks one that launches every rank as one,
/// sharedGpuLaunchFor), made on first use and kept until a test asks for
/// another rank count (tests of one rank count run together) or more heap per rank than it has
/// (`leastHeapBytesPerRank`; every world has at least the 128 MiB the matrices need); destroyed
/// with the LocalWorld. Null with `skip` set where there is no GPU ("no GPU: ..."), or with
/// `error` set where there is one but the world could not be built.
SharedGpuWorld* sharedGpuWorld(int nranks, std::string& skip, std::string& error,
                               uint64_t leastHeapBytesPerRank = 0);

/// A stdlib spec compiled for the shared world (2 ranks, its GPUs' arch), or why it could not be.
struct Variant {
  CompiledCollective compiled;
  std::shared_ptr<const ir::Program> spec; // the run harness's reference (RunOptions::reference)
  std::string cubin;
  std::string error;
};

/// Compiles each variant once per process: the tests of one variant differ only in size.
/// `rowLength`: the row length of a spec with rows (CompileOptions::rowLength; 0: none);
/// `threads`: threads per block (0: the spec's own); `wholeStores`: LaunchShape::wholeStores.
const Variant& variantFor(const std::string& specName, DType dtype, ReduceOp op,
                          SyncKind sync = SyncKind::Barrier, int root = 0, int64_t rowLength = 0,
                          int threads = 0, int unroll = 1, int wholeStores = 0);

/// In a fixture's SetUp: `world` becomes sharedGpuWorld(nranks), or the test skips where there is
/// no GPU ("no GPU: ...") and fails where there is one but the world could not be built.
#define COLLC_REQUIRE_SHARED_GPU_WORLD(world, nranks)                                              \
  do {                                                                                             \
    std::string skip_, error_;                                                                     \
    (world) = ::collc::gputest::sharedGpuWorld((nranks), skip_, error_);                           \
    if (!(world)) {                                                                                \
      if (!error_.empty())                                                                         \
        FAIL() << error_;                                                                          \
      GTEST_SKIP() << skip_;                                                                       \
    }                                                                                              \
  } while (false)

/// A parameterized test of `Case` (which has `nranks`) on that many co-resident ranks of GPU 0:
/// skips with the reason where there is no GPU, fails where there is one but no world.
template <class Case> class SharedGpuTest : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override { COLLC_REQUIRE_SHARED_GPU_WORLD(world_, this->GetParam().nranks); }
  SharedGpuWorld* world_ = nullptr;
};

} // namespace collc::gputest

/// In a fixture's SetUp or at the top of a test: skip or fail unless the shared world exists.
#define COLLC_REQUIRE_GPU_WORLD()                                                                  \
  do {                                                                                             \
    if (!::collc::gputest::world()) {                                                              \
      if (!::collc::gputest::setupError().empty())                                                 \
        FAIL() << ::collc::gputest::setupError();                                                  \
      GTEST_SKIP() << ::collc::gputest::skipReason();                                              \
    }                                                                                              \
  } while (false)

#endif // COLLC_TESTS_GPU_GPUTESTMAIN_H
