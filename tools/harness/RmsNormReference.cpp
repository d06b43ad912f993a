#include "tools/harness/RmsNormReference.h"

#include <cmath>
#include <limits>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

namespace collc {

namespace {

/// Relative error of the kernel's last steps on one element of out: the float sum of squares,
/// rsqrtf, two float products, and the final rounding to the element type (twice the type's unit
/// roundoff covers the float steps as well).
double normRounding(DType type) {
  switch (type) {
  case DType::F32:
    return 1e-5; // sum of squares over a row in float, rsqrtf (2 ulp), products
  case DType::F16:
    return 0x1p-10;
  case DType::BF16:
    return 0x1p-7;
  }
  return 0;
}

bool matches(double value, double expected, double tolerance) {
  if (std::isnan(expected))
    return std::isnan(value);
  if (std::isinf(expected))
    return value == expected;
  return std::fabs(value - expected) <= tolerance; // false for NaN and infinity
}

} // namespace

AddRmsNormReference referenceAddRmsNorm(const AddRmsNormCall& call) {
  AddRmsNormReference ref;
  const uint64_t n = call.count;
  const uint64_t row = uint64_t(call.rowLength);
  ref.sum.assign(n, 0.0);
  ref.sumTolerance.assign(n, 0.0);
  ref.normalized.assign(n, 0.0);
  ref.normalizedTolerance.assign(n, 0.0);
  if (row == 0)
    return ref;
  // residual_out: an AllReduce sum over the ranks plus one more addend, the residual.
  const double relative = collc::sumTolerance(call.type, int(call.inputs.size()) + 1);
  const double tiny = tinyTolerance(call.type);
  for (uint64_t i = 0; i < n; ++i) {
    double y = loadElement(call.type, call.residual, i);
    double absSum = std::fabs(y);
    for (const void* in : call.inputs) {
      const double x = loadElement(call.type, in, i);
      y += x;
      absSum += std::fabs(x);
    }
    ref.sum[i] = y;
    ref.sumTolerance[i] = relative * absSum + tiny;
  }
  // out: the kernel normalises its own y, off from the exact one by up to e_i = sumTolerance[i].
  // Its mean square is then off by up to mean(2|y|e + e^2), which moves the scale
  // 1/sqrt(ms) by up to half that relative to ms (first order, with the error taken off ms so
  // that the bound stays on the safe side); both errors then scale by |weight|.
  for (uint64_t begin = 0; begin + row <= n; begin += row) {
    double sumSquares = 0, sumSquaresError = 0;
    for (uint64_t i = begin; i < begin + row; ++i) {
      const double y = ref.sum[i], e = ref.sumTolerance[i];
      sumSquares += y * y;
      sumSquaresError += 2 * std::fabs(y) * e + e * e;
    }
    const double ms = sumSquares / double(row) + call.eps;
    const double msError = sumSquaresError / double(row);
    const double scale = 1 / std::sqrt(ms);
    const double scaleRelative =
        ms > msError ? 0.5 * msError / (ms - msError) : std::numeric_limits<double>::infinity();
    for (uint64_t i = begin; i < begin + row; ++i) {
      const double w = loadElement(call.type, call.weight, i - begin);
      const double y = ref.sum[i], e = ref.sumTolerance[i];
      const double out = y * scale * w;
      ref.normalized[i] = out;
      ref.normalizedTolerance[i] = std::fabs(w) * scale * (e + (std::fabs(y) + e) * scaleRelative) +
                                   normRounding(call.type) * std::fabs(out) + tiny;
    }
  }
  return ref;
}

Comparison compareAddRmsNorm(const AddRmsNormCall& call, const void* residualOut, const void* out,
                             std::string_view label, unsigned maxReported) {
  const AddRmsNormReference ref = referenceAddRmsNorm(call);
  Comparison comparison;
  llvm::raw_string_ostream os(comparison.firstMismatches);
  auto compare = [&](std::string_view what, const void* got, const std::vector<double>& expected,
                     const std::vector<double>& tolerance, uint64_t i) {
    const double value = loadElement(call.type, got, i);
    if (matches(value, expected[i], tolerance[i]))
      return;
    if (comparison.mismatches++ >= maxReported)
      return;
    os << label << " " << what << "[" << i << "]: got " << formatElement(call.type, got, i)
       << ", expected " << llvm::format("%.9g", expected[i])
       << llvm::format(" (|diff| %.3g > tol %.3g)", std::fabs(value - expected[i]), tolerance[i])
       << "; residual " << formatElement(call.type, call.residual, i) << ", inputs";
    for (size_t r = 0; r < call.inputs.size(); ++r)
      os << (r ? ", " : " ") << formatElement(call.type, call.inputs[r], i);
    os << "\n";
  };
  for (uint64_t i = 0; i < call.count; ++i)
    compare("residual_out", residualOut, ref.sum, ref.sumTolerance, i);
  for (uint64_t i = 0; i < call.count; ++i)
    compare("out", out, ref.normalized, ref.normalizedTolerance, i);
  os.flush();
  return comparison;
}

} // namespace collc
