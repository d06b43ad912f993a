// Every stdlib spec, for every sync strategy, element type and reduction operator, compiles to an
// sm_90 cubin with NVRTC; a few compile for every architecture collc targets (sm_80, sm_89, sm_90,
// sm_100). No GPU is needed: this runs in CI.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "runtime/Jit.h"
#include "tests/StdlibApplicability.h"
#include "tests/StdlibStrategies.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace collc {
namespace {

struct Variant {
  std::string spec;
  SyncKind sync;
  DType dtype;
  ReduceOp op;
  int nranks;
  int root;
};

void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.spec << " " << name(v.sync) << " " << name(v.dtype) << " " << name(v.op) << " "
      << v.nranks << " ranks root " << v.root;
}

/// Every stdlib spec with every strategy it accepts (StdlibApplicability.h; a spec missing from
/// that table is compiled with every strategy, so it fails here until the table says what it
/// refuses). The root of a broadcast or reduce is the last rank: a constant like any other.
std::vector<Variant> allVariants() {
  std::vector<Variant> variants;
  for (const auto& spec : stdlibNames()) {
    const tests::StdlibSpecFacts* facts = tests::findStdlibSpec(spec);
    tests::StdlibSpecFacts unknown{"", CollectiveKind::AllReduce, 0};
    for (SyncKind sync : tests::kImplementedStrategies)
      for (DType dtype : kAllDTypes)
        for (ReduceOp op : kAllReduceOps)
          for (int nranks : {2, 8})
            if (tests::specAccepts(facts ? *facts : unknown, sync, op))
              variants.push_back({spec, sync, dtype, op, nranks, nranks - 1});
  }
  return variants;
}

class StdlibNvrtc : public testing::TestWithParam<Variant> {};

TEST_P(StdlibNvrtc, CompilesToSm90Cubin) {
  const Variant& v = GetParam();
  auto spec = loadSpec(v.spec);
  ASSERT_TRUE(bool(spec));
  CompileOptions options;
  options.dtype = v.dtype;
  options.op = v.op;
  options.nranks = v.nranks;
  options.root = v.root;
  options.sync = v.sync;
  options.experimentalLL128 = true; // compiled here, though disabled by default
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError()) << out.str();

  JitOptions jit;
  jit.arch = "sm_90";
  jit.useCache = false; // measure NVRTC itself, not a previous run's cache
  auto cubin = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
  ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
  ASSERT_GE(cubin->image.size(), 4u);
  EXPECT_EQ(cubin->image.substr(0, 4), "\x7f"
                                       "ELF");
  EXPECT_NE(cubin->image.find(compiled->kernelName), std::string::npos);
  EXPECT_EQ(cubin->log.find("warning"), std::string::npos) << cubin->log;
}

INSTANTIATE_TEST_SUITE_P(AllStdlibVariants, StdlibNvrtc, testing::ValuesIn(allVariants()),
                         [](const testing::TestParamInfo<Variant>& info) {
                           return info.param.spec + "_" + std::string(name(info.param.sync)) + "_" +
                                  std::string(name(info.param.dtype)) + "_" +
                                  std::string(name(info.param.op)) + "_" +
                                  std::to_string(info.param.nranks) + "ranks";
                         });

