// What a compiled variant allows and computes, where its strategy and the spec differ: buffers
// passed as one memory are proved per lowered program, and '+' of inputs holds for sum only.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"

#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>

namespace collc {
namespace {

/// A one-shot AllReduce that reduces chunk by chunk: the threads that write `out` are not the
/// ones that sent `in`, which a barrier orders and data arrival does not.
constexpr const char* kChunkedOneShot = R"(collective c kind allreduce
  buffers in: T[n], out: T[n]
  scratch slot[nranks]: T[n]
  sync barrier
{
  step push {
    for p in peers { put in -> p.slot[rank] }
  }
  step reduce {
    wait push
    for k in ranks { out.chunk(k) = reduce(in.chunk(k), slot[peers].chunk(k)) }
  }
}
)";

/// Two ranks' inputs added with '+': a sum whatever --op says.
constexpr const char* kPlusOfInputs = R"(collective c kind allreduce
  ranks 2..2
  buffers in: T[n], out: T[n]
  scratch slot[nranks]: T[n]
{
  step push {
    for p in peers { put in -> p.slot[rank] }
  }
  step reduce {
    wait push
    out = in + slot[(rank + 1) % nranks]
  }
}
)";

struct Compiled {
  std::optional<CompiledCollective> collective;
  std::string diagnostics;
};

Compiled compile(const SpecSource& spec, SyncKind sync, int nranks = 2,
                 ReduceOp op = ReduceOp::Sum) {
  CompileOptions options;
  options.sync = sync;
  options.nranks = nranks;
  options.op = op;
  options.formatSource = false;
  Compiled result;
  DiagnosticText out(result.diagnostics);
  auto compiled = compileCollective(spec, options, out);
  if (compiled)
    result.collective = std::move(*compiled);
  else
    consumeError(compiled.takeError());
  return result;
}

SpecSource stdlib(const std::string& name) {
  auto spec = loadSpec(name);
  if (!spec) {
    consumeError(spec.takeError());
    ADD_FAILURE() << "no stdlib spec " << name;
    return {};
  }
  return *spec;
}

TEST(AliasesPerVariant, ChunkedOneShotIsInPlaceUnderBarrierOnly) {
  const SpecSource spec{"chunked.coll", kChunkedOneShot};
  for (int nranks : {2, 3, 8}) {
    auto barrier = compile(spec, SyncKind::Barrier, nranks);
    ASSERT_TRUE(barrier.collective) << barrier.diagnostics;
    EXPECT_TRUE(barrier.collective->inPlace) << nranks;
    for (SyncKind sync : {SyncKind::LL, SyncKind::Sentinel}) {
      auto arrival = compile(spec, sync, nranks);
      ASSERT_TRUE(arrival.collective) << arrival.diagnostics;
      EXPECT_FALSE(arrival.collective->inPlace) << name(sync) << " at " << nranks << " ranks";
    }
  }
}

TEST(AliasesPerVariant, FusedRmsNormInPlaceOnlyWhereABarrierOrdersTheRows) {
  const SpecSource spec = stdlib("allreduce_rmsnorm");
  auto barrier = compile(spec, SyncKind::Barrier, 4);
  ASSERT_TRUE(barrier.collective) << barrier.diagnostics;
  EXPECT_TRUE(barrier.collective->inPlace);
  EXPECT_EQ(barrier.collective->auxAliases.size(), 1u);
  EXPECT_TRUE(barrier.collective->aliasesTogether);
  for (SyncKind sync : {SyncKind::LL, SyncKind::Sentinel}) {
    auto arrival = compile(spec, sync, 4);
    ASSERT_TRUE(arrival.collective) << arrival.diagnostics;
    // A block stores normalized rows into `in` while another block may still be sending them.
    EXPECT_FALSE(arrival.collective->inPlace) << name(sync);
    // residual_out = ... + residual is read and written by the same thread of the row.
    EXPECT_EQ(arrival.collective->auxAliases.size(), 1u) << name(sync);
  }
}

