// InterpretedReference (tools/harness/): the reference of every spec, the spec interpreted in
// float64 on the call's data with each element's bound, and the comparison that holds a kernel's
// results to it. Results a wrong kernel would give, computed here on the host, must be reported.
#include "tools/harness/InterpretedReference.h"

#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/interpret/Float8.h"
#include "compiler/ir/IR.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

namespace collc {
namespace {

std::shared_ptr<const ir::Program> lowerSpec(const std::string& path, CompileOptions options) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  std::string diagnostics;
  DiagnosticText sink(diagnostics);
  auto programs = lowerVariantPrograms({path, text.str()}, options, sink);
  if (!programs) {
    ADD_FAILURE() << toString(programs.takeError()) << diagnostics;
    return nullptr;
  }
  return programs->spec;
}

std::shared_ptr<const ir::Program> stdlibSpec(const std::string& name, CompileOptions options) {
  return lowerSpec(std::string(COLLC_STDLIB_DIR) + "/" + name + ".coll", options);
}

/// One call's host data: every rank's input and aux buffers (f32), as the harness holds them.
struct HostCall {
  CompiledCollective compiled;
  std::vector<std::vector<float>> in;
  std::vector<std::vector<std::vector<float>>> aux; // [rank][k]; empty for a written buffer
  std::vector<const void*> inputs;
  std::vector<std::vector<const void*>> auxPointers;

