// Runs LLVM's FileCheck, in process, over the CUDA that collc emits for each *.check file here.
// A check file's first line names the variant:
//   // VARIANT: spec=NAME_OR_FILE dtype=T op=O ranks=R [sync=S] [root=K] [hidden=H] [threads=N]
// (a spec ending in .coll is a file next to the check file; otherwise a stdlib name).
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/FileCheck/FileCheck.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <sstream>

namespace collc {
namespace {

std::vector<std::string> checkFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(COLLC_GOLDEN_DIR))
    if (entry.path().extension() == ".check")
      files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string readFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

/// FileCheck's verdict and its messages (which it prints through the SourceMgr).
bool fileCheck(const std::string& checkText, const std::string& input, const std::string& name,
               std::string& messages) {
  llvm::FileCheckRequest request;
  llvm::FileCheck checker(request);
  llvm::SourceMgr sources;
  sources.setDiagHandler(
      [](const llvm::SMDiagnostic& diag, void* context) {
        llvm::raw_string_ostream out(*static_cast<std::string*>(context));
        diag.print("FileCheck", out, /*ShowColors=*/false);
      },
      &messages);
  llvm::SmallString<4096> checkStorage, inputStorage;
  auto checkBuffer = llvm::MemoryBuffer::getMemBuffer(checkText, name);
  llvm::StringRef check = checker.CanonicalizeFile(*checkBuffer, checkStorage);
  sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(check, name), llvm::SMLoc());
  llvm::Regex prefixes = checker.buildCheckPrefixRegex();
  if (checker.readCheckFile(sources, check, prefixes))
    return false;
  auto inputBuffer = llvm::MemoryBuffer::getMemBuffer(input, "emitted.cu");
  llvm::StringRef canonicalInput = checker.CanonicalizeFile(*inputBuffer, inputStorage);
  sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(canonicalInput, "emitted.cu"),
                             llvm::SMLoc());
  return checker.checkInput(sources, canonicalInput);
}

class Golden : public testing::TestWithParam<std::string> {};

TEST_P(Golden, EmittedCudaMatches) {
  const std::string checkText = readFile(std::string(COLLC_GOLDEN_DIR) + "/" + GetParam());
  std::istringstream header(checkText.substr(0, checkText.find('\n')));
  std::string word;
  header >> word >> word;
  ASSERT_EQ(word, "VARIANT:") << GetParam() << " must start with '// VARIANT: ...'";
  std::map<std::string, std::string> variant;
  while (header >> word)
    variant[word.substr(0, word.find('='))] = word.substr(word.find('=') + 1);

  std::string specName = variant["spec"];
  if (specName.size() > 5 && specName.substr(specName.size() - 5) == ".coll")
    specName = std::string(COLLC_GOLDEN_DIR) + "/" + specName;
  auto spec = loadSpec(specName);
  ASSERT_TRUE(bool(spec)) << toString(spec.takeError());
  if (specName.find('/') != std::string::npos) // stable names in the emitted comments
    spec->bufferName = variant["spec"];
  CompileOptions options;
  options.experimentalLL128 = true; // goldens pin ll128's code too, though it is disabled
  options.dtype = *parseDType(variant["dtype"]);
  options.op = *parseReduceOp(variant["op"]);
  options.nranks = std::stoi(variant["ranks"]);
  if (variant.count("sync"))
    options.sync = *parseSyncKind(variant["sync"]);
  if (variant.count("root"))
    options.root = std::stoi(variant["root"]);
  if (variant.count("hidden"))
    options.rowLength = std::stoll(variant["hidden"]);
  if (variant.count("threads"))
    options.threads = std::stoi(variant["threads"]);
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError()) << "\n" << out.str();

  std::string messages;
  EXPECT_TRUE(fileCheck(checkText, compiled->cudaSource, GetParam(), messages)) << messages;
}

INSTANTIATE_TEST_SUITE_P(CheckFiles, Golden, testing::ValuesIn(checkFiles()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.size() - 6);
                         });

// FileCheck must be able to fail: a check that the output cannot satisfy is reported.
TEST(GoldenHarness, FailingCheckIsDetected) {
  std::string messages;
  EXPECT_FALSE(
      fileCheck("// CHECK: this line is not there\n", "int main() {}\n", "neg.check", messages));
  EXPECT_NE(messages.find("expected string not found"), std::string::npos) << messages;
}

} // namespace
} // namespace collc