TEST(AliasesPerVariant, StdlibOneShotAndTwoShotStayInPlaceUnderEveryStrategy) {
  for (const char* name : {"allreduce_oneshot", "allreduce_twoshot"})
    for (SyncKind sync :
         {SyncKind::Barrier, SyncKind::LL, SyncKind::Sentinel, SyncKind::LL128Atomic}) {
      auto compiled = compile(stdlib(name), sync, 8);
      ASSERT_TRUE(compiled.collective) << compiled.diagnostics;
      EXPECT_TRUE(compiled.collective->inPlace) << name << " " << collc::name(sync);
    }
}

TEST(AliasesPerVariant, CheckReportsEachStrategyAndWhy) {
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  CheckReport report;
  ASSERT_FALSE(bool(checkSpec(SpecSource{"chunked.coll", kChunkedOneShot}, out, &report,
                              CheckDepth::EveryStrategy)))
      << out.str();
  EXPECT_TRUE(report.inPlace); // the spec's waits order it
  ASSERT_EQ(report.strategies.size(), 4u);
  for (const StrategyReport& strategy : report.strategies) {
    if (strategy.sync == SyncKind::LL128Atomic) {
      EXPECT_FALSE(strategy.refused.empty());
      continue;
    }
    ASSERT_TRUE(strategy.refused.empty()) << name(strategy.sync) << ": " << strategy.refused;
    ASSERT_EQ(strategy.aliases.size(), 1u);
    const AliasReport& inPlace = strategy.aliases[0];
    EXPECT_TRUE(inPlace.inPlace);
    if (strategy.sync == SyncKind::Barrier) {
      EXPECT_EQ(inPlace.allowedRanks.size(), 7u);
    } else {
      EXPECT_TRUE(inPlace.allowedRanks.empty()) << name(strategy.sync);
      EXPECT_NE(inPlace.why.find("no barrier orders the two"), std::string::npos) << inPlace.why;
    }
  }
}

TEST(Operators, PlusOfTwoInputsIsRefusedForMaxAndMinAtTheStatement) {
  const SpecSource spec{"plus.coll", kPlusOfInputs};
  auto sum = compile(spec, SyncKind::Barrier, 2, ReduceOp::Sum);
  EXPECT_TRUE(sum.collective) << sum.diagnostics;
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min}) {
    auto other = compile(spec, SyncKind::Barrier, 2, op);
    EXPECT_FALSE(other.collective);
    EXPECT_NE(other.diagnostics.find("plus.coll:11:5: error: this spec computes its result for op "
                                     "'sum' only, so it cannot be compiled with op '" +
                                     std::string(name(op)) +
                                     "': '+' adds values that both carry "
                                     "the input"),
              std::string::npos)
        << other.diagnostics;
  }
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  CheckReport report;
  ASSERT_FALSE(bool(checkSpec(spec, out, &report)));
  EXPECT_EQ(report.sumOnly.rfind("11:5: '+' adds values", 0), 0u) << report.sumOnly;
}

TEST(Operators, AuxInsideAReduceIsSumOnlyButAResidualAddedAfterItIsNot) {
  const std::string head = R"(collective c kind allreduce
  buffers in: T[n], out: T[n], residual: T[n]
  scratch slot[nranks]: T[n]
{
  step push {
    for p in peers { put in -> p.slot[rank] }
  }
  step reduce {
    wait push
)";
  const SpecSource after{"after.coll",
                         head + "    out = reduce(in, slot[peers]) + residual\n  }\n}\n"};
  EXPECT_TRUE(compile(after, SyncKind::Barrier, 3, ReduceOp::Max).collective);
  // residual inside the reduce is max-ed with the input under --op max: not in + residual.
  const SpecSource inside{"inside.coll",
                          head + "    out = reduce(in, slot[peers], residual)\n  }\n}\n"};
  auto compiled = compile(inside, SyncKind::Barrier, 3, ReduceOp::Max);
  EXPECT_FALSE(compiled.collective);
  EXPECT_NE(compiled.diagnostics.find("reduce(...) combines aux data with the operator"),
            std::string::npos)
      << compiled.diagnostics;
}

} // namespace
} // namespace collc
