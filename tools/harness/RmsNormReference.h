// The float64 reference of the fused AllReduce + residual add + RMSNorm (CompiledCollective's
// AddRmsNormEpilogue) and a tolerant comparison of one rank's two outputs with it:
//   y            = sum over ranks of in + residual            (float64)
//   residual_out = y, rounded to the element type
//   out          = y / sqrt(mean(y^2 over the row) + eps) * weight
// The kernel adds in float, rounds residual_out once, and normalises the rounded row in float;
// the tolerances bound what that may cost. Meant for finite data (the run harness refuses special
// values for this epilogue). No CUDA here.
#ifndef COLLC_TOOLS_HARNESS_RMSNORMREFERENCE_H
#define COLLC_TOOLS_HARNESS_RMSNORMREFERENCE_H

#include "runtime/Span.h"
#include "tools/harness/HostData.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace collc {

/// One rank's call: every rank's input, and this rank's residual and weight (one row).
struct AddRmsNormCall {
  DType type = DType::F32;
  uint64_t count = 0;    // elements per rank: whole rows
  int64_t rowLength = 0; // the hidden size
  double eps = 1e-6;
  Span<const void* const> inputs; // inputs[q]: rank q's input, count elements
  const void* residual = nullptr; // count elements
  const void* weight = nullptr;   // rowLength elements
};

/// Expected values and per-element tolerances of both outputs.
struct AddRmsNormReference {
  std::vector<double> sum;          // y
  std::vector<double> sumTolerance; // residual_out may differ from y by this much
  std::vector<double> normalized;   // out
  std::vector<double> normalizedTolerance;
};

/// The reference of `call`; call.count must be a multiple of call.rowLength (> 0).
AddRmsNormReference referenceAddRmsNorm(const AddRmsNormCall& call);

/// Compares one rank's residual_out and out (count elements each) with the reference; mismatch
/// lines read "LABEL residual_out[17]: got ..., expected ... (|diff| ... > tol ...)".
Comparison compareAddRmsNorm(const AddRmsNormCall& call, const void* residualOut, const void* out,
                             std::string_view label, unsigned maxReported = 4);

} // namespace collc

#endif // COLLC_TOOLS_HARNESS_RMSNORMREFERENCE_H
