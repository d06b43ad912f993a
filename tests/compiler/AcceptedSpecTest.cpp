// Correct specs that earlier versions of collc refused or miscompiled (tests/specs): each
// compiles with every strategy its `# strategies:` line names, for several rank counts and element
// types, which includes the check that the lowered program computes what the spec does; and the
// kernels compile with NVRTC (names of the spec never clash with the kernel's own).
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "runtime/Jit.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

namespace collc {
namespace {

std::vector<std::string> acceptedSpecs() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(COLLC_ACCEPTED_SPECS_DIR))
    if (entry.path().extension() == ".coll")
      files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<SyncKind> strategiesOf(const std::string& text) {
  std::vector<SyncKind> strategies;
  const auto marker = text.find("# strategies:");
  if (marker == std::string::npos)
    return strategies;
  std::istringstream words(text.substr(marker + 13, text.find('\n', marker) - marker - 13));
  std::string word;
  while (words >> word)
    if (auto sync = parseSyncKind(word))
      strategies.push_back(*sync);
  return strategies;
}

class AcceptedSpec : public testing::TestWithParam<std::string> {};

TEST_P(AcceptedSpec, CompilesWithEveryStrategyItNames) {
  const std::string path = std::string(COLLC_ACCEPTED_SPECS_DIR) + "/" + GetParam();
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  const SpecSource spec{GetParam(), text.str()};
  const std::vector<SyncKind> strategies = strategiesOf(spec.text);
  ASSERT_FALSE(strategies.empty()) << GetParam() << " names no strategy";

  std::string diagnostics;
  DiagnosticText out(diagnostics);
  CheckReport report;
  Error checked = checkSpec(spec, out, &report);
  ASSERT_FALSE(bool(checked)) << out.str();
  EXPECT_GT(report.runs, 0);
  for (SyncKind sync : strategies)
    for (int nranks : {report.minRanks, report.minRanks + 1, report.maxRanks})
      for (DType dtype : {DType::F32, DType::BF16}) {
        CompileOptions options;
        options.sync = sync;
        options.nranks = nranks;
        options.dtype = dtype;
        options.formatSource = false;
        diagnostics.clear();
        auto compiled = compileCollective(spec, options, out);
        ASSERT_TRUE(bool(compiled))
            << name(sync) << " " << nranks << " ranks " << name(dtype) << ":\n"
            << toString(compiled.takeError()) << "\n"
            << out.str();
        if (nranks != report.minRanks + 1 || dtype != DType::BF16)
          continue;
        JitOptions jit;
        jit.useCache = false;
        auto cubin = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
        ASSERT_TRUE(bool(cubin)) << name(sync) << ": " << toString(cubin.takeError());
        EXPECT_FALSE(cubin->image.empty());
      }
}

INSTANTIATE_TEST_SUITE_P(Specs, AcceptedSpec, testing::ValuesIn(acceptedSpecs()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.find('.'));
                         });

} // namespace
} // namespace collc
