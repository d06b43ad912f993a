// The executor's rule for registers (compiler/execute/Walker.h): a register lives as long as the
// kernel's thread variables do, one element loop (or one row loop), and both value domains (the
// proof's and the float64 reference's) refuse a read of it past that life.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/interpret/Interpreter.h"
#include "compiler/ir/IR.h"
#include "compiler/verify/Simulation.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

constexpr int kRanks = 4;
constexpr int64_t kCount = 64;

/// allreduce_oneshot lowered for barrier: its push step loads the input into a register once,
/// then sends the register to every peer, all in one element loop.
VariantPrograms oneshot() {
  auto source = loadSpec("allreduce_oneshot");
  EXPECT_TRUE(bool(source)) << toString(source.takeError());
  CompileOptions options;
  options.nranks = kRanks;
  options.sync = SyncKind::Barrier;
  std::string diagnostics;
  DiagnosticText sink(diagnostics);
  auto programs = lowerVariantPrograms(*source, options, sink);
  EXPECT_TRUE(bool(programs)) << toString(programs.takeError()) << "\n" << diagnostics;
  return *programs;
}

/// The steps with every element loop that fills a register and then reads it split in two: the
/// first loop fills it, the second reads it.
std::vector<ir::Step> splitLoops(const std::vector<ir::Step>& steps, int& splits) {
  std::vector<ir::Step> result = steps;
  for (ir::Step& step : result)
    for (size_t k = 0; k < step.body.size(); ++k) {
      if (step.body[k]->kind != ir::StmtKind::ElementLoop)
        continue;
      const auto& loop = step.body[k]->as<ir::ElementLoop>();
      if (loop.body.size() < 2 || loop.body[0]->kind != ir::StmtKind::Let)
        continue;
      auto part = [&](std::vector<ir::Stmt> body) {
        return std::make_shared<ir::ElementLoop>(loop.loc, loop.bound, loop.shape, loop.vectorElems,
                                                 loop.unroll, std::move(body));
      };
      ir::Stmt fill = part({loop.body[0]});
      ir::Stmt read = part({loop.body.begin() + 1, loop.body.end()});
      step.body[k] = fill;
      step.body.insert(step.body.begin() + long(k) + 1, read);
      ++splits;
      ++k;
    }
  return result;
}

interpret::Call call() {
  interpret::Call c;
  c.nranks = kRanks;
  c.count = kCount;
  for (int r = 0; r < kRanks; ++r)
    c.input.push_back(std::vector<double>(size_t(kCount), double(r + 1)));
  c.aux.assign(size_t(kRanks), {});
  return c;
}

/// The proof's run of the lowered program; true if it keeps every rule.
bool proved(const ir::Program& program, const std::vector<ir::Step>& steps) {
  proof::RunConfig config;
  config.nranks = kRanks;
  config.count = proof::Affine::constant(kCount);
  config.lowered = true;
  proof::Arith arith(false);
  try {
    proof::simulate(program, steps, config, arith, nullptr);
    return true;
  } catch (const proof::RunFailed&) {
    return false;
  }
}

TEST(ExecutorRegisters, LiveWithinTheirElementLoopInBothDomains) {
  const VariantPrograms programs = oneshot();
  const ir::Program& lowered = *programs.lowered;
  // In one loop: both domains run it, and the reference gives the sum of the ranks' inputs.
  EXPECT_TRUE(proved(lowered, lowered.steps));
  const interpret::Result result = interpret::interpret(lowered, lowered.steps, call());
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(result.output[size_t(r)], std::vector<double>(size_t(kCount), 10.0)) << r;
}

TEST(ExecutorRegisters, ReadInALaterElementLoopIsRefusedByBothDomains) {
  const VariantPrograms programs = oneshot();
  const ir::Program& lowered = *programs.lowered;
  int splits = 0;
  const std::vector<ir::Step> split = splitLoops(lowered.steps, splits);
  ASSERT_GT(splits, 0) << "the push step no longer fills a register";
  EXPECT_FALSE(proved(lowered, split));
  try {
    interpret::interpret(lowered, split, call());
    ADD_FAILURE() << "the reference read a register past its element loop";
  } catch (const interpret::InterpretError& error) {
    EXPECT_NE(std::string(error.what()).find("register 'hoisted_0' read before"), std::string::npos)
        << error.what();
  }
}

} // namespace
} // namespace collc
