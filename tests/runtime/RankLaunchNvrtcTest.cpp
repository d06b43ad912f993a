// The entry point that runs every rank of a one-GPU world in one launch (<kernel>_ranks,
// runtime/RankLaunch.h): printed only on request, after the kernel, which it leaves exactly as it
// is without it; and it compiles with NVRTC, at 72 ranks too (its argument is past the 4 KB of
// kernel parameters every architecture takes). No GPU is needed.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "runtime/Jit.h"
#include "tests/SpecForRanks.h"
#include "tests/StdlibApplicability.h"
#include "tests/StdlibStrategies.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

/// `spec` compiled for `nranks` (from a copy that declares that count alone: the proof of the
/// spec's whole range is not what this tests), with or without the entry point.
Expected<CompiledCollective> compileAt(const std::string& specName, SyncKind sync, int nranks,
                                       bool rankLaunchEntry) {
  Expected<SpecSource> spec = loadSpec(specName);
  if (!spec)
    return spec.takeError();
  spec->text = tests::specTextForRanks(spec->text, nranks);
  CompileOptions options;
  options.dtype = DType::BF16;
  options.nranks = nranks;
  options.root = nranks - 1;
  options.sync = sync;
  options.formatSource = false;
  options.rankLaunchEntry = rankLaunchEntry;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  Expected<CompiledCollective> compiled = compileCollective(*spec, options, out);
  if (!compiled)
    return joinErrors(compiled.takeError(), makeError(out.str()));
  return compiled;
}

TEST(RankLaunchEntry, IsPrintedOnlyOnRequestAndLeavesTheKernelAsItIs) {
  for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs)
    for (SyncKind sync : tests::kGpuStrategies) {
      if (!tests::specAccepts(facts, sync, ReduceOp::Sum))
        continue;
      SCOPED_TRACE(std::string(facts.name) + " " + std::string(name(sync)));
      Expected<CompiledCollective> plain = compileAt(facts.name, sync, 4, false);
      ASSERT_TRUE(bool(plain)) << toString(plain.takeError());
      Expected<CompiledCollective> both = compileAt(facts.name, sync, 4, true);
      ASSERT_TRUE(bool(both)) << toString(both.takeError());
      const std::string entry = plain->kernelName + "_ranks(";
      EXPECT_EQ(plain->cudaSource.find(entry), std::string::npos);
      EXPECT_EQ(plain->cudaSource.find("collc_rank_launch"), std::string::npos);
      ASSERT_GT(both->cudaSource.size(), plain->cudaSource.size());
      EXPECT_EQ(both->cudaSource.substr(0, plain->cudaSource.size()), plain->cudaSource);
      EXPECT_NE(both->cudaSource.find(entry, plain->cudaSource.size()), std::string::npos);
    }
}

TEST(RankLaunchEntry, CompilesToACubinWithBothEntryPoints) {
  struct Case {
    const char* spec;
    SyncKind sync;
    int nranks;
  };
  // Packets at 72 ranks (the largest argument); sentinels with rows and aux buffers; LL128 lines;
  // barriers and a root.
  const Case cases[] = {{"allreduce_oneshot", SyncKind::LL, 72},
                        {"allreduce_rmsnorm", SyncKind::Sentinel, 4},
                        {"reducescatter_direct", SyncKind::LL128Atomic, 4},
                        {"broadcast_direct", SyncKind::Barrier, 4}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.spec) + " at " + std::to_string(c.nranks) + " ranks");
    Expected<CompiledCollective> compiled = compileAt(c.spec, c.sync, c.nranks, true);
    ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError());
    JitOptions jit;
    jit.arch = "sm_90";
    jit.useCache = false;
    auto cubin = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
    ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
    EXPECT_NE(cubin->image.find(compiled->kernelName + "_ranks"), std::string::npos);
    EXPECT_EQ(cubin->log.find("warning"), std::string::npos) << cubin->log;
  }
}

} // namespace
} // namespace collc
