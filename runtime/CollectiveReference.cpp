#include "runtime/CollectiveReference.h"

#include "dsl/CollectiveShapes.h"

#include <cmath>
#include <limits>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

namespace collc {
namespace {

/// The inputs output element `index` of `rank` is made of, as (rank, input index) pairs; the same
/// rule as the verifier's postcondition (compiler/Postcondition.h, which the tests compare with
/// this), without allocating per element. Returns the number of pairs (0: unspecified).
int sourcesOf(const CollectiveCall& call, int nranks, int rank, uint64_t index, int* ranks,
              uint64_t* indices) {
  const uint64_t n = call.count;
  switch (call.kind) {
  case CollectiveKind::Reduce:
    if (rank != call.root)
      return 0;
    [[fallthrough]];
  case CollectiveKind::AllReduce:
  case CollectiveKind::ReduceScatter:
    for (int q = 0; q < nranks; ++q) {
      ranks[q] = q;
      indices[q] = call.kind == CollectiveKind::ReduceScatter ? uint64_t(rank) * n + index : index;
    }
    return nranks;
  case CollectiveKind::Broadcast:
    ranks[0] = call.root;
    indices[0] = index;
    return 1;
  case CollectiveKind::AllGather:
    ranks[0] = int(index / n);
    indices[0] = index % n;
    return 1;
  case CollectiveKind::AllToAll:
    ranks[0] = int(index / n);
    indices[0] = uint64_t(rank) * n + index % n;
    return 1;
  }
  return 0;
}

} // namespace

Comparison compareCollective(const CollectiveCall& call, int rank, const void* got,
                             llvm::StringRef label, unsigned maxReported) {
  Comparison comparison;
  llvm::raw_string_ostream os(comparison.firstMismatches);
  const int nranks = int(call.inputs.size());
  const DType type = call.type;
  const bool reduction = reduces(call.kind);
  const double relative = sumTolerance(type, nranks);
  const uint64_t elements = outputElems(call.kind, call.count, nranks);
  std::vector<int> ranks(nranks);
  std::vector<uint64_t> indices(nranks);
  for (uint64_t i = 0; i < elements; ++i) {
    const int sources = sourcesOf(call, nranks, rank, i, ranks.data(), indices.data());
    if (sources == 0)
      continue;
    double expected = 0, absSum = 0;
    bool nan = false;
    for (int k = 0; k < sources; ++k) {
      const double x = loadElement(type, call.inputs[ranks[k]], indices[k]);
      nan |= std::isnan(x);
      absSum += std::fabs(x);
      if (k == 0)
        expected = x;
      else if (call.op == ReduceOp::Sum)
        expected += x;
      else if (call.op == ReduceOp::Max)
        expected = std::max(expected, x);
      else
        expected = std::min(expected, x);
    }
    if (nan)
      expected = std::numeric_limits<double>::quiet_NaN();
    const double value = loadElement(type, got, i);
    const bool tolerant = reduction && call.op == ReduceOp::Sum && !std::isinf(expected);
    double tolerance = 0;
    bool pass;
    if (std::isnan(expected))
      pass = std::isnan(value);
    else if (!tolerant)
      pass = value == expected; // false for NaN
    else {
      tolerance = relative * absSum + tinyTolerance(type);
      pass = std::fabs(value - expected) <= tolerance;
    }
    if (pass || comparison.mismatches++ >= maxReported)
      continue;
    os << label << "[" << i << "]: got " << formatElement(type, got, i) << ", expected "
       << llvm::format("%.9g", expected);
    if (tolerant)
      os << llvm::format(" (|diff| %.3g > tol %.3g)", std::fabs(value - expected), tolerance);
    else if (reduction)
      os << " (" << name(call.op) << " must match exactly)";
    else
      os << " (a copy must match exactly)";
    os << "; from";
    for (int k = 0; k < sources; ++k)
      os << (k ? ", " : " ") << "rank " << ranks[k] << " in[" << indices[k]
         << "] = " << formatElement(type, call.inputs[ranks[k]], indices[k]);
    os << "\n";
  }
  os.flush();
  return comparison;
}

} // namespace collc
