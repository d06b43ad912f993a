#include "tests/differential/InterpretedCheck.h"

#include "compiler/interpret/Interpreter.h"
#include "compiler/ir/IR.h"

#include <algorithm>
#include <cmath>

namespace collc::differential {
namespace {

using interpret::Call;
using interpret::Result;
using Values = std::vector<double>;

/// Small integers that differ by rank, element and buffer.
Values integers(int64_t elems, int rank, int salt) {
  Values values(static_cast<size_t>(elems));
  for (int64_t i = 0; i < elems; ++i)
    values[size_t(i)] = double((i * 7 + rank * 13 + salt * 5) % 17 - 8);
  return values;
}

double combine(ReduceOp op, double a, double b) {
  return op == ReduceOp::Sum ? a + b : op == ReduceOp::Max ? std::max(a, b) : std::min(a, b);
}

/// What each rank's output must hold for `kind` (NaN where the kind leaves it unspecified).
std::vector<Values> expectedOutputs(CollectiveKind kind, ReduceOp op, int root, int64_t n,
                                    const std::vector<Values>& in) {
  const int R = int(in.size());
  auto reduced = [&](int64_t at) {
    double value = in[0][size_t(at)];
    for (int q = 1; q < R; ++q)
      value = combine(op, value, in[size_t(q)][size_t(at)]);
    return value;
  };
  std::vector<Values> out(static_cast<size_t>(R));
  for (int r = 0; r < R; ++r) {
    Values& o = out[size_t(r)];
    switch (kind) {
    case CollectiveKind::AllReduce:
      for (int64_t i = 0; i < n; ++i)
        o.push_back(reduced(i));
      break;
    case CollectiveKind::Reduce:
      for (int64_t i = 0; i < n; ++i)
        o.push_back(r == root ? reduced(i) : std::nan(""));
      break;
    case CollectiveKind::Broadcast:
      o = in[size_t(root)];
      break;
    case CollectiveKind::AllGather:
      for (int q = 0; q < R; ++q)
        o.insert(o.end(), in[size_t(q)].begin(), in[size_t(q)].end());
      break;
    case CollectiveKind::ReduceScatter:
      for (int64_t i = 0; i < n; ++i)
        o.push_back(reduced(r * n + i));
      break;
    case CollectiveKind::AllToAll:
      for (int q = 0; q < R; ++q)
        for (int64_t i = 0; i < n; ++i)
          o.push_back(in[size_t(q)][size_t(r * n + i)]);
      break;
    }
  }
  return out;
}

/// Equal element by element, NaN equal to NaN; the first difference in `why`. With `anyUnwritten`,
/// any value of `a` matches a NaN of `b` (an element `b`'s call leaves unwritten, which a call
/// whose output is its input's memory leaves holding what the input held).
bool same(const Values& a, const Values& b, std::string& why, bool anyUnwritten = false) {
  if (a.size() != b.size()) {
    why = std::to_string(a.size()) + " elements against " + std::to_string(b.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(b[i]) && (anyUnwritten || std::isnan(a[i]))))) {
      why = "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " against " +
            std::to_string(b[i]);
      return false;
    }
  return true;
}

Call makeCall(const ir::Program& spec, int nranks, int64_t count, int root, ReduceOp op,
              int64_t rowLength) {
  Call call;
  call.nranks = nranks;
  call.count = count;
  call.root = root;
  call.op = op;
  call.rowLength = rowLength;
  const int64_t inElems = interpret::inputElements(spec, call);
  const std::vector<int64_t> auxElems = interpret::auxElements(spec, call);
  for (int r = 0; r < nranks; ++r) {
    call.input.push_back(integers(inElems, r, 0));
    std::vector<Values> aux;
    for (size_t k = 0; k < auxElems.size(); ++k)
      aux.push_back(integers(auxElems[k], r, int(k) + 1));
    call.aux.push_back(std::move(aux));
  }
  return call;
}

/// The ways a call may pass buffers as one memory that `programs` was proved for: each allowed
/// pair alone, then all of them at once where they were proved together.
std::vector<Call> sharedCalls(const VariantPrograms& programs, const Call& distinct) {
  std::vector<Call> calls;
  if (!programs.aliasesProved)
    return calls;
  auto with = [&](bool inPlace, std::vector<std::pair<int, int>> auxAliases) {
    Call call = distinct;
    call.inPlace = inPlace;
    call.auxAliases = std::move(auxAliases);
    calls.push_back(std::move(call));
  };
  if (programs.inPlace)
    with(true, {});
  for (const auto& pair : programs.auxAliases)
    with(false, {pair});
  const size_t pairs = programs.auxAliases.size() + (programs.inPlace ? 1 : 0);
  if (pairs > 1 && programs.aliasesTogether)
    with(programs.inPlace, programs.auxAliases);
  return calls;
}

std::string describeSharing(const Call& call) {
  std::string text = call.inPlace ? "in place" : "";
  for (const auto& [written, read] : call.auxAliases)
    text += std::string(text.empty() ? "" : ", ") + "aux " + std::to_string(written) + " as aux " +
            std::to_string(read);
  return text;
}

/// The first buffer in which `got` differs from `want` on some rank, or empty: the output and
/// every aux buffer, except the read one of an aliased pair (its memory holds the written one).
std::string firstDifference(const Result& got, const Result& want, const Call& call) {
  std::string why;
  for (int r = 0; r < call.nranks; ++r) {
    if (!same(got.output[size_t(r)], want.output[size_t(r)], why, call.inPlace))
      return "the output differs from the spec's on rank " + std::to_string(r) + ": " + why;
    for (size_t k = 0; k < want.aux[size_t(r)].size(); ++k) {
      const bool readSide =
          std::any_of(call.auxAliases.begin(), call.auxAliases.end(),
                      [&](const std::pair<int, int>& pair) { return pair.second == int(k); });
      if (!readSide && !same(got.aux[size_t(r)][k], want.aux[size_t(r)][k], why))
        return "aux buffer " + std::to_string(k) + " differs from the spec's on rank " +
               std::to_string(r) + ": " + why;
    }
  }
  return "";
}

} // namespace

