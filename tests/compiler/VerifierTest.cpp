#include "compiler/Verifier.h"

#include "compiler/Sema.h"
#include "dsl/Parser.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

struct Outcome {
  bool parsed = false;
  VerifyResult proof;
  std::string diagnostics;
};

Outcome verifyText(const std::string& text) {
  Outcome outcome;
  llvm::SourceMgr sources;
  llvm::raw_string_ostream out(outcome.diagnostics);
  Diagnostics diags(sources, out);
  auto ast = parseSpecText(diags, text, "spec.coll");
  if (!ast)
    return outcome;
  auto program = analyze(*ast, diags);
  if (!program)
    return outcome;
  outcome.parsed = true;
  outcome.proof = verify(*program, diags);
  out.flush();
  return outcome;
}

const char* const kHeader = "collective c kind allreduce\n"
                            "  ranks 2..8\n"
                            "  buffers in: T[n], out: T[n]\n";

TEST(Verifier, OneShotIsProvedAndIndexAligned) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch slot[nranks]: T[n]
{
  step push { for p in peers { put in -> p.slot[rank] } }
  step reduce { wait push  out = reduce(in, slot[peers]) }
})");
  ASSERT_TRUE(o.parsed) << o.diagnostics;
  EXPECT_TRUE(o.proof.ok) << o.diagnostics;
  EXPECT_TRUE(o.proof.indexAligned);
  EXPECT_EQ(o.diagnostics, "");
}

TEST(Verifier, TwoShotIsProvedAndIndexAligned) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch inbox[nranks]: T[chunk(n)]
  scratch result: T[n]
{
  step scatter { for p in peers { put in.chunk(p) -> p.inbox[rank] } }
  step reduce {
    wait scatter
    out.chunk(rank) = reduce(in.chunk(rank), inbox[peers])
    for p in peers { put out.chunk(rank) -> p.result.chunk(rank) }
  }
  step gather { wait reduce  for q in peers { out.chunk(q) = result.chunk(q) } }
})");
  EXPECT_TRUE(o.proof.ok) << o.diagnostics;
  EXPECT_TRUE(o.proof.indexAligned);
}

// Data sent chunk by chunk but reduced as a whole: correct, but the block that reads an element is
// not the block whose peers wrote it, so the barrier must span all blocks.
TEST(Verifier, MisalignedDependencyIsProvedButNotAligned) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch slot[nranks]: T[n]
{
  step push { for p in peers { for c in ranks { put in.chunk(c) -> p.slot[rank].chunk(c) } } }
  step reduce { wait push  out = reduce(in, slot[peers]) }
})");
  EXPECT_TRUE(o.proof.ok) << o.diagnostics;
  EXPECT_FALSE(o.proof.indexAligned);
}

TEST(Verifier, AtomicAccumulationIsProved) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch acc: T[n]
{
  step init { acc = in }
  step add { wait init  for p in peers { atomic_add in -> p.acc } }
  step finish { wait add  out = acc }
})");
  EXPECT_TRUE(o.proof.ok) << o.diagnostics;
}

TEST(Verifier, AtomicWithoutWaitingForTheOwnersInitIsRefused) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch acc: T[n]
{
  step init { acc = in }
  step add { for p in peers { atomic_add in -> p.acc } }
  step finish { wait add  out = acc }
})");
  EXPECT_FALSE(o.proof.ok);
  EXPECT_NE(o.diagnostics.find("overwrites 'p.acc'"), std::string::npos) << o.diagnostics;
  EXPECT_NE(o.diagnostics.find("without waiting for that step"), std::string::npos);
}

TEST(Verifier, AtomicIntoUninitializedScratchIsRefused) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch acc: T[n]
{
  step add { for p in peers { atomic_add in -> p.acc } }
  step finish { wait add  out = acc }
})");
  EXPECT_FALSE(o.proof.ok);
  EXPECT_NE(o.diagnostics.find("atomic_add into 'p.acc'"), std::string::npos) << o.diagnostics;
  EXPECT_NE(o.diagnostics.find("before anything initializes it"), std::string::npos);
}

