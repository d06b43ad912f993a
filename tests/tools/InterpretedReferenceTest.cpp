// InterpretedReference (tools/harness/): the reference of a spec with aux buffers, the spec
// interpreted in float64 on the call's data, and the comparison that holds a kernel's output to it.
#include "tools/harness/InterpretedReference.h"

#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/ir/IR.h"

#include <cmath>
#include <fstream>
#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>
#include <sstream>

namespace collc {
namespace {

/// tests/specs/oneshot_with_residual.coll: out = allreduce(in) + residual.
std::shared_ptr<const ir::Program> residualSpec(int nranks) {
  std::ifstream file(std::string(COLLC_ACCEPTED_SPECS_DIR) + "/oneshot_with_residual.coll");
  std::stringstream text;
  text << file.rdbuf();
  CompileOptions options;
  options.nranks = nranks;
  std::string diagnostics;
  DiagnosticText sink(diagnostics);
  auto programs = lowerVariantPrograms({"oneshot_with_residual.coll", text.str()}, options, sink);
  if (!programs) {
    ADD_FAILURE() << toString(programs.takeError()) << diagnostics;
    return nullptr;
  }
  return programs->spec;
}

TEST(InterpretedReference, AddsTheResidualToTheSum) {
  const int nranks = 3;
  const uint64_t n = 5;
  auto spec = residualSpec(nranks);
  ASSERT_TRUE(spec);
  CompiledCollective compiled;
  compiled.nranks = nranks;
  compiled.dtype = DType::F32;
  std::vector<std::vector<float>> in(nranks), residual(nranks);
  std::vector<const void*> inputs;
  std::vector<std::vector<const void*>> aux(nranks);
  for (int r = 0; r < nranks; ++r) {
    for (uint64_t i = 0; i < n; ++i) {
      in[size_t(r)].push_back(float(r + 1) * 0.5f + float(i));
      residual[size_t(r)].push_back(-float(i) * 2.0f + float(r));
    }
    inputs.push_back(in[size_t(r)].data());
    aux[size_t(r)].push_back(residual[size_t(r)].data());
  }
  const InterpretedReference reference = interpretReference(*spec, compiled, n, inputs, aux);
  for (int r = 0; r < nranks; ++r)
    for (uint64_t i = 0; i < n; ++i) {
      const double sum = in[0][i] + in[1][i] + in[2][i] + residual[size_t(r)][i];
      EXPECT_EQ(reference.value.output[size_t(r)][i], sum) << "rank " << r << " element " << i;
      EXPECT_EQ(reference.scale.output[size_t(r)][i], std::fabs(in[0][i]) + std::fabs(in[1][i]) +
                                                          std::fabs(in[2][i]) +
                                                          std::fabs(residual[size_t(r)][i]));
    }
}

TEST(InterpretedReference, ComparisonFindsAWrongElementAndSkipsUnwrittenOnes) {
  const std::vector<double> want = {1.0, 2.0, std::nan(""), 4.0};
  const std::vector<double> scale = {1.0, 2.0, 0.0, 4.0};
  std::vector<float> got = {1.0f, 2.0f, 123.0f, 4.0f};
  EXPECT_TRUE(compareInterpreted(DType::F32, 3, want, scale, got.data(), "out").ok());
  got[3] = 4.5f;
  const Comparison wrong = compareInterpreted(DType::F32, 3, want, scale, got.data(), "out");
  EXPECT_EQ(wrong.mismatches, 1u);
  EXPECT_NE(wrong.firstMismatches.find("out[3]: got 4.5"), std::string::npos)
      << wrong.firstMismatches;
}

} // namespace
} // namespace collc
