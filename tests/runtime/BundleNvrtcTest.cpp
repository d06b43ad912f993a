// A bundle of real cubins: a stdlib variant compiled by NVRTC for two architectures, written and
// loaded back, each cubin byte for byte the one NVRTC made. No GPU needed.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "runtime/BundleFile.h"
#include "runtime/Jit.h"

#include <cstdio>
#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

namespace collc {
namespace {

TEST(BundleNvrtc, CubinsForTwoArchsLoadByteForByte) {
  auto spec = loadSpec("reduce_direct");
  ASSERT_TRUE(bool(spec)) << toString(spec.takeError());
  CompileOptions options;
  options.nranks = 4;
  options.root = 2;
  options.dtype = DType::BF16;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError()) << out.str();

  CollectiveBundle bundle;
  for (const char* arch : {"sm_80", "sm_90"}) {
    JitOptions jit;
    jit.arch = arch;
    auto image = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
    ASSERT_TRUE(bool(image)) << toString(image.takeError());
    bundle.cubins.push_back({arch, image->image});
  }
  ASSERT_NE(bundle.cubins[0].image, bundle.cubins[1].image);
  bundle.compiled = *compiled;
  bundle.compiled.cudaSource.clear();

  const std::string path =
      ::testing::TempDir() + "collc-bundle-nvrtc-" + std::to_string(::getpid()) + ".collb";
  ASSERT_FALSE(bool(writeBundle(path, bundle)));
  Expected<LoadedBundle> loaded = loadBundle(path);
  std::remove(path.c_str());
  ASSERT_TRUE(bool(loaded)) << toString(loaded.takeError());
  EXPECT_EQ(loaded->compiled().kernelName, compiled->kernelName);
  EXPECT_EQ(loaded->compiled().root, 2);
  for (const BundleCubin& cubin : bundle.cubins) {
    Expected<std::string> image = loaded->cubinFor(cubin.arch);
    ASSERT_TRUE(bool(image)) << toString(image.takeError());
    EXPECT_EQ(*image, cubin.image) << cubin.arch;
    EXPECT_EQ(image->substr(0, 4), "\x7f"
                                   "ELF");
  }
}

} // namespace
} // namespace collc
