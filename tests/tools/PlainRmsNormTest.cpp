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

CompiledCollective fusedVariant(DType dtype, int64_t hidden) {
  Expected<SpecSource> spec = loadSpec("allreduce_rmsnorm");
  EXPECT_TRUE(bool(spec)) << toString(spec.takeError());
  CompileOptions options;
  options.dtype = dtype;
  options.nranks = 2;
  options.rowLength = hidden;
  options.eps = 1e-5f;
  Expected<CompiledCollective> compiled = compileCollective(*spec, options, std::cerr);
  EXPECT_TRUE(bool(compiled)) << toString(compiled.takeError());
  return *compiled;
}

TEST(PlainRmsNorm, CompilesForEveryTypeAndHiddenSize) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (int64_t hidden : {4096, 8192}) {
      CompiledCollective fused = fusedVariant(dtype, hidden);
      Expected<PlainRmsNormKernel> kernel = plainRmsNormKernel(fused);
      ASSERT_TRUE(bool(kernel)) << toString(kernel.takeError());
      EXPECT_EQ(kernel->threads % 32, 0);
      EXPECT_LE(kernel->threads, 1024);
      EXPECT_NE(kernel->source.find("constexpr int kHidden = " + std::to_string(hidden) + ";"),
                std::string::npos);
      EXPECT_NE(
          kernel->source.find("kResidualIn = " + std::to_string(fused.addRmsNorm->residualIn)),
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
  CompiledCollective fused = fusedVariant(DType::BF16, 4096);
  CompiledCollective odd = fused;
  odd.rowLength = 4100; // not whole 16-byte vectors of 8 bf16
  Expected<PlainRmsNormKernel> refused = plainRmsNormKernel(odd);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(toString(refused.takeError()).find("not whole 16-byte vectors"), std::string::npos);
  CompiledCollective plain = fused;
  plain.addRmsNorm.reset();
  Expected<PlainRmsNormKernel> notFused = plainRmsNormKernel(plain);
  ASSERT_FALSE(bool(notFused));
  consumeError(notFused.takeError());
}

} // namespace
} // namespace collc
