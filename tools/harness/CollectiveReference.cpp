#include "tools/harness/CollectiveReference.h"

#include "abi/CollectiveShapes.h"
#include "tools/harness/ParallelChunks.h"

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
                             std::string_view label, unsigned maxReported) {
  Comparison comparison;
  llvm::raw_string_ostream os(comparison.firstMismatches);
  const int nranks = int(call.inputs.size());
  const DType type = call.type;
  const bool reduction = reduces(call.kind);
  const double relative = sumTolerance(type, nranks);
  const uint64_t elements = outputElems(call.kind, call.count, nranks);
  // Element i's expected value from its sources (written to ranks/indices), and whether the
  // output passes; false for an element no source writes (nothing to check).
  struct Check {
    int sources = 0;
    double expected = 0, value = 0, tolerance = 0;
    bool tolerant = false, pass = true;
  };
  auto check = [&](uint64_t i, int* ranks, uint64_t* indices) {
    Check c;
    c.sources = sourcesOf(call, nranks, rank, i, ranks, indices);
    if (c.sources == 0)
      return c;
    double absSum = 0;
    bool nan = false;
    for (int k = 0; k < c.sources; ++k) {
      const double x = loadElement(type, call.inputs[ranks[k]], indices[k]);
      nan |= std::isnan(x);
      absSum += std::fabs(x);
      if (k == 0)
        c.expected = x;
      else if (call.op == ReduceOp::Sum)
        c.expected += x;
      else if (call.op == ReduceOp::Max)
        c.expected = std::max(c.expected, x);
      else
        c.expected = std::min(c.expected, x);
    }
    if (nan)
      c.expected = std::numeric_limits<double>::quiet_NaN();
    c.value = loadElement(type, got, i);
    c.tolerant = reduction && call.op == ReduceOp::Sum && !std::isinf(c.expected);
    if (std::isnan(c.expected))
      c.pass = std::isnan(c.value);
    else if (!c.tolerant)
      c.pass = c.value == c.expected; // false for NaN
    else {
      c.tolerance = relative * absSum + tinyTolerance(type);
      c.pass = std::fabs(c.value - c.expected) <= c.tolerance;
    }
    return c;
  };
  // Counted on several threads (tools/harness/ParallelChunks.h), each with its own sources buffers.
  comparison.mismatches = countFailures(
      elements, maxReported,
      [&](uint64_t i) {
        thread_local std::vector<int> ranks;
        thread_local std::vector<uint64_t> indices;
        ranks.resize(size_t(nranks));
        indices.resize(size_t(nranks));
        return check(i, ranks.data(), indices.data()).pass;
      },
      [&](uint64_t i) {
        std::vector<int> ranks(static_cast<size_t>(nranks));
        std::vector<uint64_t> indices(static_cast<size_t>(nranks));
        const Check c = check(i, ranks.data(), indices.data());
        os << label << "[" << i << "]: got " << formatElement(type, got, i) << ", expected "
           << llvm::format("%.9g", c.expected);
        if (c.tolerant)
          os << llvm::format(" (|diff| %.3g > tol %.3g)", std::fabs(c.value - c.expected),
                             c.tolerance);
        else if (reduction)
          os << " (" << name(call.op) << " must match exactly)";
        else
          os << " (a copy must match exactly)";
        os << "; from";
        for (int k = 0; k < c.sources; ++k)
          os << (k ? ", " : " ") << "rank " << ranks[k] << " in[" << indices[k]
             << "] = " << formatElement(type, call.inputs[ranks[k]], indices[k]);
        os << "\n";
      });
  os.flush();
  return comparison;
}

} // namespace collc
