// What the quantization tests share: a spec that reduces rows and ends in a statement of the test's
// choosing, the proof of a spec's text as its diagnostics, a stdlib spec lowered for rows of h, and
// rmsnorm of one row in float64.
#ifndef COLLC_TESTS_COMPILER_QUANTIZESPECS_H
#define COLLC_TESTS_COMPILER_QUANTIZESPECS_H

#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/Sema.h"
#include "compiler/Verifier.h"
#include "dsl/Parser.h"

#include <cmath>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

namespace collc::tests {

using Values = std::vector<double>;

/// An allreduce of rows of `hidden` over 2..4 ranks: `in` pushed to every peer's slot, then a
/// step `reduce` that waits for it and runs `reduceStep`. `buffers` follow `in: T[n]`;
/// `extraScratch` (with its leading newline) follows the slots' scratch line.
inline std::string quantSpec(const std::string& buffers, const std::string& reduceStep,
                             const std::string& extraScratch = "") {
  return "collective q kind allreduce\n"
         "  ranks 2..4\n"
         "  rows hidden\n"
         "  buffers in: T[n], " +
         buffers +
         "\n"
         "  scratch slot[nranks]: T[n]" +
         extraScratch +
         "\n"
         "{\n"
         "  step push: for p in peers { put in -> p.slot[rank] }\n"
         "  step reduce {\n"
         "    wait push\n" +
         reduceStep + "  }\n}\n";
}

/// Parses, analyzes and proves `text` (as q.coll); the diagnostics, empty when it is proved.
inline std::string check(const std::string& text) {
  std::string diagnostics;
  llvm::SourceMgr sources;
  llvm::raw_string_ostream out(diagnostics);
  Diagnostics diags(sources, out);
  auto ast = parseSpecText(diags, text, "q.coll");
  if (ast)
    if (auto program = analyze(*ast, diags))
      verify(*program, diags);
  out.flush();
  return diagnostics;
}

/// A spec the checks refuse: `what` it shows, its buffers and statements for quantSpec, and a
/// piece of the diagnostics expected.
struct Refusal {
  const char* what;
  std::string buffers, step, message;
};

/// The stdlib spec `name`'s program for 2 ranks and rows of h; nullptr (with a failure) if it
/// does not lower.
inline std::shared_ptr<const ir::Program> stdlibSpec(const char* name, int64_t h) {
  auto source = loadSpec(name);
  EXPECT_TRUE(bool(source)) << toString(source.takeError());
  if (!source)
    return nullptr;
  CompileOptions options;
  options.rowLength = h;
  std::string diagnostics;
  DiagnosticText sink(diagnostics);
  auto programs = lowerVariantPrograms(*source, options, sink);
  EXPECT_TRUE(bool(programs)) << toString(programs.takeError()) << "\n" << diagnostics;
  return programs ? programs->spec : nullptr;
}

/// rmsnorm of one row in float64 (weight 1, eps 1e-6), as the interpreter computes it.
inline Values rmsnorm(const Values& row) {
  double squares = 0;
  for (double v : row)
    squares += v * v;
  const double factor = 1 / std::sqrt(squares / double(row.size()) + 1e-6);
  Values norm;
  for (double v : row)
    norm.push_back(v * factor);
  return norm;
}

} // namespace collc::tests

#endif // COLLC_TESTS_COMPILER_QUANTIZESPECS_H
