// One bad spec per file in tests/errors; its last line says what collc must report:
//   # expect: LINE:COL: message
// The test checks the diagnostic's location and text, that the source line and a caret follow,
// and that the error is a user error (Error::isSpecError), not an internal one.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

namespace collc {
namespace {

std::vector<std::string> errorSpecs() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(COLLC_ERROR_SPECS_DIR))
    if (entry.path().extension() == ".coll")
      files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

class ErrorSpec : public testing::TestWithParam<std::string> {};

TEST_P(ErrorSpec, ReportsExpectedDiagnostic) {
  const std::string path = std::string(COLLC_ERROR_SPECS_DIR) + "/" + GetParam();
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  std::string contents = text.str();
  auto marker = contents.rfind("# expect: ");
  ASSERT_NE(marker, std::string::npos) << GetParam() << " has no '# expect:' line";
  std::string expected = contents.substr(marker + 10);
  expected = expected.substr(0, expected.find('\n'));
  const std::string location = expected.substr(0, expected.find(": "));
  const std::string message = expected.substr(expected.find(": ") + 2);

  std::string diagnostics;
  DiagnosticText out(diagnostics);
  Error error = checkSpec(SpecSource{GetParam(), contents}, out);
  ASSERT_TRUE(bool(error)) << GetParam() << " was accepted";
  EXPECT_TRUE(error.isSpecError()) << error.message();

  const std::string head = GetParam() + ":" + location + ": error: " + message;
  EXPECT_EQ(out.str().rfind(head, 0), 0u)
      << "expected the first diagnostic to start with\n  " << head << "\ngot\n"
      << out.str();
  // file:line:col: error: ..., then the source line, then the caret line.
  std::istringstream lines(out.str());
  std::string first, source, caret;
  std::getline(lines, first);
  std::getline(lines, source);
  std::getline(lines, caret);
  EXPECT_NE(caret.find('^'), std::string::npos) << out.str();
  int column = std::stoi(location.substr(location.find(':') + 1));
  EXPECT_EQ(caret.find('^'), size_t(column - 1)) << "caret not under column " << column;
}

INSTANTIATE_TEST_SUITE_P(ErrorSpecs, ErrorSpec, testing::ValuesIn(errorSpecs()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.size() - 5);
                         });

TEST(ErrorSpecs, ThereAreEnoughOfThem) {
  EXPECT_GE(errorSpecs().size(), 15u);
}

} // namespace
} // namespace collc
