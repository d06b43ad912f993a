// NVRTC through compileCuda: real compiles (no GPU needed), error reports, and the cache in use.
#include "runtime/Jit.h"

#include "runtime/NvrtcLibrary.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
#include <optional>
#include <regex>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace collc {
namespace {

constexpr const char* ScaleKernel =
    R"(extern "C" __global__ void collc_test_scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] *= a;
}
)";

/// Unwraps `result`, turning an error into a test failure that shows its message.
std::optional<JitResult> valueOrFail(Expected<JitResult> result) {
  if (!result) {
    ADD_FAILURE() << toString(result.takeError());
    return std::nullopt;
  }
  return std::move(*result);
}

/// The error message of a compile expected to fail.
std::string errorOf(Expected<JitResult> result) {
  if (result) {
    ADD_FAILURE() << "compile unexpectedly succeeded";
    return "";
  }
  return toString(result.takeError());
}

class JitTest : public ::testing::Test {
protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            (std::string("collc-jit-") + test->name() + "-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    cached_.cacheDir = (root_ / "cache").string();
    uncached_.useCache = false;
  }
  void TearDown() override { fs::remove_all(root_); }

  size_t cacheEntries() const {
    if (!fs::exists(cached_.cacheDir))
      return 0;
    size_t count = 0;
    for (const auto& entry : fs::directory_iterator(cached_.cacheDir)) {
      (void)entry;
      ++count;
    }
    return count;
  }

  fs::path root_;
  JitOptions cached_;
  JitOptions uncached_;
};

TEST_F(JitTest, CompilesToPtx) {
  std::optional<JitResult> result =
      valueOrFail(compileCuda(ScaleKernel, "scale.cu", JitOutput::Ptx, uncached_));
  ASSERT_TRUE(result);
  EXPECT_FALSE(result->cacheHit);
  EXPECT_GT(result->milliseconds, 0.0);
  EXPECT_NE(result->image.find(".entry collc_test_scale"), std::string::npos) << result->image;
  EXPECT_NE(result->image.find(".target sm_90"), std::string::npos);
  EXPECT_EQ(result->image.find('\0'), std::string::npos) << "PTX is text, without NVRTC's NUL";
}

TEST_F(JitTest, CompilesToSm90Cubin) {
  std::optional<JitResult> result =
      valueOrFail(compileCuda(ScaleKernel, "scale.cu", JitOutput::Cubin, uncached_));
  ASSERT_TRUE(result);
  const std::string& elf = result->image;
  ASSERT_GT(elf.size(), 64u);
  EXPECT_EQ(elf.substr(0, 4), "\x7f"
                              "ELF");
  EXPECT_EQ(elf[4], 2) << "64-bit ELF";
  // e_machine, little-endian at offset 18: EM_CUDA is 190.
  EXPECT_EQ(static_cast<unsigned char>(elf[18]) | static_cast<unsigned char>(elf[19]) << 8, 190);
  EXPECT_NE(elf.find("collc_test_scale"), std::string::npos) << "the kernel's symbol";
}

// The family target is taken for a source with family-specific code, on an architecture with a
// family, with an NVRTC that has family targets and the architecture; never for a named suffix.
TEST(FamilyTarget, OnlyWhereTheSourceUsesItAndNvrtcHasIt) {
  const std::string family = "#if defined(__CUDA_ARCH_FAMILY_SPECIFIC__)\n#endif\n";
  const std::vector<int> cuda13 = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
  EXPECT_EQ(familyTargetFor("sm_100", family, "13.0", cuda13), "sm_100f");
  EXPECT_EQ(familyTargetFor("sm_120", family, "13.0", cuda13), "sm_120f");
  EXPECT_EQ(familyTargetFor("sm_103", family, "12.9", {}), "sm_103f");
  EXPECT_EQ(familyTargetFor("sm_100", "__global__ void k() {}", "13.0", cuda13), "sm_100");
  EXPECT_EQ(familyTargetFor("sm_90", family, "13.0", cuda13), "sm_90");   // no family before 10.0
  EXPECT_EQ(familyTargetFor("sm_100", family, "12.8", {}), "sm_100");     // no 'f' before 12.9
  EXPECT_EQ(familyTargetFor("sm_101", family, "13.0", cuda13), "sm_101"); // not in this NVRTC
  EXPECT_EQ(familyTargetFor("sm_100a", family, "13.0", cuda13), "sm_100a");
  EXPECT_EQ(familyTargetFor("compute_100", family, "13.0", cuda13), "compute_100");
}

