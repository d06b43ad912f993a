// The unfused RMSNorm baseline of `collc bench allreduce_rmsnorm` (tools/bench/PlainRmsNorm.h): its
// source takes the fused variant's type, row length, eps and aux order, NVRTC compiles it for
// every type and both decode hidden sizes, and unfit row lengths are refused.
#include "tools/bench/PlainRmsNorm.h"

#include "compiler/Compile.h"
#include "runtime/Jit.h"

#include <gtest/gtest.h>
#include <iostream>
#include <llvm/Support/raw_ostream.h>

namespace collc {
namespace {

/// A variant of `specName` and the spec's program it was lowered from.
struct Fused {
  CompiledCollective compiled;
  std::shared_ptr<const ir::Program> spec;
};

Fused fusedVariant(DType dtype, int64_t hidden, const char* specName = "allreduce_rmsnorm") {
  Expected<SpecSource> spec = loadSpec(specName);
  EXPECT_TRUE(bool(spec)) << toString(spec.takeError());
  CompileOptions options;
  options.dtype = dtype;
  options.nranks = 2;
  options.rowLength = hidden;
  options.eps = 1e-5f;
  Fused fused;
  options.specProgram = &fused.spec;
  Expected<CompiledCollective> compiled = compileCollective(*spec, options, std::cerr);
  EXPECT_TRUE(bool(compiled)) << toString(compiled.takeError());
  fused.compiled = *compiled;
  return fused;
}

TEST(PlainRmsNorm, CompilesForEveryTypeAndHiddenSize) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (int64_t hidden : {4096, 8192}) {
      Fused fused = fusedVariant(dtype, hidden);
      Expected<PlainRmsNormKernel> kernel = plainRmsNormKernel(fused.compiled, *fused.spec);
      ASSERT_TRUE(bool(kernel)) << toString(kernel.takeError());
      EXPECT_EQ(kernel->threads % 32, 0);
      EXPECT_LE(kernel->threads, 1024);
      EXPECT_NE(kernel->source.find("constexpr int kHidden = " + std::to_string(hidden) + ";"),
                std::string::npos);
      EXPECT_NE(kernel->source.find("kResidualIn = 0, kResidualOut = 1, kWeight = 2;"),
                std::string::npos);
      EXPECT_NE(kernel->source.find("kEps = 9.99999975e-06f"), std::string::npos)
          << kernel->source.substr(0, 200);
      JitOptions jit;
      jit.useCache = false;
      Expected<JitResult> ptx = compileCuda(kernel->source, kernel->name, JitOutput::Ptx, jit);
      ASSERT_TRUE(bool(ptx)) << name(dtype) << " " << hidden << ": " << toString(ptx.takeError());
      EXPECT_NE(ptx->image.find(kernel->name), std::string::npos);
    }
}

TEST(PlainRmsNorm, RefusesUnfitVariants) {
  Fused fused = fusedVariant(DType::BF16, 4096);
  CompiledCollective odd = fused.compiled;
  odd.rowLength = 4100; // not whole 16-byte vectors of 8 bf16
  Expected<PlainRmsNormKernel> refused = plainRmsNormKernel(odd, *fused.spec);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(toString(refused.takeError()).find("not whole 16-byte vectors"), std::string::npos);
  Fused plain = fusedVariant(DType::BF16, /*hidden=*/0, "allreduce_oneshot");
  Expected<PlainRmsNormKernel> notFused = plainRmsNormKernel(fused.compiled, *plain.spec);
  ASSERT_FALSE(bool(notFused));
  EXPECT_NE(toString(notFused.takeError()).find("is not the fused residual add + RMSNorm"),
            std::string::npos);
}

} // namespace
} // namespace collc
