// The float64 interpreter (compiler/interpret/) on every stdlib spec and every accepted spec of
// tests/specs: the spec interpreted gives what its kind must give, and every strategy's lowered
// program interpreted gives what the spec gives (tests/differential/InterpretedCheck.h), also in
// place and with aliased aux buffers where its own proof allows them; and the spec through the
// proof's value domain agrees with it on which element reaches which output.
#include "compiler/interpret/Interpreter.h"

#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/ir/IR.h"
#include "tests/StdlibStrategies.h"
#include "tests/differential/InterpretedCheck.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>
#include <sstream>

namespace collc {
namespace {

using Values = std::vector<double>;

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
      ADD_FAILURE() << toString(source.takeError());
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

/// Rank counts to interpret a spec at: its smallest, 3 and 5 where it has them, and its largest
/// up to 8. A stdlib spec declares up to 72 ranks; interpreting every lowering at 72 takes a
/// minute a spec, and the proof covers every declared count (the GPU suites run 16 and 32).
std::vector<int> rankCounts(const ir::Program& spec) {
  constexpr int kMostInterpreted = 8;
  std::vector<int> counts = {spec.minRanks};
  for (int r : {3, 5, std::min(spec.maxRanks, kMostInterpreted)})
    if (r > counts.back() && r <= spec.maxRanks)
      counts.push_back(r);
  return counts;
}

/// The row length to interpret a spec with rows at: 8, or 16 where a statement quantizes NVFP4
/// (whole blocks of 16 elements).
int64_t rowLengthFor(const ir::Program& spec) {
  for (const ir::Step& step : spec.steps)
    for (const ir::Stmt& stmt : step.body)
      if (stmt->kind == ir::StmtKind::Row &&
          (stmt->as<ir::RowStmt>().op == ir::RowOp::RmsNormNvfp4 ||
           stmt->as<ir::RowStmt>().op == ir::RowOp::RmsNormNvfp4Swizzled))
        return 16;
  return 8;
}

class Interpreter : public testing::TestWithParam<SpecCase> {};

TEST_P(Interpreter, SpecGivesItsKindAndEveryLoweringGivesTheSpec) {
  const SpecCase& spec = GetParam();
  // The spec's own program (barrier lowers every spec).
  CompileOptions probe;
  probe.sync = SyncKind::Barrier;
  std::string diagnostics;
  DiagnosticText sink(diagnostics);
  auto first = lowerVariantPrograms(spec.source, probe, sink);
  ASSERT_TRUE(bool(first)) << toString(first.takeError()) << "\n" << diagnostics;
  const bool rows = !first->spec->rowLengthName.empty();
  int variants = 0;
  differential::InterpretedCalls calls;
  for (int nranks : rankCounts(*first->spec))
    for (SyncKind sync : tests::kImplementedStrategies)
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
        if (!tests::strategyApplies(sync, op) || (op != ReduceOp::Sum && rows))
          continue;
        CompileOptions options;
        options.nranks = nranks;
        options.sync = sync;
        options.op = op;
        options.experimentalLL128 = true;
        options.rowLength = rows ? rowLengthFor(*first->spec) : 0;
        std::ostream refusedSink(nullptr);
        auto programs =
            lowerVariantPrograms(spec.source, options, refusedSink, op == ReduceOp::Sum);
        if (!programs) {
          consumeError(programs.takeError()); // a strategy or op this spec cannot use
          continue;
        }
        ++variants;
        const std::string failure = differential::checkInterpreted(*programs, options, calls);
        ASSERT_TRUE(failure.empty()) << spec.name << ": " << failure;
      }
  // Every spec compiles with at least barrier at every rank count it was interpreted at.
  EXPECT_GE(variants, int(rankCounts(*first->spec).size())) << spec.name;
  EXPECT_GT(calls.calls, variants);
  // The proof's domain and the reference's agreed on elements that sums tell apart.
  EXPECT_GT(calls.agreed.summed, 0) << spec.name;
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
  ASSERT_TRUE(bool(source)) << toString(source.takeError());
  CompileOptions options;
  options.nranks = 3;
  options.rowLength = 8;
  std::string diagnostics;
  DiagnosticText sink(diagnostics);
  auto programs = lowerVariantPrograms(*source, options, sink);
  ASSERT_TRUE(bool(programs)) << toString(programs.takeError()) << "\n" << diagnostics;
  const ir::Program& spec = *programs->spec;
  const int64_t h = 8, n = 3 * h;
  interpret::Call call;
  call.nranks = 3;
  call.count = n;
  call.rowLength = h;
  for (int r = 0; r < 3; ++r) {
    Values in, residual, weight;
    for (int64_t i = 0; i < n; ++i) {
      in.push_back(double((i * 7 + r * 3) % 11 - 5));
      residual.push_back(double((i * 5 + r) % 7 - 3));
    }
    for (int64_t k = 0; k < h; ++k)
      weight.push_back(0.5 + double(k % 3));
    call.input.push_back(in);
    // Aux order: residual, residual_out (written: its contents do not matter), weight.
    call.aux.push_back({residual, Values(static_cast<size_t>(n), 0.0), weight});
  }
  const interpret::Result result = interpret::interpret(spec, spec.steps, call);
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

/// Reads `in` and `residual` again after writing `out` and `residual_out`: buffers passed as one
/// memory give other values, which shows the interpreter shares their memory.
constexpr const char* kRereads = R"(collective c kind allreduce
  ranks 2..2
  buffers in: T[n], out: T[n], residual_out: T[n], residual: T[n]
  scratch slot[nranks]: T[n]
{
  step push {
    for p in peers { put in -> p.slot[rank] }
  }
  step reduce {
    wait push
    out = reduce(in, slot[peers])
    residual_out = reduce(in, slot[peers]) + residual
  }
  step again {
    wait push
    out = reduce(in, slot[peers]) + residual
  }
}
)";

TEST(InterpreterAliases, BuffersPassedAsOneMemoryShareIt) {
  std::string diagnostics;
  DiagnosticText sink(diagnostics);
  auto programs = lowerVariantPrograms({"rereads.coll", kRereads}, CompileOptions(), sink);
  ASSERT_TRUE(bool(programs)) << toString(programs.takeError()) << "\n" << diagnostics;
  const ir::Program& spec = *programs->spec;
  interpret::Call call;
  call.count = 1;
  call.input = {{1}, {10}};
  call.aux = {{{0}, {100}}, {{0}, {200}}}; // residual_out (written), residual
  auto outputs = [&](const interpret::Call& c) {
    const interpret::Result result = interpret::interpret(spec, spec.steps, c);
    return std::vector<double>{result.output[0][0], result.output[1][0]};
  };
  EXPECT_EQ(outputs(call), (std::vector<double>{111, 211}));
  interpret::Call inPlace = call;
  inPlace.inPlace = true; // `again` reads the sum from in, and the peer's input from its slot
  EXPECT_EQ(outputs(inPlace), (std::vector<double>{11 + 10 + 100, 11 + 1 + 200}));
  interpret::Call aliased = call;
  aliased.auxAliases = {{0, 1}}; // `again` adds residual_out, now sum + residual
  EXPECT_EQ(outputs(aliased), (std::vector<double>{11 + 111, 11 + 211}));
  const interpret::Result both = interpret::interpret(spec, spec.steps, aliased);
  EXPECT_EQ(both.aux[0][0], both.aux[0][1]);
  aliased.auxAliases = {{0, 2}};
  EXPECT_THROW(interpret::interpret(spec, spec.steps, aliased), interpret::InterpretError);
}

TEST(InterpreterAliases, InPlaceNeedsOneSize) {
  auto source = loadSpec("allgather_direct");
  ASSERT_TRUE(bool(source)) << toString(source.takeError());
  std::ostream sink(nullptr);
  auto programs = lowerVariantPrograms(*source, CompileOptions(), sink);
  ASSERT_TRUE(bool(programs)) << toString(programs.takeError());
  interpret::Call call;
  call.count = 4;
  call.input = {Values(4, 1.0), Values(4, 2.0)};
  call.aux = {{}, {}};
  call.inPlace = true;
  try {
    interpret::interpret(*programs->spec, programs->spec->steps, call);
    ADD_FAILURE() << "an allgather interpreted in place";
  } catch (const interpret::InterpretError& error) {
    EXPECT_NE(std::string(error.what()).find("differ in size"), std::string::npos) << error.what();
  }
}

} // namespace
} // namespace collc
