// Precompiled collectives on a GPU: a stdlib variant JIT-compiled for GPU 0 (and for another
// architecture, so that the loader has to choose), written as a bundle, loaded back, and run from
// the bundle's cubin alone on 2 ranks sharing GPU 0, checked against the float64 references. The
// cubin the loader picks is asserted byte-identical to the JIT's, so the kernel that runs is the
// one a JIT'd instance runs.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "runtime/BundleFile.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <cstdio>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

namespace collc {
namespace {

struct BundleGpuCase {
  const char* spec;
  SyncKind sync;
  DType dtype;
  ReduceOp op;
  int root;
  int64_t rowLength;
  uint64_t count;
};

const BundleGpuCase kCases[] = {
    {"allreduce_oneshot", SyncKind::LL, DType::BF16, ReduceOp::Sum, 0, 0, 5000},
    {"allreduce_twoshot", SyncKind::Barrier, DType::F32, ReduceOp::Max, 0, 0, 65536},
    {"broadcast_direct", SyncKind::Barrier, DType::F16, ReduceOp::Sum, 1, 0, 777},
    {"allreduce_rmsnorm", SyncKind::Barrier, DType::BF16, ReduceOp::Sum, 0, 1024, 3 * 1024},
};
constexpr int kRanks = 2;

class BundleGpu : public ::testing::TestWithParam<BundleGpuCase> {
protected:
  void SetUp() override { COLLC_REQUIRE_SHARED_GPU_WORLD(world_, kRanks); }
  SharedGpuWorld* world_ = nullptr;
};

TEST_P(BundleGpu, RunsFromTheBundleAlone) {
  const BundleGpuCase& c = GetParam();
  auto spec = loadSpec(c.spec);
  ASSERT_TRUE(bool(spec)) << toString(spec.takeError());
  CompileOptions options;
  options.nranks = kRanks;
  options.sync = c.sync;
  options.dtype = c.dtype;
  options.op = c.op;
  options.root = c.root;
  options.rowLength = c.rowLength;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError()) << out.str();

  const std::string deviceArch = gpuArch(0);
  ASSERT_FALSE(deviceArch.empty());
  CollectiveBundle bundle;
  std::string jitCubin;
  // Another arch first; both sm_90 or newer, so the variant keeps its programmatic launch.
  for (const std::string& arch :
       {std::string(deviceArch == "sm_100" ? "sm_90" : "sm_100"), deviceArch}) {
    JitOptions jit;
    jit.arch = arch;
    auto image = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
    ASSERT_TRUE(bool(image)) << toString(image.takeError());
    bundle.cubins.push_back({arch, image->image});
    jitCubin = image->image; // the device's, last
  }
  bundle.compiled = *compiled;
  bundle.compiled.cudaSource.clear();
  bundle.specName = spec->bufferName;
  bundle.specText = spec->text;
  const std::string path = ::testing::TempDir() + "collc-bundle-gpu-" + std::to_string(::getpid()) +
                           "-" + c.spec + ".collb";
  ASSERT_FALSE(bool(writeBundle(path, bundle)));
  Expected<LoadedBundle> loaded = loadBundle(path);
  std::remove(path.c_str());
  ASSERT_TRUE(bool(loaded)) << toString(loaded.takeError());
  Expected<std::string> cubin = loaded->cubinForDevice(0);
  ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
  ASSERT_EQ(*cubin, jitCubin);

  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(*world_, loaded->compiled(), *cubin, c.count);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  // The reference: the spec the bundle carries, lowered for the bundle's variant.
  auto programs =
      lowerVariantPrograms({loaded->contents.specName, loaded->contents.specText}, options, out);
  ASSERT_TRUE(bool(programs)) << toString(programs.takeError()) << out.str();
  RunOptions run;
  run.reference = programs->spec;
  run.count = c.count;
  run.time = false;
  run.seed = c.count + uint64_t(c.dtype);
  Expected<RunReport> report = runAndCheck(*world_, **instance, loaded->compiled(), run);
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_TRUE(report->correct) << report->firstMismatches;
  EXPECT_EQ(report->checkedCalls, run.checks);
}

INSTANTIATE_TEST_SUITE_P(StdlibVariants, BundleGpu, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<BundleGpuCase>& info) {
                           return std::string(info.param.spec) + "_" +
                                  std::string(name(info.param.sync));
                         });

} // namespace
} // namespace collc