// With familyTargetWhereUsed, NVRTC compiles such a source for the family: the PTX's target says
// so, and the branch for the family is the one compiled.
TEST_F(JitTest, TheFamilyTargetReachesNvrtc) {
  const std::string version = nvrtcVersionString();
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2 || major * 10 + minor < 129)
    GTEST_SKIP() << "NVRTC " << version << " has no family targets";
  const char* source = "extern \"C\" __global__ void collc_test_family(int* out) {\n"
                       "#if defined(__CUDA_ARCH_FAMILY_SPECIFIC__)\n"
                       "  *out = __CUDA_ARCH_FAMILY_SPECIFIC__;\n"
                       "#else\n"
                       "  *out = -1;\n"
                       "#endif\n"
                       "}\n";
  JitOptions options = uncached_;
  options.arch = "sm_100";
  std::optional<JitResult> plain =
      valueOrFail(compileCuda(source, "family.cu", JitOutput::Ptx, options));
  ASSERT_TRUE(plain);
  EXPECT_NE(plain->image.find(".target sm_100\n"), std::string::npos) << plain->image;
  EXPECT_NE(plain->image.find("-1;"), std::string::npos) << plain->image;
  options.familyTargetWhereUsed = true;
  std::optional<JitResult> family =
      valueOrFail(compileCuda(source, "family.cu", JitOutput::Ptx, options));
  ASSERT_TRUE(family);
  EXPECT_NE(family->image.find(".target sm_100f"), std::string::npos) << family->image;
  EXPECT_NE(family->image.find("1000;"), std::string::npos) << family->image;
}

// Generated kernels include no header, so the JIT hands NVRTC no include directory: it needs no
// CUDA toolkit on disk. A source that includes a toolkit header fails, naming it.
TEST_F(JitTest, PassesNoIncludeDirectory) {
  const char* source = "#include <cuda_fp16.h>\n"
                       "extern \"C\" __global__ void collc_test_include() {}\n";
  std::string message = errorOf(compileCuda(source, "include.cu", JitOutput::Ptx, uncached_));
  EXPECT_NE(message.find("cuda_fp16.h"), std::string::npos) << message;
  // The options end the message (the source follows only with sourceInErrors).
  const std::string options = "options: -std=c++17 --gpu-architecture=compute_90 -default-device";
  EXPECT_TRUE(message.size() >= options.size() &&
              message.substr(message.size() - options.size()) == options)
      << message;
  EXPECT_EQ(message.find(" -I"), std::string::npos) << message;
}

TEST(UnsupportedArch, SaysWhatTheNvrtcHasInOneLine) {
  const std::vector<int> cuda13 = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
  EXPECT_EQ(unsupportedArch("sm_70", cuda13, "13.0"),
            "CUDA 13.0's NVRTC has no sm_70: use sm_75 or newer");
  EXPECT_EQ(unsupportedArch("compute_60", cuda13, "13.0"),
            "CUDA 13.0's NVRTC has no compute_60: use compute_75 or newer");
  EXPECT_EQ(unsupportedArch("sm_90", cuda13, "13.0"), "");
  EXPECT_EQ(unsupportedArch("sm_90a", cuda13, "13.0"), "");
  EXPECT_EQ(unsupportedArch("compute_121", cuda13, "13.0"), "");
  EXPECT_EQ(unsupportedArch("sm_91", cuda13, "13.0"),
            "CUDA 13.0's NVRTC has no sm_91: it compiles for sm_75, sm_80, sm_86, sm_87, sm_88, "
            "sm_89, sm_90, sm_100, sm_103, sm_110, sm_120, sm_121");
  EXPECT_NE(unsupportedArch("sm_130", cuda13, "13.0")
                .find("has no sm_130: its newest is sm_121 (it compiles for sm_75, "),
            std::string::npos);
  EXPECT_NE(unsupportedArch("sm_99999999999", cuda13, "13.0").find("its newest is sm_121"),
            std::string::npos);
  // An NVRTC that cannot say: NVRTC itself decides.
  EXPECT_EQ(unsupportedArch("sm_70", {}, "11.0"), "");
}