std::vector<int64_t> interpretedCounts(int nranks, int64_t rowLength) {
  if (rowLength > 0)
    return {rowLength, 3 * rowLength};
  return {1, 16 * int64_t(nranks - 1) + 1, 8 * int64_t(nranks) * 5 + 5};
}

std::string checkInterpreted(const VariantPrograms& programs, const CompileOptions& options,
                             InterpretedCalls& counts) {
  const ir::Program& spec = *programs.spec;
  const ir::Program& lowered = *programs.lowered;
  const int nranks = options.nranks;
  const int64_t rowLength = spec.rowLengthName.empty()
                                ? 0
                                : (options.rowLength ? options.rowLength : spec.defaultRowLength);
  const int roots = hasRoot(spec.kind) ? nranks : 1;
  for (int64_t count : interpretedCounts(nranks, rowLength))
    for (int root = 0; root < roots; ++root) {
      const Call call = makeCall(spec, nranks, count, root, options.op, rowLength);
      const bool plain = call.aux[0].empty() && rowLength == 0;
      const std::string where = "sync " + std::string(name(lowered.sync)) + " op " +
                                std::string(name(options.op)) + " nranks " +
                                std::to_string(nranks) + " n " + std::to_string(count) + " root " +
                                std::to_string(root);
      Result want, got;
      try {
        want = interpret::interpret(spec, spec.steps, call);
        got = interpret::interpret(lowered, lowered.steps, call);
      } catch (const interpret::InterpretError& error) {
        return "cannot interpret, " + where + ": " + error.what();
      }
      ++counts.calls;
      if (options.sync == SyncKind::Barrier && options.op == ReduceOp::Sum)
        if (std::string disagreement =
                checkDomainsAgree(spec, nranks, count, root, rowLength, counts.agreed);
            !disagreement.empty())
          return "the proof and the reference disagree: " + disagreement;
      std::string why;
      if (plain) {
        const auto expected = expectedOutputs(spec.kind, options.op, root, count, call.input);
        for (int r = 0; r < nranks; ++r)
          if (!same(want.output[size_t(r)], expected[size_t(r)], why))
            return "the spec interpreted gives the wrong " + std::string(name(spec.kind)) +
                   " on rank " + std::to_string(r) + ", " + where + ": " + why;
      }
      if (std::string difference = firstDifference(got, want, call); !difference.empty())
        return "the lowered program: " + difference + ", " + where;
      // The same inputs with buffers as one memory: the spec's result with distinct buffers
      // (which is the kind's, for a plain spec) is what the call must leave. At the longest
      // count only (every chunk holds something), to bound the test's time.
      if (count != interpretedCounts(nranks, rowLength).back())
        continue;
      for (const Call& shared : sharedCalls(programs, call)) {
        Result result;
        try {
          result = interpret::interpret(lowered, lowered.steps, shared);
        } catch (const interpret::InterpretError& error) {
          return "cannot interpret " + describeSharing(shared) + ", " + where + ": " + error.what();
        }
        ++(shared.auxAliases.empty() ? counts.inPlace : counts.aliased);
        if (std::string difference = firstDifference(result, want, shared); !difference.empty())
          return "the lowered program " + describeSharing(shared) + ": " + difference + ", " +
                 where;
      }
    }
  return "";
}

} // namespace collc::differential
