// The float64 interpreter (compiler/interpret/) on every stdlib spec and every accepted spec of
// tests/specs: the spec interpreted gives what its kind must give (computed here independently,
// with NCCL's layouts), and every strategy's lowered program interpreted gives what the spec gives.
// Inputs are small integers, so every sum is exact whatever its order and results compare exactly.
#include "compiler/interpret/Interpreter.h"

#include "compiler/Compile.h"
#include "compiler/ir/IR.h"
#include "tests/StdlibStrategies.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>
#include <sstream>

namespace collc {
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

/// Equal element by element, NaN equal to NaN; the first difference in `why`.
bool same(const Values& a, const Values& b, std::string& why) {
  if (a.size() != b.size()) {
    why = std::to_string(a.size()) + " elements against " + std::to_string(b.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) {
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

struct SpecCase {
  std::string name;
  SpecSource source;
};

void PrintTo(const SpecCase& spec, std::ostream* out) {
  *out << spec.name;
}

std::vector<SpecCase> specCases() {
  std::vector<SpecCase> cases;
  for (const std::string& name : stdlibNames()) {
    auto source = loadSpec(name);
    if (!source) {
      ADD_FAILURE() << llvm::toString(source.takeError());
      continue;
    }
    cases.push_back({name, *source});
  }
  for (const auto& entry : std::filesystem::directory_iterator(COLLC_ACCEPTED_SPECS_DIR)) {
    if (entry.path().extension() != ".coll")
      continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    cases.push_back({"specs/" + entry.path().stem().string(),
                     SpecSource{entry.path().filename().string(), text.str()}});
  }
  return cases;
}

/// Rank counts to interpret a spec at: its smallest and largest, and 3 and 5 where it has them.
std::vector<int> rankCounts(const ir::Program& spec) {
  std::vector<int> counts = {spec.minRanks};
  for (int r : {3, 5, spec.maxRanks})
    if (r > counts.back() && r <= spec.maxRanks)
      counts.push_back(r);
  return counts;
}

/// Counts that leave the last chunk empty, hold one element in it, and make it long and partial.
std::vector<int64_t> countsFor(int nranks, int64_t rowLength) {
  if (rowLength > 0)
    return {rowLength, 3 * rowLength};
  return {1, 16 * int64_t(nranks - 1) + 1, 8 * int64_t(nranks) * 5 + 5};
}

class Interpreter : public testing::TestWithParam<SpecCase> {};

TEST_P(Interpreter, SpecGivesItsKindAndEveryLoweringGivesTheSpec) {
  const SpecCase& spec = GetParam();
  int variants = 0, calls = 0;
  // The spec's own program (any strategy lowers it; barrier always applies).
  CompileOptions probe;
  probe.sync = SyncKind::Barrier;
  std::string diagnostics;
  llvm::raw_string_ostream sink(diagnostics);
  auto first = lowerVariantPrograms(spec.source, probe, sink);
  ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError()) << "\n" << diagnostics;
  const bool rows = !first->spec->rowLengthName.empty();
  const bool hasAux =
      !interpret::auxElements(*first->spec, makeCall(*first->spec, 2, 1, 0, ReduceOp::Sum, 8))
           .empty();
  for (int nranks : rankCounts(*first->spec))
    for (SyncKind sync : tests::kImplementedStrategies)
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
        if (!tests::strategyApplies(sync, op) || (op != ReduceOp::Sum && (hasAux || rows)))
          continue;
        CompileOptions options;
        options.nranks = nranks;
        options.sync = sync;
        options.op = op;
        options.experimentalLL128 = true;
        options.rowLength = rows ? 8 : 0;
        std::string refused;
        llvm::raw_string_ostream refusedSink(refused);
        auto programs = lowerVariantPrograms(spec.source, options, refusedSink);
        if (!programs) {
          llvm::consumeError(programs.takeError()); // a strategy this spec cannot use
          continue;
        }
        ++variants;
        const ir::Program& specProgram = *programs->spec;
        const int roots = hasRoot(specProgram.kind) ? nranks : 1;
        for (int64_t count : countsFor(nranks, options.rowLength))
          for (int root = 0; root < roots; ++root) {
            const Call call = makeCall(specProgram, nranks, count, root, op, options.rowLength);
            const Result want = interpret::interpret(specProgram, specProgram.steps, call);
            const Result got =
                interpret::interpret(*programs->lowered, programs->lowered->steps, call);
            ++calls;
            const std::string where = spec.name + " sync " + std::string(name(sync)) + " op " +
                                      std::string(name(op)) + " nranks " + std::to_string(nranks) +
                                      " n " + std::to_string(count) + " root " +
                                      std::to_string(root);
            std::string why;
            if (!hasAux && !rows) {
              const auto expected = expectedOutputs(specProgram.kind, op, root, count, call.input);
              for (int r = 0; r < nranks; ++r)
                ASSERT_TRUE(same(want.output[size_t(r)], expected[size_t(r)], why))
                    << "the spec interpreted, rank " << r << ", " << where << ": " << why;
            }
            for (int r = 0; r < nranks; ++r) {
              ASSERT_TRUE(same(got.output[size_t(r)], want.output[size_t(r)], why))
                  << "the lowered program against the spec, output of rank " << r << ", " << where
                  << ": " << why;
              for (size_t k = 0; k < want.aux[size_t(r)].size(); ++k)
                ASSERT_TRUE(same(got.aux[size_t(r)][k], want.aux[size_t(r)][k], why))
                    << "the lowered program against the spec, aux buffer " << k << " of rank " << r
                    << ", " << where << ": " << why;
            }
          }
      }
  // Every spec compiles with at least barrier at every rank count it was interpreted at.
  EXPECT_GE(variants, int(rankCounts(*first->spec).size())) << spec.name;
  RecordProperty("variants", variants);
  RecordProperty("calls", calls);
}

INSTANTIATE_TEST_SUITE_P(Specs, Interpreter, testing::ValuesIn(specCases()),
                         [](const testing::TestParamInfo<SpecCase>& info) {
                           std::string name = info.param.name;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return name;
                         });

/// The fused AllReduce + residual add + RMSNorm, interpreted, against the formula.
TEST(InterpreterRmsNorm, SpecGivesTheFormula) {
  auto source = loadSpec("allreduce_rmsnorm");
  ASSERT_TRUE(bool(source)) << llvm::toString(source.takeError());
  CompileOptions options;
  options.nranks = 3;
  options.rowLength = 8;
  std::string diagnostics;
  llvm::raw_string_ostream sink(diagnostics);
  auto programs = lowerVariantPrograms(*source, options, sink);
  ASSERT_TRUE(bool(programs)) << llvm::toString(programs.takeError()) << "\n" << diagnostics;
  const ir::Program& spec = *programs->spec;
  const int64_t h = 8, n = 3 * h;
  const Call call = makeCall(spec, 3, n, 0, ReduceOp::Sum, h);
  const Result result = interpret::interpret(spec, spec.steps, call);
  // Aux order: residual, residual_out, weight.
  for (int r = 0; r < 3; ++r) {
    const Values& residual = call.aux[size_t(r)][0];
    const Values& weight = call.aux[size_t(r)][2];
    for (int64_t t = 0; t < n / h; ++t) {
      Values y(static_cast<size_t>(h));
      double squares = 0;
      for (int64_t k = 0; k < h; ++k) {
        const int64_t i = t * h + k;
        y[size_t(k)] = call.input[0][size_t(i)] + call.input[1][size_t(i)] +
                       call.input[2][size_t(i)] + residual[size_t(i)];
        squares += y[size_t(k)] * y[size_t(k)];
        EXPECT_EQ(result.aux[size_t(r)][1][size_t(i)], y[size_t(k)]) << "residual_out " << i;
      }
      const double scale = 1.0 / std::sqrt(squares / double(h) + 1e-6);
      for (int64_t k = 0; k < h; ++k)
        EXPECT_NEAR(result.output[size_t(r)][size_t(t * h + k)],
                    y[size_t(k)] * scale * weight[size_t(k)], 1e-12)
            << "rank " << r << " row " << t << " element " << k;
    }
  }
}

} // namespace
} // namespace collc