TEST_F(JitTest, AnArchitectureTheNvrtcLacksIsOneLine) {
  auto nvrtc = nvrtcLibrary();
  ASSERT_TRUE(bool(nvrtc)) << toString(nvrtc.takeError());
  const std::vector<int>& archs = (*nvrtc)->supportedArchs;
  if (archs.empty() || std::find(archs.begin(), archs.end(), 70) != archs.end())
    GTEST_SKIP() << "NVRTC " << (*nvrtc)->version << " compiles for sm_70, or cannot say";
  JitOptions options = uncached_;
  options.arch = "sm_70";
  const char* source = "extern \"C\" __global__ void collc_test_arch() {}\n";
  const std::string message = errorOf(compileCuda(source, "arch.cu", JitOutput::Cubin, options));
  EXPECT_EQ(message, unsupportedArch("sm_70", archs, (*nvrtc)->version));
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("has no sm_70: use sm_"), std::string::npos) << message;
  options.sourceInErrors = true;
  const std::string verbose = errorOf(compileCuda(source, "arch.cu", JitOutput::Cubin, options));
  EXPECT_NE(verbose.find("source:\n   1 | extern \"C\" __global__ void collc_test_arch() {}"),
            std::string::npos)
      << verbose;
}

TEST_F(JitTest, FailedCompileReportsLogOptionsAndNumberedSource) {
  const char* source = "extern \"C\" __global__ void collc_test_bad(float* x) {\n"
                       "  // the next line uses a name that does not exist (5 % 3 == 2)\n"
                       "  x[0] = collc_no_such_name;\n"
                       "}\n";
  JitOptions options = uncached_;
  options.extraOptions = {"-DCOLLC_MARKER=1"};
  // Without sourceInErrors, the log and the options only.
  std::string brief = errorOf(compileCuda(source, "bad_kernel.cu", JitOutput::Ptx, options));
  EXPECT_NE(brief.find("bad_kernel.cu(3)"), std::string::npos) << brief;
  EXPECT_EQ(brief.find("source:"), std::string::npos) << brief;
  EXPECT_EQ(brief.find("   4 | }"), std::string::npos) << brief;
  options.sourceInErrors = true;
  std::string message = errorOf(compileCuda(source, "bad_kernel.cu", JitOutput::Ptx, options));
  // NVRTC's own log, naming the program and the line.
  EXPECT_NE(message.find("bad_kernel.cu(3)"), std::string::npos) << message;
  EXPECT_NE(message.find("identifier \"collc_no_such_name\" is undefined"), std::string::npos)
      << message;
  // Every option, the built-in ones and the caller's.
  EXPECT_NE(message.find("options: -std=c++17 --gpu-architecture=compute_90 -default-device"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("-DCOLLC_MARKER=1"), std::string::npos) << message;
  // The source, numbered.
  EXPECT_NE(message.find("   3 |   x[0] = collc_no_such_name;\n"), std::string::npos) << message;
  EXPECT_NE(message.find("   4 | }\n"), std::string::npos) << message;
  // A '%' in the source is printed as is, never taken for a format directive.
  EXPECT_NE(
      message.find("   2 |   // the next line uses a name that does not exist (5 % 3 == 2)\n"),
      std::string::npos)
      << message;
  // A failed compile leaves nothing in the cache.
  options.useCache = true;
  options.cacheDir = cached_.cacheDir;
  errorOf(compileCuda(source, "bad_kernel.cu", JitOutput::Ptx, options));
  EXPECT_EQ(cacheEntries(), 0u);
}

TEST_F(JitTest, ArchitectureIsValidated) {
  JitOptions options = uncached_;
  options.arch = "compute_90";
  EXPECT_NE(errorOf(compileCuda(ScaleKernel, "scale.cu", JitOutput::Cubin, options))
                .find("real GPU architecture"),
            std::string::npos);
  // A virtual architecture is fine for PTX.
  EXPECT_TRUE(valueOrFail(compileCuda(ScaleKernel, "scale.cu", JitOutput::Ptx, options)));
  for (const char* bad : {"", "90", "sm_", "sm_9x", "gfx90a"}) {
    options.arch = bad;
    EXPECT_NE(errorOf(compileCuda(ScaleKernel, "scale.cu", JitOutput::Ptx, options))
                  .find("invalid GPU architecture"),
              std::string::npos)
        << bad;
  }
}

TEST_F(JitTest, SecondCompileIsCacheHitWithIdenticalBytes) {
  for (JitOutput output : {JitOutput::Ptx, JitOutput::Cubin}) {
    std::optional<JitResult> cold =
        valueOrFail(compileCuda(ScaleKernel, "scale.cu", output, cached_));
    std::optional<JitResult> warm =
        valueOrFail(compileCuda(ScaleKernel, "scale.cu", output, cached_));
    ASSERT_TRUE(cold && warm);
    EXPECT_FALSE(cold->cacheHit);
    EXPECT_TRUE(warm->cacheHit);
    EXPECT_EQ(warm->image, cold->image);
    std::cout << "[ timing   ] " << (output == JitOutput::Ptx ? "PTX" : "cubin")
              << ": cold compile " << cold->milliseconds << " ms, warm cache hit "
              << warm->milliseconds << " ms\n";
  }
  EXPECT_EQ(cacheEntries(), 2u) << "one entry per output kind";
}

TEST_F(JitTest, CorruptCacheEntryIsMissAndRepaired) {
  std::optional<JitResult> first =
      valueOrFail(compileCuda(ScaleKernel, "scale.cu", JitOutput::Cubin, cached_));
  ASSERT_TRUE(first);
  ASSERT_EQ(cacheEntries(), 1u);
  fs::path entry = fs::directory_iterator(cached_.cacheDir)->path();

  // Torn write: only half the file made it to disk.
  fs::resize_file(entry, fs::file_size(entry) / 2);
  std::optional<JitResult> afterTear =
      valueOrFail(compileCuda(ScaleKernel, "scale.cu", JitOutput::Cubin, cached_));
  ASSERT_TRUE(afterTear);
  EXPECT_FALSE(afterTear->cacheHit);
  EXPECT_EQ(afterTear->image, first->image);

  // Flipped bits in the payload, size intact.
  {
    std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(fs::file_size(entry) - 10));
    file.put('\xa5');
  }
  std::optional<JitResult> afterFlip =
      valueOrFail(compileCuda(ScaleKernel, "scale.cu", JitOutput::Cubin, cached_));
  ASSERT_TRUE(afterFlip);
  EXPECT_FALSE(afterFlip->cacheHit);
  EXPECT_EQ(afterFlip->image, first->image);

  // The miss rewrote the entry: the next compile hits again.
  std::optional<JitResult> repaired =
      valueOrFail(compileCuda(ScaleKernel, "scale.cu", JitOutput::Cubin, cached_));
  ASSERT_TRUE(repaired);
  EXPECT_TRUE(repaired->cacheHit);
  EXPECT_EQ(repaired->image, first->image);
  EXPECT_EQ(cacheEntries(), 1u);
}

