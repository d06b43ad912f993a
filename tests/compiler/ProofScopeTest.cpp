// What a compile proves of its spec: the variant's rank count (every root and n), not the whole
// declared range, which `collc check` proves; and the strategy decides by that count's facts in
// both, so emit and check agree on every variant.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

/// Right at 2 ranks; at 3, two peers write the one inbox in the same step.
const char* kOneInbox = R"(collective my_twoshot kind allreduce
  ranks 2..8
  buffers in: T[n], out: T[n]
  scratch inbox: T[chunk(n)]
  scratch result: T[n]
  sync barrier
{
  step scatter {
    for p in peers { put in.chunk(p) -> p.inbox }
  }
  step reduce {
    wait scatter
    out.chunk(rank) = reduce(in.chunk(rank), inbox)
    for p in peers { put out.chunk(rank) -> p.result.chunk(rank) }
  }
  step gather {
    wait reduce
    for q in peers { out.chunk(q) = result.chunk(q) }
  }
}
)";

/// Compiles `text` for `nranks`; the diagnostics, or "" on success.
std::string compileFor(const SpecSource& spec, int nranks,
                       std::optional<SyncKind> sync = std::nullopt) {
  CompileOptions options;
  options.nranks = nranks;
  options.sync = sync;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(spec, options, out);
  if (compiled)
    return "";
  consumeError(compiled.takeError());
  return out.str().empty() ? "(refused without diagnostics)" : out.str();
}

TEST(ProofScope, ACompileProvesItsOwnRankCount) {
  const SpecSource spec{"one_inbox.coll", kOneInbox};
  EXPECT_EQ(compileFor(spec, 2), "");
  const std::string at3 = compileFor(spec, 3);
  EXPECT_NE(at3.find("race"), std::string::npos) << at3;
  EXPECT_NE(at3.find("nranks=3"), std::string::npos) << at3;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  Error checked = checkSpec(spec, out);
  ASSERT_TRUE(bool(checked)) << "check proves every declared count, 3 among them";
  consumeError(std::move(checked));
  EXPECT_NE(out.str().find("nranks=3"), std::string::npos) << out.str();
}

TEST(ProofScope, AVariantForMaxOrMinProvesEveryDeclaredCount) {
  // Whether the spec is right for sum only is a verdict over its whole range.
  const SpecSource spec{"one_inbox.coll", kOneInbox};
  CompileOptions options;
  options.nranks = 2;
  options.op = ReduceOp::Max;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(spec, options, out);
  ASSERT_FALSE(bool(compiled));
  consumeError(compiled.takeError());
  EXPECT_NE(out.str().find("nranks=3"), std::string::npos) << out.str();
}

TEST(ProofScope, AWaitIdleAtTheVariantsCountIsLookedForAtTheOthers) {
  // The ring's waits order nothing at 2 ranks: a compile for 2 proves 3 as well, and passes.
  auto ring = loadSpec("allreduce_ring");
  ASSERT_TRUE(bool(ring));
  EXPECT_EQ(compileFor(*ring, 2), "");
  // A wait that orders nothing at any count is refused by a compile as by check.
  const SpecSource idle{"idle.coll", R"(collective c kind allreduce
  buffers in: T[n], out: T[n]
  scratch slot[nranks]: T[n]
{
  step push {
    for p in peers { put in -> p.slot[rank] }
  }
  step reduce {
    wait push
    out = reduce(in, slot[peers])
  }
  step again {
    wait reduce
    out = reduce(in, slot[peers])
  }
}
)"};
  const std::string at4 = compileFor(idle, 4);
  EXPECT_NE(at4.find("nothing that step 'reduce' writes is read after this wait"),
            std::string::npos)
      << at4;
}

TEST(ProofScope, CheckAndCompileDecideByTheSameRankCountsFacts) {
  // At 2 ranks the ring's two ranks send to each other, so a data-arrival strategy applies; at 3
  // some rank hears nothing back from the peer it sends to.
  auto ring = loadSpec("allreduce_ring");
  ASSERT_TRUE(bool(ring));
  EXPECT_EQ(compileFor(*ring, 2, SyncKind::LL), "");
  EXPECT_NE(compileFor(*ring, 3, SyncKind::LL).find("sends it nothing back"), std::string::npos);
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  CheckReport report;
  Error checked = checkSpec(*ring, out, &report, CheckDepth::EveryStrategy);
  ASSERT_FALSE(bool(checked)) << out.str();
  bool sawLL = false;
  for (const StrategyReport& strategy : report.strategies)
    if (strategy.sync == SyncKind::LL) {
      sawLL = true;
      EXPECT_EQ(strategy.refused.rfind("nranks=3: ", 0), 0u) << strategy.refused;
    }
  EXPECT_TRUE(sawLL);
}

} // namespace
} // namespace collc