// Generated kernels include no toolkit header, and the JIT hands NVRTC no include directory: a
// kernel of each element type and strategy compiles for every architecture collc targets, with
// programmatic dependent launch on (its griddepcontrol instructions are compiled only for sm_90 and
// later); ll128_atomic needs sm_90's vector atomics (red.v4) and says so.
TEST(GeneratedKernels, CompileWithNoHeaderForEveryArchitecture) {
  struct Case {
    const char* spec;
    SyncKind sync;
  };
  const Case cases[] = {{"allreduce_twoshot", SyncKind::Barrier},
                        {"allreduce_oneshot", SyncKind::LL},
                        {"allreduce_twoshot", SyncKind::Sentinel},
                        {"allreduce_rmsnorm", SyncKind::LL},
                        {"allreduce_twoshot", SyncKind::LL128},
                        {"allreduce_twoshot", SyncKind::LL128Atomic},
                        {"allreduce_rmsnorm_fp8", SyncKind::LL},
                        {"allreduce_rmsnorm_fp8", SyncKind::Barrier},
                        {"allreduce_rmsnorm_fp8_per_token", SyncKind::LL},
                        {"allreduce_rmsnorm_fp8_per_token", SyncKind::Sentinel},
                        {"allreduce_rmsnorm_nvfp4", SyncKind::LL},
                        {"allreduce_rmsnorm_nvfp4_linear", SyncKind::Sentinel}};
  for (const char* arch : {"sm_80", "sm_89", "sm_90", "sm_100"})
    for (DType dtype : kAllDTypes)
      for (const Case& c : cases) {
        SCOPED_TRACE(fmt::format("{} {} {} {}", c.spec, name(c.sync), name(dtype), arch));
        auto spec = loadSpec(c.spec);
        ASSERT_TRUE(bool(spec));
        const bool sm90 = std::string(arch) == "sm_90" || std::string(arch) == "sm_100";
        CompileOptions options;
        options.dtype = dtype;
        options.sync = c.sync;
        options.experimentalLL128 = true;
        std::string diagnostics;
        DiagnosticText out(diagnostics);
        auto compiled = compileCollective(*spec, options, out);
        ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError()) << out.str();
        EXPECT_EQ(compiled->cudaSource.find("#include"), std::string::npos);
        JitOptions jit;
        jit.arch = arch;
        jit.useCache = false;
        auto cubin = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
        if (c.sync == SyncKind::LL128Atomic && !sm90) {
          ASSERT_FALSE(bool(cubin));
          const std::string message = toString(cubin.takeError());
          EXPECT_NE(message.find("needs sm_90 or newer"), std::string::npos) << message;
          continue;
        }
        ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
        EXPECT_EQ(cubin->log.find("warning"), std::string::npos) << cubin->log;
      }
}

// An FP8 output converts with the hardware's cvt.rn.satfinite.e4m3x2.f32 from sm_89 on, and with
// the software conversion (fp8_e4m3_soft, checked against Float8 on the host) before it.
TEST(GeneratedKernels, QuantizedOutputsUseTheHardwareConversionFromSm89) {
  auto spec = loadSpec("allreduce_rmsnorm_fp8");
  ASSERT_TRUE(bool(spec));
  CompileOptions options;
  options.dtype = DType::BF16;
  options.rowLength = 1024;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError()) << out.str();
  for (const char* arch : {"sm_80", "sm_89", "sm_90", "sm_100"}) {
    SCOPED_TRACE(arch);
    JitOptions jit;
    jit.arch = arch;
    jit.useCache = false;
    auto ptx = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Ptx, jit);
    ASSERT_TRUE(bool(ptx)) << toString(ptx.takeError());
    const std::string& text = ptx->image;
    const bool hardware = std::string(arch) != "sm_80";
    EXPECT_EQ(text.find("cvt.rn.satfinite.e4m3x2.f32") != std::string::npos, hardware);
  }
}

// One source for every architecture: with the default options (programmatic dependent launch on),
// a kernel compiles to a cubin for sm_80, sm_89, sm_90 and sm_100, and its PTX has griddepcontrol
// exactly where the architecture has it (sm_90 and later).
struct ArchCase {
  const char* spec;
  const char* arch;
};

void PrintTo(const ArchCase& c, std::ostream* os) {
  *os << c.spec << " " << c.arch;
}

std::vector<ArchCase> archCases() {
  std::vector<ArchCase> cases;
  for (const char* spec : {"allreduce_oneshot", "allreduce_twoshot", "allgather_direct"})
    for (const char* arch : {"sm_80", "sm_89", "sm_90", "sm_100"})
      cases.push_back({spec, arch});
  return cases;
}