TEST_F(JitTest, AnyChangeOfSourceOptionsArchOrOutputMisses) {
  auto compile = [](const std::string& source, JitOutput output, const JitOptions& options) {
    std::optional<JitResult> result = valueOrFail(compileCuda(source, "scale.cu", output, options));
    return result && result->cacheHit;
  };
  ASSERT_FALSE(compile(ScaleKernel, JitOutput::Cubin, cached_));
  ASSERT_TRUE(compile(ScaleKernel, JitOutput::Cubin, cached_));

  JitOptions lineInfo = cached_;
  lineInfo.extraOptions = {"-lineinfo"};
  EXPECT_FALSE(compile(ScaleKernel, JitOutput::Cubin, lineInfo));
  JitOptions define = cached_;
  define.extraOptions = {"-DCOLLC_UNUSED=1"};
  EXPECT_FALSE(compile(ScaleKernel, JitOutput::Cubin, define));
  define.extraOptions = {"-DCOLLC_UNUSED=2"};
  EXPECT_FALSE(compile(ScaleKernel, JitOutput::Cubin, define));
  JitOptions otherArch = cached_;
  otherArch.arch = "sm_100";
  EXPECT_FALSE(compile(ScaleKernel, JitOutput::Cubin, otherArch));
  EXPECT_FALSE(compile(ScaleKernel, JitOutput::Ptx, cached_));
  EXPECT_FALSE(compile(std::string(ScaleKernel) + "// edited\n", JitOutput::Cubin, cached_));
  // -lineinfo writes the program name into the image, so it is part of the key too.
  std::optional<JitResult> renamed =
      valueOrFail(compileCuda(ScaleKernel, "other_name.cu", JitOutput::Cubin, cached_));
  EXPECT_TRUE(renamed && !renamed->cacheHit);
  EXPECT_EQ(cacheEntries(), 8u);
}