TEST(Verifier, ForgettingAPeerBreaksThePostconditionAtThreeRanks) {
  // Every rank reads only its successor's slot: a well-ordered program that computes the wrong
  // thing from 3 ranks on.
  auto o = verifyText(std::string(kHeader) + R"(
  scratch slot: T[n]
{
  step push { put in -> ((rank + 1) % nranks).slot }
  step reduce { wait push  out = reduce(in, slot) }
})");
  EXPECT_FALSE(o.proof.ok);
  EXPECT_NE(o.diagnostics.find("postcondition fails"), std::string::npos) << o.diagnostics;
  EXPECT_NE(o.diagnostics.find("(nranks=3, n=1)"), std::string::npos) << o.diagnostics;
  EXPECT_NE(o.diagnostics.find("note: last written here"), std::string::npos);
}

TEST(Verifier, DoubleCountingBreaksThePostcondition) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch slot[nranks]: T[n]
{
  step push { for p in peers { put in -> p.slot[rank] } }
  step reduce { wait push  out = reduce(in, in, slot[peers]) }
})");
  EXPECT_FALSE(o.proof.ok);
  EXPECT_NE(o.diagnostics.find("exactly once"), std::string::npos) << o.diagnostics;
}

TEST(Verifier, ReadingScratchBeforeTheBarrierIsRefused) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch slot[nranks]: T[n]
{
  step push { for p in peers { put in -> p.slot[rank] } }
  step reduce { out = reduce(in, slot[peers]) }
})");
  EXPECT_FALSE(o.proof.ok);
  EXPECT_NE(o.diagnostics.find("without waiting for it; add 'wait push'"), std::string::npos)
      << o.diagnostics;
}

TEST(Verifier, MismatchedWaitIsRefused) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch slot[nranks]: T[n]
{
  step push { for p in peers { put in -> p.slot[rank] } }
  step reduce { wait push  out = reduce(in, slot[peers]) }
  step again { wait reduce  out = reduce(in, slot[peers]) }
})");
  EXPECT_FALSE(o.proof.ok);
  EXPECT_NE(o.diagnostics.find("no signal matches it"), std::string::npos) << o.diagnostics;
}

TEST(Verifier, LocalDataAcrossStepsWithDifferentMappingNeedsAWait) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch tmp: T[n]
{
  step split { for c in ranks { tmp.chunk(c) = in.chunk(c) } }
  step join { out = tmp }
})");
  EXPECT_FALSE(o.proof.ok);
  EXPECT_NE(o.diagnostics.find("over a different element range"), std::string::npos)
      << o.diagnostics;
}

TEST(Verifier, ReadWriteRaceInOneStepIsRefused) {
  auto o = verifyText(std::string(kHeader) + R"(
  scratch slot[nranks]: T[n]
{
  step push { for p in peers { put in -> p.slot[rank] } }
  step both {
    wait push
    out = reduce(in, slot[peers])
    for p in peers { put in -> p.slot[rank] }
  }
})");
  EXPECT_FALSE(o.proof.ok);
  EXPECT_NE(o.diagnostics.find("race"), std::string::npos) << o.diagnostics;
}

TEST(Verifier, ReportsTheRankCountThatBreaks) {
  // Correct for 2 ranks only: each rank sends to rank 1 - rank.
  auto o = verifyText(std::string(kHeader) + R"(
  scratch slot[nranks]: T[n]
{
  step push { put in -> (1 - rank % 2).slot[rank] }
  step reduce { wait push  out = reduce(in, slot[peers]) }
})");
  EXPECT_FALSE(o.proof.ok);
  EXPECT_NE(o.diagnostics.find("nranks=3"), std::string::npos) << o.diagnostics;
}

} // namespace
} // namespace collc
