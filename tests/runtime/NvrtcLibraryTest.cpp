// NVRTC opened at run time: where it is looked for, what a failed load says, and that the library
// found (and the same file named explicitly) compiles.
#include "runtime/NvrtcLibrary.h"

#include "runtime/Jit.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <optional>
#include <regex>

namespace collc {
namespace {

/// Sets (or, given nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name))
      old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

private:
  const char* name_;
  std::optional<std::string> old_;
};

constexpr const char* kBogus = "/nonexistent/libnvrtc.so.99";

constexpr const char* kKernel = R"(extern "C" __global__ void collc_test_noop() {}
)";

TEST(NvrtcCandidates, ALibraryTheUserNamesIsTheOnlyOne) {
  ScopedEnv env(kNvrtcLibraryVariable, "/from/env/libnvrtc.so");
  EXPECT_EQ(nvrtcCandidates("/given/libnvrtc.so"), std::vector<std::string>{"/given/libnvrtc.so"});
  EXPECT_EQ(nvrtcCandidates(), std::vector<std::string>{"/from/env/libnvrtc.so"});
}

TEST(NvrtcCandidates, OtherwiseTheLoaderThenTheToolkit) {
  ScopedEnv env(kNvrtcLibraryVariable, nullptr);
  ScopedEnv home("CUDA_HOME", "/opt/cuda-x");
  const std::vector<std::string> expected = {
      "libnvrtc.so.13",
      "libnvrtc.so.12",
      "libnvrtc.so",
      "/opt/cuda-x/lib64/libnvrtc.so.13",
      "/opt/cuda-x/lib64/libnvrtc.so.12",
      "/opt/cuda-x/lib64/libnvrtc.so",
      "/usr/local/cuda/lib64/libnvrtc.so.13",
      "/usr/local/cuda/lib64/libnvrtc.so.12",
      "/usr/local/cuda/lib64/libnvrtc.so",
  };
  EXPECT_EQ(nvrtcCandidates(), expected);
}

TEST(NvrtcLoad, AnUnloadableLibraryIsNamedWithWhatToDo) {
  ScopedEnv env(kNvrtcLibraryVariable, kBogus);
  auto loaded = loadNvrtcLibrary(nvrtcCandidates());
  ASSERT_FALSE(bool(loaded));
  const std::string message = toString(loaded.takeError());
  EXPECT_NE(message.find(std::string("NVRTC not found; tried:\n  ") + kBogus + ": "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Set COLLC_NVRTC_LIBRARY"), std::string::npos) << message;
}

TEST(NvrtcLoad, ALibraryWithoutNvrtcIsRefusedAndTheNextTried) {
  // libc loads everywhere and has none of NVRTC's functions.
  auto loaded = loadNvrtcLibrary({"libc.so.6", kBogus});
  ASSERT_FALSE(bool(loaded));
  const std::string message = toString(loaded.takeError());
  EXPECT_NE(message.find("libc.so.6: loaded from "), std::string::npos) << message;
  EXPECT_NE(message.find("lacks nvrtcVersion, nvrtcGetErrorString"), std::string::npos) << message;
  EXPECT_NE(message.find(kBogus), std::string::npos) << message;
}

TEST(NvrtcLoad, TheLibraryFoundCompilesAndSoDoesTheSameFileNamed) {
  auto found = nvrtcLibrary();
  ASSERT_TRUE(bool(found)) << toString(found.takeError());
  EXPECT_TRUE(std::regex_match((*found)->version, std::regex(R"(\d+\.\d+)"))) << (*found)->version;
  EXPECT_EQ(nvrtcVersionString(), (*found)->version);
  ASSERT_FALSE((*found)->path.empty());

  auto named = nvrtcLibrary((*found)->path);
  ASSERT_TRUE(bool(named)) << toString(named.takeError());
  EXPECT_EQ((*named)->version, (*found)->version);
  JitOptions options;
  options.useCache = false;
  options.nvrtcLibrary = (*found)->path;
  auto ptx = compileCuda(kKernel, "noop.cu", JitOutput::Ptx, options);
  ASSERT_TRUE(bool(ptx)) << toString(ptx.takeError());
  EXPECT_NE(ptx->image.find("collc_test_noop"), std::string::npos);
}

TEST(NvrtcLoad, CompileCudaWithAnUnloadableLibraryNamesIt) {
  JitOptions options;
  options.useCache = false;
  options.nvrtcLibrary = kBogus;
  for (int attempt = 0; attempt < 2; ++attempt) { // the failure is kept, and said again
    auto ptx = compileCuda(kKernel, "noop.cu", JitOutput::Ptx, options);
    ASSERT_FALSE(bool(ptx));
    const std::string message = toString(ptx.takeError());
    EXPECT_NE(message.find(kBogus), std::string::npos) << message;
  }
}

TEST(NvrtcLoad, TheProgramsChoiceComesBeforeTheEnvironment) {
  auto found = nvrtcLibrary();
  ASSERT_TRUE(bool(found)) << toString(found.takeError());
  const std::string foundPath = (*found)->path;
  JitOptions options;
  options.useCache = false;

  ScopedEnv unset(kNvrtcLibraryVariable, nullptr);
  const std::string chosen = "/nonexistent/libnvrtc.so.98";
  setDefaultNvrtcLibrary(chosen);
  EXPECT_EQ(defaultNvrtcLibrary(), chosen);
  auto ptx = compileCuda(kKernel, "noop.cu", JitOutput::Ptx, options);
  ASSERT_FALSE(bool(ptx));
  const std::string message = toString(ptx.takeError());
  EXPECT_NE(message.find(chosen), std::string::npos) << message;

  // The program's choice is taken over the user's variable, and read nowhere else.
  ScopedEnv bogus(kNvrtcLibraryVariable, kBogus);
  setDefaultNvrtcLibrary(foundPath);
  ptx = compileCuda(kKernel, "noop.cu", JitOutput::Ptx, options);
  EXPECT_TRUE(bool(ptx)) << toString(ptx.takeError());
  EXPECT_STREQ(std::getenv(kNvrtcLibraryVariable), kBogus);

  // Empty: back to what the variable and the search found (once per process, so the library of
  // the first call above).
  setDefaultNvrtcLibrary("");
  EXPECT_EQ(defaultNvrtcLibrary(), "");
  auto again = nvrtcLibrary();
  ASSERT_TRUE(bool(again)) << toString(again.takeError());
  EXPECT_EQ(*again, *found);
}

} // namespace
} // namespace collc