TEST_F(JitTest, UnwritableCacheDirStillCompiles) {
  // A directory below a regular file cannot be created, even by root (unlike a chmod'ed one).
  std::ofstream(root_ / "file") << "not a directory";
  JitOptions options = cached_;
  options.cacheDir = (root_ / "file" / "cache").string();
  ::testing::internal::CaptureStderr();
  std::optional<JitResult> first =
      valueOrFail(compileCuda(ScaleKernel, "scale.cu", JitOutput::Cubin, options));
  std::optional<JitResult> second =
      valueOrFail(compileCuda(ScaleKernel, "scale.cu", JitOutput::Cubin, options));
  std::string warnings = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(first->cacheHit);
  EXPECT_FALSE(second->cacheHit);
  EXPECT_EQ(first->image, second->image);
  // At most one warning per process, whichever test happened to trigger it.
  size_t count = 0;
  for (size_t at = warnings.find("kernel cache disabled"); at != std::string::npos;
       at = warnings.find("kernel cache disabled", at + 1))
    ++count;
  EXPECT_LE(count, 1u) << warnings;
}

TEST_F(JitTest, UseCacheFalseWritesNothing) {
  JitOptions options = uncached_;
  options.cacheDir = cached_.cacheDir;
  for (int i = 0; i < 2; ++i) {
    std::optional<JitResult> result =
        valueOrFail(compileCuda(ScaleKernel, "scale.cu", JitOutput::Ptx, options));
    ASSERT_TRUE(result);
    EXPECT_FALSE(result->cacheHit);
  }
  EXPECT_FALSE(fs::exists(cached_.cacheDir));
}

TEST(JitEnvironmentTest, NvrtcVersionIsMajorDotMinor) {
  std::string version = nvrtcVersionString();
  std::smatch match;
  ASSERT_TRUE(std::regex_match(version, match, std::regex(R"((\d+)\.(\d+))"))) << version;
  EXPECT_GE(std::stoi(match[1]), 12);
}

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

TEST(JitEnvironmentTest, DefaultCacheDirFollowsTheEnvironment) {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv collc("COLLC_CACHE_DIR", "/tmp/explicit");
    ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(defaultCacheDir(), "/tmp/explicit");
  }
  {
    ScopedEnv collc("COLLC_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(defaultCacheDir(), "/tmp/xdg/collc");
  }
  {
    ScopedEnv collc("COLLC_CACHE_DIR", "");
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(defaultCacheDir(), "/home/someone/.cache/collc");
  }
  {
    // The XDG spec says to ignore a relative XDG_CACHE_HOME.
    ScopedEnv collc("COLLC_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/dir");
    EXPECT_EQ(defaultCacheDir(), "/home/someone/.cache/collc");
  }
}

} // namespace
} // namespace collc