  HostCall(int nranks, uint64_t inElems, std::vector<uint64_t> auxElems = {},
           std::vector<bool> written = {}) {
    compiled.nranks = nranks;
    compiled.dtype = DType::F32;
    std::mt19937_64 rng(7);
    in.resize(size_t(nranks));
    aux.resize(size_t(nranks));
    auxPointers.resize(size_t(nranks));
    for (int r = 0; r < nranks; ++r) {
      in[size_t(r)].resize(inElems);
      fillRandom(DType::F32, in[size_t(r)].data(), inElems, rng);
      inputs.push_back(in[size_t(r)].data());
      for (size_t k = 0; k < auxElems.size(); ++k) {
        aux[size_t(r)].emplace_back(written[k] ? 0 : auxElems[k]);
        fillRandom(DType::F32, aux[size_t(r)][k].data(), aux[size_t(r)][k].size(), rng);
        auxPointers[size_t(r)].push_back(written[k] ? nullptr : aux[size_t(r)][k].data());
      }
    }
  }
  InterpretedReference reference(const ir::Program& spec, uint64_t count) const {
    return interpretReference(spec, compiled, count, inputs, auxPointers);
  }
};

TEST(InterpretedReference, AddsTheResidualToTheSumWithinTheBoundOfFourTerms) {
  const int nranks = 3;
  const uint64_t n = 5;
  CompileOptions options;
  options.nranks = nranks;
  auto spec =
      lowerSpec(std::string(COLLC_ACCEPTED_SPECS_DIR) + "/oneshot_with_residual.coll", options);
  ASSERT_TRUE(spec);
  HostCall call(nranks, n, {n}, {false});
  const InterpretedReference reference = call.reference(*spec, n);
  for (int r = 0; r < nranks; ++r)
    for (uint64_t i = 0; i < n; ++i) {
      const double residual = call.aux[size_t(r)][0][i];
      const double sum = double(call.in[0][i]) + call.in[1][i] + call.in[2][i] + residual;
      const double magnitude = std::fabs(double(call.in[0][i])) + std::fabs(double(call.in[1][i])) +
                               std::fabs(double(call.in[2][i])) + std::fabs(residual);
      EXPECT_EQ(reference.value.output[size_t(r)][i], sum) << "rank " << r << " element " << i;
      EXPECT_DOUBLE_EQ(reference.bound.output[size_t(r)][i],
                       sumTolerance(DType::F32, 4) * magnitude + tinyTolerance(DType::F32));
    }
}

TEST(InterpretedReference, ComparisonFindsAWrongElementAndSkipsUnwrittenOnes) {
  const std::vector<double> want = {1.0, 2.0, std::nan(""), 4.0, std::nan("")};
  const std::vector<double> bound = {0.0, 0.5, std::nan(""), 0.25, 0.0};
  std::vector<float> got = {1.0f, 2.4f, 123.0f, 4.25f, std::nanf("")};
  EXPECT_TRUE(compareInterpreted(DType::F32, want, bound, got.data(), "out").ok());
  got[0] = std::nextafter(1.0f, 2.0f); // a copy off by one ulp
  got[3] = 4.5f;
  got[4] = 0.0f; // NaN expected
  const Comparison wrong = compareInterpreted(DType::F32, want, bound, got.data(), "out");
  EXPECT_EQ(wrong.mismatches, 3u);
  EXPECT_NE(wrong.firstMismatches.find("out[0]: got 1.00000012"), std::string::npos)
      << wrong.firstMismatches;
  EXPECT_NE(wrong.firstMismatches.find("(must match exactly)"), std::string::npos);
  EXPECT_NE(wrong.firstMismatches.find("out[3]: got 4.5"), std::string::npos);
  EXPECT_NE(wrong.firstMismatches.find("> bound 0.25"), std::string::npos);
}

/// A kernel's AllReduce sum: in float, in rank order, rounded to f32.
std::vector<float> floatSums(const HostCall& call, uint64_t n) {
  std::vector<float> out(n, 0.0f);
  for (const std::vector<float>& in : call.in)
    for (uint64_t i = 0; i < n; ++i)
      out[i] += in[i];
  return out;
}

TEST(InterpretedReference, HoldsAnAllReduceToItsSumsAndReportsAWrongOne) {
  const int nranks = 4;
  const uint64_t n = 1000;
  CompileOptions options;
  options.nranks = nranks;
  auto spec = stdlibSpec("allreduce_oneshot", options);
  ASSERT_TRUE(spec);
  HostCall call(nranks, n);
  const InterpretedReference reference = call.reference(*spec, n);
  std::vector<float> got = floatSums(call, n);
  for (int r = 0; r < nranks; ++r)
    EXPECT_TRUE(compareInterpreted(DType::F32, reference.value.output[size_t(r)],
                                   reference.bound.output[size_t(r)], got.data(), "out")
                    .ok());
  // A kernel that dropped rank 2's contribution to one element, and one that read a neighbour.
  got[17] -= call.in[2][17];
  got[400] = got[401];
  const Comparison wrong = compareInterpreted(DType::F32, reference.value.output[1],
                                              reference.bound.output[1], got.data(), "rank 1 out");
  EXPECT_EQ(wrong.mismatches, 2u) << wrong.firstMismatches;
  EXPECT_NE(wrong.firstMismatches.find("rank 1 out[17]: got"), std::string::npos)
      << wrong.firstMismatches;
}

TEST(InterpretedReference, HoldsAnAllGatherToExactCopies) {
  const int nranks = 2;
  const uint64_t n = 64;
  CompileOptions options;
  options.nranks = nranks;
  auto spec = stdlibSpec("allgather_direct", options);
  ASSERT_TRUE(spec);
  HostCall call(nranks, n);
  const InterpretedReference reference = call.reference(*spec, n);
  std::vector<float> got;
  for (const std::vector<float>& in : call.in)
    got.insert(got.end(), in.begin(), in.end());
  ASSERT_EQ(reference.value.output[0].size(), got.size());
  EXPECT_TRUE(compareInterpreted(DType::F32, reference.value.output[0], reference.bound.output[0],
                                 got.data(), "out")
                  .ok());
  got[n + 3] = std::nextafter(got[n + 3], 100.0f);
  const Comparison wrong = compareInterpreted(DType::F32, reference.value.output[0],
                                              reference.bound.output[0], got.data(), "out");
  EXPECT_EQ(wrong.mismatches, 1u);
  EXPECT_NE(wrong.firstMismatches.find("must match exactly"), std::string::npos);
}

TEST(InterpretedReference, LeavesAReduceUnspecifiedOffTheRootAndPropagatesNaN) {
  const int nranks = 3;
  const uint64_t n = 8;
  CompileOptions options;
  options.nranks = nranks;
  options.op = ReduceOp::Max;
  options.root = 1;
  auto spec = stdlibSpec("reduce_direct", options);
  ASSERT_TRUE(spec);
  HostCall call(nranks, n);
  call.compiled.op = ReduceOp::Max;
  call.compiled.root = 1;
  call.in[2][5] = std::nanf("");
  const InterpretedReference reference = call.reference(*spec, n);
  std::vector<float> got(n);
  for (uint64_t i = 0; i < n; ++i)
    got[i] = std::max({call.in[0][i], call.in[1][i], call.in[2][i]});
  got[5] = std::nanf("");
  EXPECT_TRUE(compareInterpreted(DType::F32, reference.value.output[1], reference.bound.output[1],
                                 got.data(), "root")
                  .ok());
  for (uint64_t i = 0; i < n; ++i)
    EXPECT_TRUE(std::isnan(reference.bound.output[0][i])) << "off the root, element " << i;
  std::vector<float> garbage(n, 1e30f);
  EXPECT_TRUE(compareInterpreted(DType::F32, reference.value.output[0], reference.bound.output[0],
                                 garbage.data(), "rank 0")
                  .ok());
  got[5] = call.in[0][5]; // a max that dropped the NaN (fmaxf's)
  got[2] = std::nextafter(got[2], -100.0f);
  EXPECT_EQ(compareInterpreted(DType::F32, reference.value.output[1], reference.bound.output[1],
                               got.data(), "root")
                .mismatches,
            2u);
}

/// The fused kernel's arithmetic, as compiler/device's rmsnorm does it: the sum in float, rounded
/// once to residual_out, then the row normalised in float from the rounded values.
void kernelRmsNorm(const HostCall& call, int rank, uint64_t n, int64_t h, float eps,
                   std::vector<float>& residualOut, std::vector<float>& out) {
  residualOut = floatSums(call, n);
  for (uint64_t i = 0; i < n; ++i)
    residualOut[i] += call.aux[size_t(rank)][0][i];
  out.assign(n, 0.0f);
  for (uint64_t row = 0; row < n / uint64_t(h); ++row) {
    float squares = 0;
    for (int64_t k = 0; k < h; ++k)
      squares += residualOut[row * h + k] * residualOut[row * h + k];
    const float scale = 1.0f / std::sqrt(squares / float(h) + eps);
    for (int64_t k = 0; k < h; ++k)
      out[row * h + k] = residualOut[row * h + k] * scale * call.aux[size_t(rank)][2][k];
  }
}

TEST(InterpretedReference, HoldsTheFusedRmsNormToItsBoundsAndReportsAWrongRow) {
  const int nranks = 4;
  const int64_t h = 256;
  const uint64_t n = 4 * h;
  CompileOptions options;
  options.nranks = nranks;
  options.rowLength = h;
  auto spec = stdlibSpec("allreduce_rmsnorm", options);
  ASSERT_TRUE(spec);
  // aux: residual (read), residual_out (written), weight (read, one row).
  HostCall call(nranks, n, {n, n, uint64_t(h)}, {false, true, false});
  call.compiled.rowLength = h;
  call.compiled.eps = 1e-6f;
  const InterpretedReference reference = call.reference(*spec, n);
  const int rank = 2;
  std::vector<float> residualOut, out;
  kernelRmsNorm(call, rank, n, h, call.compiled.eps, residualOut, out);
  const std::vector<double>& wantOut = reference.value.output[rank];
  const std::vector<double>& boundOut = reference.bound.output[rank];
  EXPECT_TRUE(compareInterpreted(DType::F32, wantOut, boundOut, out.data(), "out").ok());
  EXPECT_TRUE(compareInterpreted(DType::F32, reference.value.aux[rank][1],
                                 reference.bound.aux[rank][1], residualOut.data(), "residual_out")
                  .ok());
  // A kernel that normalised row 1 with row 0's scale: every element of the row is off.
  std::vector<float> wrong = out;
  for (int64_t k = 0; k < h; ++k)
    wrong[uint64_t(h + k)] *= 1.01f;
  EXPECT_EQ(compareInterpreted(DType::F32, wantOut, boundOut, wrong.data(), "out").mismatches,
            uint64_t(h));
}

// An FP8 output is held bit for bit where no rounding boundary is near: a code one off, or every
// code of a wrong scale, is reported; the reference's own codes pass.
TEST(InterpretedReference, HoldsAnFp8OutputToItsCodesAndReportsAWrongOne) {
  const int nranks = 2;
  const int64_t h = 48; // not a multiple of 16
  const uint64_t n = 3 * h;
  CompileOptions options;
  options.nranks = nranks;
  options.rowLength = h;
  auto spec = stdlibSpec("allreduce_rmsnorm_fp8", options);
  ASSERT_TRUE(spec);
  // aux: residual (read), residual_out (written), weight (read, one row), scale (read, f32[1]).
  HostCall call(nranks, n, {n, n, uint64_t(h), 1}, {false, true, false, false});
  call.compiled.rowLength = h;
  call.compiled.eps = 1e-6f;
  call.compiled.outputFixedType = ElementType::F8E4M3;
  for (auto& rank : call.aux)
    rank[3][0] = 0.05f; // normalized values up to a few units: codes across E4M3's range
  const InterpretedReference reference = call.reference(*spec, n);
  const int rank = 1;
  const std::vector<double>& want = reference.value.output[rank];
  const std::vector<double>& bound = reference.bound.output[rank];
  std::vector<uint8_t> codes;
  for (double value : want)
    codes.push_back(toE4M3(value));
  EXPECT_TRUE(compareInterpreted(ElementType::F8E4M3, want, bound, codes.data(), "out").ok());
  size_t exact = 0; // an element held bit for bit, neither saturated nor zero
  while (exact < n &&
         (bound[exact] != 0 || (codes[exact] & 0x7f) >= 0x7e || (codes[exact] & 0x7f) == 0))
    ++exact;
  ASSERT_LT(exact, n);
  std::vector<uint8_t> wrong = codes;
  ++wrong[exact];
  const Comparison one = compareInterpreted(ElementType::F8E4M3, want, bound, wrong.data(), "out");
  EXPECT_EQ(one.mismatches, 1u);
  EXPECT_NE(one.firstMismatches.find("out[" + std::to_string(exact) + "]: got"), std::string::npos)
      << one.firstMismatches;
  // The kernel of a scale twice the caller's: codes of half the values.
  for (size_t i = 0; i < n; ++i)
    wrong[i] = toE4M3(want[i] / 2);
  EXPECT_GT(compareInterpreted(ElementType::F8E4M3, want, bound, wrong.data(), "out").mismatches,
            n / 2);
}

// How long the reference of a large call takes on the host: printed, not asserted (the machine
// is shared); `collc run` and the GPU suites pay it once per checked call.
TEST(InterpretedReference, TimesTheReferenceOfAMillionElementAllReduce) {
  const int nranks = 8;
  const uint64_t n = uint64_t(1) << 20;
  CompileOptions options;
  options.nranks = nranks;
  auto spec = stdlibSpec("allreduce_oneshot", options);
  ASSERT_TRUE(spec);
  HostCall call(nranks, n);
  auto start = std::chrono::steady_clock::now();
  InterpretedReference reference = call.reference(*spec, n);
  auto interpreted = std::chrono::steady_clock::now();
  // A run checks several calls: the second reference is what each later check costs.
  const double firstMs = std::chrono::duration<double, std::milli>(interpreted - start).count();
  start = std::chrono::steady_clock::now();
  reference = call.reference(*spec, n);
  interpreted = std::chrono::steady_clock::now();
  const std::vector<float> got = floatSums(call, n);
  uint64_t mismatches = 0;
  for (int r = 0; r < nranks; ++r)
    mismatches += compareInterpreted(DType::F32, reference.value.output[size_t(r)],
                                     reference.bound.output[size_t(r)], got.data(), "out")
                      .mismatches;
  const auto compared = std::chrono::steady_clock::now();
  EXPECT_EQ(mismatches, 0u);
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("reference of %d ranks x %llu elements: interpreted in %.0f ms (the first time %.0f "
              "ms), compared in %.0f ms\n",
              nranks, (unsigned long long)n, ms(start, interpreted), firstMs,
              ms(interpreted, compared));
}

} // namespace
} // namespace collc
