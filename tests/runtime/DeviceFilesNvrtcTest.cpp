// Every file of compiler/device/ compiles with NVRTC to a cubin, for each element type and each
// architecture collc targets, after what the code generator prints before it (printedConstants
// below) and with a kernel that calls each of its helpers (tests/runtime/device/*.cu), so that
// ptxas checks every instruction the helpers use on that architecture. No GPU is needed.
#include "compiler/CudaCodeGen.h"
#include "compiler/DevicePrelude.h"
#include "runtime/Jit.h"

#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <set>
#include <sstream>

namespace collc {
namespace {

constexpr const char* kArchs[] = {"sm_80", "sm_89", "sm_90", "sm_100"};

struct DeviceCase {
  std::string driver;                  // tests/runtime/device/<driver>.cu
  std::vector<std::string_view> files; // pasted after the files every kernel includes
  DType dtype;
  ReduceOp op;
  std::string arch;
  int vectorBytes;
  std::string refusal; // empty: it compiles; else a part of the error NVRTC must report
};

void PrintTo(const DeviceCase& c, std::ostream* os) {
  *os << c.driver << " " << name(c.dtype) << " " << name(c.op) << " " << c.arch << " "
      << c.vectorBytes << "-byte vectors";
}

const char* wordType(int vectorBytes) {
  return vectorBytes == 16  ? "uint4"
         : vectorBytes == 8 ? "uint2"
         : vectorBytes == 4 ? "unsigned int"
                            : "unsigned short";
}

/// What the code generator prints between types.cuh and the element file: the element type and
/// the variant's constants (printHeader in compiler/CudaCodeGen.cpp).
std::string printedConstants(DType dtype, int vectorBytes) {
  // [[maybe_unused]]: a driver uses only some of them (a kernel uses all).
  return fmt::format("typedef {} T;\n"
                     "[[maybe_unused]] constexpr int kRanks = 8;\n"
                     "[[maybe_unused]] constexpr int kBlocks = 4;\n"
                     "[[maybe_unused]] constexpr int kThreads = 256;\n"
                     "[[maybe_unused]] constexpr int kVec = {};\n"
                     "[[maybe_unused]] constexpr bool kWatchdog = true;\n"
                     "[[maybe_unused]] constexpr bool kWholeStores = false;\n"
                     "[[maybe_unused]] constexpr int kSyncPoints = 2;\n"
                     "[[maybe_unused]] constexpr int kScratchCopies = 2;\n"
                     "typedef {} Word;\n"
                     "[[maybe_unused]] constexpr int kChunkAlign = 8;\n"
                     "[[maybe_unused]] constexpr unsigned long long kHidden = 4096;\n"
                     "[[maybe_unused]] constexpr float kEps = 1e-6f;\n",
                     cudaTypeName(dtype), vectorBytes / int(sizeOf(dtype)), wordType(vectorBytes));
}

std::string readDriver(const std::string& name) {
  std::ifstream file(std::string(COLLC_DEVICE_DRIVERS_DIR) + "/" + name + ".cu");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string sourceOf(const DeviceCase& c) {
  std::string source(kernelAbiHeader());
  source += "namespace collc_kernel {\n";
  source += deviceFile(kTypesFile);
  source += printedConstants(c.dtype, c.vectorBytes);
  source += deviceFile(elementFile(c.dtype));
  source += deviceFile(combineFile(c.op));
  for (std::string_view file : kCommonDeviceFiles)
    source += deviceFile(file);
  for (std::string_view file : c.files)
    source += deviceFile(file);
  source += "} // namespace collc_kernel\nusing namespace collc_kernel;\n";
  return source + readDriver(c.driver);
}

/// Each driver with the files it needs, the vector widths it takes, and the architectures that
/// refuse it.
struct Driver {
  const char* name;
  std::vector<std::string_view> files;
  std::vector<int> vectorBytes; // the first on every architecture, the rest on sm_90
  bool needsSm90;
};

std::vector<DeviceCase> allCases() {
  const Driver drivers[] = {
      {"common", {}, {16, 8, 4, 2}, false},
      {"barrier", {"barrier.cuh"}, {16, 8, 4, 2}, false},
      {"sentinel", {"sentinel.cuh"}, {16, 8, 4, 2}, false},
      {"ll", {"ll.cuh"}, {16, 8}, false},
      {"rows", {"rows.cuh"}, {16}, false},
      {"rows_rmsnorm", {"rows.cuh", "rows_rmsnorm.cuh"}, {16}, false},
      {"rows_rmsnorm_fp8",
       {"rows.cuh", "rows_rmsnorm.cuh", "fp8_e4m3.cuh", "rows_rmsnorm_fp8.cuh"},
       {16, 8, 4, 2},
       false},
      {"ll128", {"ll128.cuh"}, {16}, false},
      {"atomic_lines", {"atomic_lines.cuh"}, {16}, true},
      {"rows_fp8_per_token",
       {"rows.cuh", "fp8_e4m3.cuh", "fp8_per_token.cuh", "rows_fp8_per_token.cuh"},
       {16, 8, 4, 2},
       false},
      {"quant_nvfp4", {"fp8_e4m3.cuh", "quant_nvfp4.cuh"}, {16}, false},
      {"rows_nvfp4", {"fp8_e4m3.cuh", "quant_nvfp4.cuh", "rows_nvfp4.cuh"}, {16, 8, 4, 2}, false},
  };
  std::vector<DeviceCase> cases;
  for (const Driver& driver : drivers)
    for (DType dtype : kAllDTypes)
      for (const char* arch : kArchs)
        for (int bytes : driver.vectorBytes) {
          if (bytes < int(sizeOf(dtype)) || (bytes != driver.vectorBytes[0] && arch != kArchs[2]))
            continue;
          const bool refused =
              driver.needsSm90 && std::string(arch) < "sm_90" && std::string(arch) != "sm_100";
          // The operator matters to the common files only (combine).
          for (ReduceOp op : kAllReduceOps)
            if (op == ReduceOp::Sum || std::string(driver.name) == "common")
              cases.push_back({driver.name, driver.files, dtype, op, arch, bytes,
                               refused ? "needs sm_90 or newer" : ""});
        }
  return cases;
}

class DeviceFilesNvrtc : public testing::TestWithParam<DeviceCase> {};

TEST_P(DeviceFilesNvrtc, CompilesToACubinWithoutWarnings) {
  const DeviceCase& c = GetParam();
  JitOptions jit;
  jit.arch = c.arch;
  jit.useCache = false;
  auto cubin = compileCuda(sourceOf(c), "collc_test_" + c.driver, JitOutput::Cubin, jit);
  if (!c.refusal.empty()) {
    ASSERT_FALSE(bool(cubin)) << "compiled although " << c.arch << " lacks what it needs";
    std::string message = toString(cubin.takeError());
    EXPECT_NE(message.find(c.refusal), std::string::npos) << message;
    return;
  }
  ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
  EXPECT_NE(cubin->image.find("collc_test_" + c.driver + '\0'), std::string::npos);
  EXPECT_EQ(cubin->log.find("warning"), std::string::npos) << cubin->log;
}

INSTANTIATE_TEST_SUITE_P(EveryFileTypeAndArch, DeviceFilesNvrtc, testing::ValuesIn(allCases()),
                         [](const testing::TestParamInfo<DeviceCase>& info) {
                           const DeviceCase& c = info.param;
                           return fmt::format("{}_{}_{}_{}_{}bytes", c.driver, name(c.dtype),
                                              name(c.op), c.arch, c.vectorBytes);
                         });

// NVFP4's conversions are single instructions where the architecture has them: e2m1 on the sm_100,
// sm_110 and sm_120 families compiled for the family (an "a" or "f" target), e4m3 from sm_89 on.
// Elsewhere quant_nvfp4.cuh converts with integers, as the host tests check bit for bit. Each arch
// also compiles to a cubin, so ptxas accepts the instructions where they are used.
TEST(DeviceFiles, Nvfp4ConvertsWithTheInstructionsTheArchitectureHas) {
  struct Expected {
    const char* arch;
    bool e2m1;
    bool e4m3;
  };
  const Expected cases[] = {
      {"sm_80", false, false}, {"sm_89", false, true},  {"sm_90", false, true},
      {"sm_90a", false, true}, {"sm_100", false, true}, {"sm_100a", true, true},
      {"sm_100f", true, true}, {"sm_103a", true, true}, {"sm_110f", true, true},
      {"sm_120", false, true}, {"sm_120a", true, true}, {"sm_120f", true, true}};
  for (const Expected& expected : cases) {
    const DeviceCase c{"quant_nvfp4",
                       {"fp8_e4m3.cuh", "quant_nvfp4.cuh"},
                       DType::F32,
                       ReduceOp::Sum,
                       expected.arch,
                       16,
                       ""};
    JitOptions jit;
    jit.arch = c.arch;
    jit.useCache = false;
    auto ptx = compileCuda(sourceOf(c), "collc_test_quant_nvfp4", JitOutput::Ptx, jit);
    ASSERT_TRUE(bool(ptx)) << c.arch << ": " << toString(ptx.takeError());
    EXPECT_EQ(ptx->image.find("cvt.rn.satfinite.e2m1x2.f32") != std::string::npos, expected.e2m1)
        << c.arch;
    EXPECT_EQ(ptx->image.find("cvt.rn.satfinite.e4m3x2.f32") != std::string::npos, expected.e4m3)
        << c.arch;
    auto cubin = compileCuda(sourceOf(c), "collc_test_quant_nvfp4", JitOutput::Cubin, jit);
    ASSERT_TRUE(bool(cubin)) << c.arch << ": " << toString(cubin.takeError());
  }
}

TEST(DeviceFiles, EveryEmbeddedFileIsCompiledByADriver) {
  std::set<std::string_view> covered = {kTypesFile};
  for (DType dtype : kAllDTypes)
    covered.insert(elementFile(dtype));
  for (ReduceOp op : kAllReduceOps)
    covered.insert(combineFile(op));
  for (std::string_view file : kCommonDeviceFiles)
    covered.insert(file);
  for (const DeviceCase& c : allCases())
    covered.insert(c.files.begin(), c.files.end());
  ASSERT_FALSE(deviceFiles().empty());
  for (const auto& [file, text] : deviceFiles())
    EXPECT_TRUE(covered.count(file)) << file << " has no driver in DeviceFilesNvrtcTest";
}

// The kernel carries code, not the files' explanations, and needs no header.
TEST(DeviceFiles, EmbeddedWithoutCommentLinesOrIncludes) {
  for (const auto& [file, text] : deviceFiles()) {
    std::istringstream lines{std::string(text)};
    for (std::string line; std::getline(lines, line);) {
      const size_t first = line.find_first_not_of(" \t");
      EXPECT_FALSE(first != std::string::npos && line.compare(first, 2, "//") == 0)
          << file << ": " << line;
      EXPECT_EQ(line.find("#include"), std::string::npos) << file << ": " << line;
    }
    EXPECT_EQ(deviceFile(file),
              "\n// compiler/device/" + std::string(file) + "\n" + std::string(text));
  }
}

} // namespace
} // namespace collc
