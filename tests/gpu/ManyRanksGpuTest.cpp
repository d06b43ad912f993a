// Many ranks on one GPU (SharedGpuWorld): every stdlib spec, with every strategy it accepts and
// every element type, for 2 to 8 ranks running as co-resident kernels on GPU 0, checked against
// the spec interpreted in float64 (tools/harness/InterpretedReference.h). Each case runs three
// counts (tests/ManyRankCounts.h: 1, one element in the last chunk, and a long partial last chunk;
// three row counts for the spec with rows), three eager calls each (one instance: epochs 1 to 9),
// then one CUDA graph of four back-to-back calls per rank, every call checked. The operator and the
// root vary with the rank count and the type, so that each appears without multiplying the matrix.
// Where a spec's own blocks would not all be resident next to its peers', it is compiled with as
// many as fit (CoResidency.h). Timings are not looked at: they mean nothing here. A machine with
// one GPU runs all of this. The NVFP4 specs are left to their own suite (QuantGpuTest.cpp,
// Nvfp4/QuantOneGpu: 2, 4 and 8 ranks), which keeps this matrix within its call.
#include "compiler/Compile.h"
#include "runtime/CoResidency.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "tests/ManyRankCounts.h"
#include "tests/StdlibApplicability.h"
#include "tests/StdlibStrategies.h"
#include "tests/gpu/CoResidentCases.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <algorithm>
#include <iostream>
#include <llvm/Support/raw_ostream.h>
#include <ostream>

namespace collc {
namespace {

constexpr int kFewestRanks = 2;
constexpr int kMostRanks = 8;
// Calls in the replayed graph, each with its own buffers.
constexpr int kGraphCalls = 4;

using ManyRankCase = gputest::CoResidentCase;
using gputest::caseName;
using gputest::hasRows;

std::vector<ManyRankCase> manyRankCases() {
  std::vector<ManyRankCase> cases;
  for (int nranks = kFewestRanks; nranks <= kMostRanks; ++nranks)
    for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs)
      for (SyncKind sync : tests::kGpuStrategies)
        for (size_t d = 0; d < std::size(kAllDTypes); ++d) {
          if (std::string(facts.name).rfind("allreduce_rmsnorm_nvfp4", 0) == 0)
            continue;
          ReduceOp op = ReduceOp::Sum;
          if (reduces(facts.kind) && !hasRows(facts.name))
            op = kAllReduceOps[(size_t(nranks) + d) % std::size(kAllReduceOps)];
          if (!tests::strategyApplies(sync, op))
            op = ReduceOp::Sum;
          if (!tests::specAccepts(facts, sync, op, nranks))
            continue;
          const int root = hasRoot(facts.kind) ? int((size_t(nranks) - 1 + d) % size_t(nranks)) : 0;
          cases.push_back({nranks, facts.name, sync, kAllDTypes[d], op, root});
        }
  return cases;
}

const gputest::CoResidentVariant& variantFor(const ManyRankCase& c) {
  static gputest::CoResidentVariants variants(manyRankCases);
  return variants.of(c);
}

class ManyRanksOneGpu : public gputest::SharedGpuTest<ManyRankCase> {};

TEST_P(ManyRanksOneGpu, EveryCallMatchesFloat64Reference) {
  const ManyRankCase& c = GetParam();
  const gputest::CoResidentVariant& variant = variantFor(c);
  ASSERT_TRUE(variant.error.empty()) << variant.error;
  const CompiledCollective& compiled = variant.compiled;
  ASSERT_LE(compiled.launch.blocks * c.nranks, multiprocessorCount(0));
  const bool rows = compiled.rowLength > 0;
  ASSERT_EQ(rows, hasRows(c.spec));
  const uint64_t caseSeed = uint64_t(c.nranks) * 1000003 + uint64_t(c.dtype) * 101 +
                            uint64_t(c.sync) * 11 + uint64_t(c.op) * 7 + uint64_t(c.root);
  // One NaN poisons a whole row's norm: rows run without special values.
  gputest::checkCountsThenGraph(*world_, variant, c.nranks, caseSeed, /*specialValues=*/!rows,
                                kGraphCalls);
}

INSTANTIATE_TEST_SUITE_P(Stdlib, ManyRanksOneGpu, ::testing::ValuesIn(manyRankCases()),
                         [](const ::testing::TestParamInfo<ManyRankCase>& info) {
                           return caseName(info.param);
                         });

class ManyRanksOneGpuWorld : public ::testing::Test {
protected:
  void SetUp() override { COLLC_REQUIRE_SHARED_GPU_WORLD(world_, kMostRanks); }
  SharedGpuWorld* world_ = nullptr;
};

TEST_F(ManyRanksOneGpuWorld, SaysItsTimingsMeanNothing) {
  const SharedGpuWorld* shared = world_;
  const std::string path = shared->pathDescription();
  EXPECT_NE(path.find("8 ranks share GPU 0"), std::string::npos) << path;
  EXPECT_NE(path.find("Timings mean nothing"), std::string::npos) << path;
  // Every rank's heap a region of its own, in one address space.
  for (int r = 0; r + 1 < kMostRanks; ++r) {
    EXPECT_EQ(shared->peerHeap(r, r + 1), shared->heapBase(r));
    EXPECT_GE(shared->heapBase(r + 1) - shared->heapBase(r), std::ptrdiff_t(shared->heapBytes()));
    EXPECT_EQ(shared->device(r), 0);
    EXPECT_NE(shared->stream(r), shared->stream(r + 1));
  }
}

// One block more per rank than fit next to the other ranks' is refused, with the numbers.
TEST_F(ManyRanksOneGpuWorld, RefusesBlocksThatCannotAllBeResident) {
  const int multiprocessors = multiprocessorCount(0);
  const int blocks = maxCoResidentBlocksPerRank(multiprocessors, kMostRanks) + 1;
  ASSERT_LE(blocks, COLLC_MAX_BLOCKS);
  auto spec = loadSpec("allreduce_oneshot");
  ASSERT_TRUE(bool(spec)) << toString(spec.takeError());
  CompileOptions options;
  options.nranks = kMostRanks;
  options.blocks = blocks;
  auto compiled = compileCollective(*spec, options, std::cerr);
  ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError());
  JitOptions jit;
  jit.arch = gpuArch(0);
  Expected<JitResult> cubin =
      compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
  ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(*world_, *compiled, cubin->image, 1024);
  ASSERT_FALSE(bool(instance));
  const std::string message = toString(instance.takeError());
  EXPECT_NE(message.find("8 ranks share GPU 0 with " + std::to_string(blocks) + " blocks each: " +
                         std::to_string(blocks * kMostRanks) + " blocks, but it has " +
                         std::to_string(multiprocessors) + " multiprocessors"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("--blocks " + std::to_string(blocks - 1)), std::string::npos) << message;
}

} // namespace
} // namespace collc
