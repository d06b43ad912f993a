// libFuzzer target for the front end and the compiler: the input bytes are spec text. It goes
// through the parser and semantic analysis, and when those accept it, through the verifier and the
// whole compile to CUDA source (no NVRTC in this build). A wrong spec must end in diagnostics,
// never in a crash, a hang, a sanitizer report or an InternalError: collc::InternalError is a bug
// in collc, so it is deliberately not caught here and aborts, which libFuzzer reports as a crash.
//
// Built only with -DCOLLC_FUZZ=ON (clang): see tests/fuzz/CMakeLists.txt and scripts/test.
#include "compiler/Compile.h"
#include "compiler/Sema.h"
#include "compiler/Verifier.h"
#include "dsl/Diagnostics.h"
#include "dsl/Parser.h"

#include <cstddef>
#include <cstdint>
#include <llvm/Support/Error.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <string>

namespace {

constexpr const char* kBufferName = "fuzz.coll";

/// Parse and analyze; true when the spec got through both (the verifier comes next).
bool parsesAndChecks(llvm::StringRef text) {
  llvm::SourceMgr sources;
  llvm::raw_null_ostream sink; // diagnostics are still formatted (with source line and caret)
  collc::Diagnostics diags(sources, sink);
  auto spec = collc::parseSpecText(diags, text, kBufferName);
  if (!spec)
    return false;
  return collc::analyze(*spec, diags) != nullptr;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char*>(data), size);
  if (!parsesAndChecks(text))
    return 0;
  // compileCollective parses and analyzes again, then runs collc::verify for every declared rank
  // count, and only then lowers and generates CUDA. The verifier's symbolic run is by far the most
  // expensive part (hundreds of ms per spec under the sanitizers), so it is run once, here, rather
  // than once above and again inside compileCollective.
  collc::SpecSource source{kBufferName, text.str()};
  collc::CompileOptions options; // defaults: f32, sum, 2 ranks, the spec's sync and launch
  options.formatSource = false;
  // A twenty-fifth of the default proof budget: the refusal past it is what the fuzzer checks for
  // large inputs, and it is what bounds an input's time, counted in steps rather than seconds, so
  // it holds on a busy machine too. The slowest seeds take a few seconds each in the fuzz build;
  // libFuzzer's -timeout is only a backstop, minutes above that.
  options.verifyWorkLimit = collc::kDefaultVerifyWorkLimit / 25;
  std::ostream sink(nullptr);
  auto compiled = collc::compileCollective(source, options, sink);
  if (!compiled) // a user error (the proof failed, or the spec cannot be built for 2 ranks): fine
    consumeError(compiled.takeError());
  return 0;
}