class DefaultOptionsForEachArch : public testing::TestWithParam<ArchCase> {};

TEST_P(DefaultOptionsForEachArch, CompilesWithProgrammaticLaunchWhereTheArchHasIt) {
  const ArchCase& c = GetParam();
  auto spec = loadSpec(c.spec);
  ASSERT_TRUE(bool(spec));
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(*spec, CompileOptions{}, out);
  ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError()) << out.str();
  ASSERT_TRUE(compiled->programmaticLaunch) << "programmatic launch is on by default";

  JitOptions jit;
  jit.arch = c.arch;
  jit.useCache = false;
  auto cubin = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
  ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
  EXPECT_EQ(cubin->image.substr(0, 4), "\x7f"
                                       "ELF");
  EXPECT_EQ(cubin->log.find("warning"), std::string::npos) << cubin->log;

  auto ptx = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Ptx, jit);
  ASSERT_TRUE(bool(ptx)) << toString(ptx.takeError());
  const bool hasIt = std::string(c.arch) == "sm_90" || std::string(c.arch) == "sm_100";
  EXPECT_EQ(ptx->image.find("griddepcontrol.wait") != std::string::npos, hasIt);
  EXPECT_EQ(ptx->image.find("griddepcontrol.launch_dependents") != std::string::npos, hasIt);
  EXPECT_NE(ptx->image.find("fence.acq_rel.gpu"), std::string::npos);

  // Without it, on any architecture: no wait, no go-ahead, and no fence for them.
  CompileOptions inOrder;
  inOrder.programmaticLaunch = false;
  auto stream = compileCollective(*spec, inOrder, out);
  ASSERT_TRUE(bool(stream)) << toString(stream.takeError()) << out.str();
  auto streamPtx = compileCuda(stream->cudaSource, stream->kernelName, JitOutput::Ptx, jit);
  ASSERT_TRUE(bool(streamPtx)) << toString(streamPtx.takeError());
  EXPECT_EQ(streamPtx->image.find("griddepcontrol"), std::string::npos);
  EXPECT_EQ(streamPtx->image.find("fence.acq_rel.gpu"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Archs, DefaultOptionsForEachArch, testing::ValuesIn(archCases()),
                         [](const testing::TestParamInfo<ArchCase>& info) {
                           return std::string(info.param.spec) + "_" + info.param.arch;
                         });

// What whole_stores changes in the machine code, checked in the PTX: the one-shot's push of
// loaded data is split into 32-bit stores without it (NVVM's choice for the plain store of a
// vector whose two load paths meet in a union), and is one vector store with it.
TEST(WholeStores, OneVectorStorePerVectorInThePtx) {
  auto ptxOf = [](int wholeStores) -> std::string {
    auto spec = loadSpec("allreduce_oneshot");
    EXPECT_TRUE(bool(spec));
    if (!spec) {
      consumeError(spec.takeError());
      return "";
    }
    CompileOptions options;
    options.dtype = DType::BF16;
    options.sync = SyncKind::Sentinel;
    options.wholeStores = wholeStores;
    std::string diagnostics;
    DiagnosticText out(diagnostics);
    auto compiled = compileCollective(*spec, options, out);
    EXPECT_TRUE(bool(compiled)) << out.str();
    if (!compiled) {
      consumeError(compiled.takeError());
      return "";
    }
    JitOptions jit;
    jit.arch = "sm_90";
    jit.useCache = false;
    auto ptx = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Ptx, jit);
    EXPECT_TRUE(bool(ptx));
    if (!ptx) {
      consumeError(ptx.takeError());
      return "";
    }
    return ptx->image;
  };
  const std::string split = ptxOf(0), whole = ptxOf(1);
  EXPECT_NE(split.find("st.global.u32"), std::string::npos) << "NVVM no longer splits the push";
  EXPECT_EQ(whole.find("st.global.u32"), std::string::npos);
  EXPECT_NE(whole.find("st.global.wb.v4.u32"), std::string::npos);
}

} // namespace
} // namespace collc
