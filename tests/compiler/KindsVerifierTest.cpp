// The collective kinds beyond AllReduce: their buffer shapes, `root`, `if`, `.block(k)` and
// repeated steps, and each kind's postcondition as the verifier proves it
// (compiler/Postcondition.h).
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/Postcondition.h"
#include "tests/StdlibApplicability.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

struct Outcome {
  bool ok = false;
  std::string diagnostics;
};

Outcome check(const std::string& text) {
  Outcome outcome;
  DiagnosticText out(outcome.diagnostics);
  Error error = checkSpec(SpecSource{"spec.coll", text}, out);
  outcome.ok = !error;
  consumeError(std::move(error));
  out.flush();
  return outcome;
}

bool has(const Outcome& o, const std::string& text) {
  return o.diagnostics.find(text) != std::string::npos;
}

const char* const kAllGather = R"(collective c kind allgather
  buffers in: T[n], out: T[n * nranks]
  scratch slot[nranks]: T[n]
{
  step push { for p in peers { put in -> p.slot[rank] }  out.block(rank) = in }
  step gather { wait push  for q in peers { OUT_OF_Q = slot[SLOT_OF_Q] } }
})";

std::string allGather(const std::string& target, const std::string& slot) {
  std::string text = kAllGather;
  text.replace(text.find("OUT_OF_Q"), 8, target);
  text.replace(text.find("SLOT_OF_Q"), 9, slot);
  return text;
}

TEST(KindsVerifier, EveryStdlibSpecIsProved) {
  for (const auto& name : stdlibNames()) {
    auto spec = loadSpec(name);
    ASSERT_TRUE(bool(spec)) << name;
    auto o = check(spec->text);
    EXPECT_TRUE(o.ok) << name << ":\n" << o.diagnostics;
  }
}

TEST(KindsVerifier, AllGatherIsProvedWithBlocks) {
  auto o = check(allGather("out.block(q)", "q"));
  EXPECT_TRUE(o.ok) << o.diagnostics;
}

TEST(KindsVerifier, AllGatherWithBlocksInTheWrongPlaceFails) {
  auto o = check(allGather("out.block((q + 1) % nranks)", "q"));
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "postcondition fails: out[")) << o.diagnostics;
  EXPECT_TRUE(has(o, "an allgather needs exactly in[")) << o.diagnostics;
}

TEST(KindsVerifier, AllGatherThatForgetsItsOwnBlockFails) {
  auto o = check(R"(collective c kind allgather
  buffers in: T[n], out: T[n * nranks]
  scratch slot[nranks]: T[n]
{
  step push { for p in peers { put in -> p.slot[rank] } }
  step gather { wait push  for q in peers { out.block(q) = slot[q] } }
})");
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "is never written")) << o.diagnostics;
}

TEST(KindsVerifier, ReduceScatterOfTheWrongBlockFails) {
  const std::string good = R"(collective c kind reducescatter
  buffers in: T[n * nranks], out: T[n]
  scratch slot[nranks]: T[n]
{
  step push { for p in peers { put in.block(p) -> p.slot[rank] } }
  step reduce { wait push  out = reduce(in.block(BLOCK), slot[peers]) }
})";
  std::string right = good, wrong = good;
  right.replace(right.find("BLOCK"), 5, "rank");
  wrong.replace(wrong.find("BLOCK"), 5, "0");
  EXPECT_TRUE(check(right).ok) << check(right).diagnostics;
  auto o = check(wrong);
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "a reducescatter needs in[")) << o.diagnostics;
  EXPECT_TRUE(has(o, "of every rank exactly once")) << o.diagnostics;
}

TEST(KindsVerifier, AllToAllFromTheWrongBlockFails) {
  auto o = check(R"(collective c kind alltoall
  buffers in: T[nranks * n], out: T[n * nranks]
  scratch slot[nranks]: T[n]
{
  step push { for p in peers { put in.block(rank) -> p.slot[rank] }  out.block(rank) = in.block(rank) }
  step gather { wait push  for q in peers { out.block(q) = slot[q] } }
})");
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "an alltoall needs exactly in[")) << o.diagnostics;
}

// A broadcast that assumes the root is rank 0 is right for root 0 only: every root is proved.
TEST(KindsVerifier, BroadcastIsProvedForEveryRoot) {
  const std::string spec = R"(collective c kind broadcast
  buffers in: T[n], out: T[n]
  scratch inbox: T[n]
{
  step push { if rank == ROOT { for p in peers { put in -> p.inbox }  out = in } }
  step receive { wait push  if rank != ROOT { out = inbox } }
})";
  std::string right = spec, wrong = spec;
  for (std::string* text : {&right, &wrong})
    for (size_t at; (at = text->find("ROOT")) != std::string::npos;)
      text->replace(at, 4, text == &right ? "root" : "0");
  EXPECT_TRUE(check(right).ok) << check(right).diagnostics;
  auto o = check(wrong);
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "root=1")) << o.diagnostics;
  EXPECT_TRUE(has(o, "a broadcast needs exactly in[0] of rank 1")) << o.diagnostics;
}

TEST(KindsVerifier, ReduceSpecifiesOnlyTheRootsOutput) {
  // The other ranks may leave their output alone or write anything into it.
  auto o = check(R"(collective c kind reduce
  buffers in: T[n], out: T[n]
  scratch slot[nranks]: T[n]
{
  step push { if rank != root { put in -> root.slot[rank]  out = in } }
  step reduce { wait push  if rank == root { out = reduce(in, slot[peers]) } }
})");
  EXPECT_TRUE(o.ok) << o.diagnostics;
  auto wrong = check(R"(collective c kind reduce
  buffers in: T[n], out: T[n]
  scratch slot[nranks]: T[n]
{
  step push { if rank != root { put in -> root.slot[rank] } }
  step reduce { wait push  if rank == root { out = reduce(slot[peers]) } }
})");
  EXPECT_FALSE(wrong.ok);
  EXPECT_TRUE(has(wrong, "a reduce needs in[0] of every rank exactly once")) << wrong.diagnostics;
}

TEST(KindsVerifier, RootIsRefusedWhereTheKindHasNone) {
  auto o = check(R"(collective c kind allreduce
  buffers in: T[n], out: T[n]
{ step copy { if rank == root { out = in } } })");
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "spec.coll:3:26: error: 'root' is the root rank of a broadcast or a reduce; "
                     "an allreduce has none"))
      << o.diagnostics;
}

TEST(KindsVerifier, BufferShapesFollowTheKind) {
  auto o = check(R"(collective c kind alltoall
  buffers in: T[n], out: T[n * nranks]
{ step copy { out = in } })");
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "spec.coll:2:17: error: the input of an alltoall holds n * nranks elements; "
                     "declare it as 'in: T[n * nranks]'"))
      << o.diagnostics;
  auto rs = check(R"(collective c kind reducescatter
  buffers in: T[n * nranks], out: T[n * nranks]
{ step copy { out = in } })");
  EXPECT_TRUE(has(rs, "the output of a reducescatter holds n elements; declare it as 'out: T[n]'"))
      << rs.diagnostics;
}

// The ring all-gather of the stdlib, whose number of steps depends on nranks, written without
// the wait that orders a repetition after the one before: the message names the repeated step as
// a `wait` must.
TEST(KindsVerifier, RepeatedStepWithoutItsWaitIsRefused) {
  auto o = check(R"(collective c kind allgather
  buffers in: T[n], out: T[n * nranks]
  scratch relay[nranks]: T[n]
{
  step pass for s in 0..nranks - 1 {
    if s == 0 { out.block(rank) = in  put in -> ((rank + 1) % nranks).relay[rank] }
    if s != 0 {
      out.block((rank + nranks - s) % nranks) = relay[(rank + nranks - s) % nranks]
      put out.block((rank + nranks - s) % nranks) -> ((rank + 1) % nranks).relay[(rank + nranks - s) % nranks]
    }
  }
  step last { wait pass  out.block((rank + 1) % nranks) = relay[(rank + 1) % nranks] }
})");
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "wrote in step 'pass[s=0]', without waiting for it; add 'wait pass'"))
      << o.diagnostics;
  EXPECT_TRUE(has(o, "(nranks=3, n=1)")) << o.diagnostics;
}

TEST(KindsVerifier, RepetitionsMayNotDependOnN) {
  auto o = check(R"(collective c kind allreduce
  buffers in: T[n], out: T[n]
{ step copy for s in 0..n { out = in } })");
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "the repetitions of a step may depend on nranks but not on n"))
      << o.diagnostics;
}

TEST(KindsVerifier, OnlyARepeatedStepWaitsForItself) {
  auto o = check(R"(collective c kind allreduce
  buffers in: T[n], out: T[n]
{ step copy { wait copy  out = in } })");
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "only a repeated step ('step copy for s in LO..HI') may")) << o.diagnostics;
}

TEST(KindsVerifier, WaitsInsideAnIfAreRefused) {
  auto o = check(R"(collective c kind broadcast
  buffers in: T[n], out: T[n]
{ step copy { if rank == root { wait copy } out = in } })");
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(has(o, "'wait' must be a statement of the step itself")) << o.diagnostics;
}

TEST(KindsVerifier, PostconditionLayoutsFollowNccl) {
  // allgather: out[q*n + i] = in_q[i]
  EXPECT_EQ(*expectedOutput(CollectiveKind::AllGather, 0, 0, 4, 5, 12),
            (std::vector<Contribution>{{2, 2}}));
  // reducescatter: out[i] on rank r = op over q of in_q[r*n + i]
  EXPECT_EQ(*expectedOutput(CollectiveKind::ReduceScatter, 1, 0, 2, 5, 3),
            (std::vector<Contribution>{{0, 8}, {1, 8}}));
  // alltoall: out[q*n + i] on rank r = in_q[r*n + i]
  EXPECT_EQ(*expectedOutput(CollectiveKind::AllToAll, 3, 0, 4, 5, 7),
            (std::vector<Contribution>{{1, 17}}));
  EXPECT_EQ(*expectedOutput(CollectiveKind::Broadcast, 3, 2, 4, 5, 7),
            (std::vector<Contribution>{{2, 7}}));
  EXPECT_FALSE(expectedOutput(CollectiveKind::Reduce, 3, 2, 4, 5, 7));
  EXPECT_EQ(expectedOutput(CollectiveKind::Reduce, 2, 2, 2, 5, 7)->size(), 2u);
}

Expected<CompiledCollective> compileStdlib(const std::string& name, CompileOptions options,
                                           std::string& diagnostics) {
  auto spec = loadSpec(name);
  if (!spec)
    return spec.takeError();
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  out.flush();
  return compiled;
}

// The table the matrix tests follow says, for every stdlib spec, which strategies the compiler
// refuses (at 2 ranks and at more): each refusal must be one, with the reason at the sync clause,
// and every other strategy must compile.
TEST(KindsCompile, StdlibTableMatchesTheCompiler) {
  const std::vector<std::string> names = stdlibNames();
  for (const tests::StdlibSpecFacts& entry : tests::kStdlibSpecs) {
    const std::string name = entry.name;
    const tests::StdlibSpecFacts* facts = &entry;
    ASSERT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    for (SyncKind sync : tests::kImplementedStrategies)
      for (int nranks : {2, 4}) {
        CompileOptions options;
        options.nranks = nranks;
        options.root = 1;
        options.sync = sync;
        options.experimentalLL128 = true; // what ll128 would refuse, were it enabled
        std::string diagnostics;
        auto compiled = compileStdlib(name, options, diagnostics);
        const unsigned accepted = nranks == 2 ? facts->acceptedAtTwoRanks : 0;
        const bool refused = facts->refused & ~accepted & tests::bit(sync);
        EXPECT_EQ(bool(compiled), !refused)
            << name << " " << collc::name(sync) << " at " << nranks << " ranks\n"
            << diagnostics;
        if (compiled) {
          EXPECT_EQ(compiled->kind, facts->kind) << name;
        } else {
          consumeError(compiled.takeError());
          // Refused at the spec with the strategy's name and a reason, not as an internal error.
          EXPECT_NE(
              diagnostics.find(": error: sync strategy '" + std::string(collc::name(sync)) + "' "),
              std::string::npos)
              << diagnostics;
        }
      }
  }
}

TEST(KindsCompile, RootIsAConstantOfTheKernelAndIsChecked) {
  CompileOptions options;
  options.nranks = 4;
  options.root = 3;
  std::string diagnostics;
  auto compiled = compileStdlib("broadcast_direct", options, diagnostics);
  ASSERT_TRUE(bool(compiled)) << diagnostics;
  EXPECT_EQ(compiled->root, 3);
  EXPECT_NE(compiled->cudaSource.find("constexpr int kRoot = 3;"), std::string::npos);
  EXPECT_NE(compiled->cudaSource.find("if (rank == kRoot) {"), std::string::npos);
  // Two roots, two kernels: the root is in the source, so in the JIT cache key.
  options.root = 1;
  auto other = compileStdlib("broadcast_direct", options, diagnostics);
  ASSERT_TRUE(bool(other)) << diagnostics;
  EXPECT_NE(other->cudaSource, compiled->cudaSource);

  options.root = 4;
  diagnostics.clear();
  auto wrong = compileStdlib("reduce_direct", options, diagnostics);
  EXPECT_FALSE(bool(wrong));
  consumeError(wrong.takeError());
  EXPECT_NE(diagnostics.find("root 4 is not a rank of a 4-rank reduce; it must be 0..3"),
            std::string::npos)
      << diagnostics;

  // Kinds without a root ignore the option: the kernel is the same.
  CompileOptions plain;
  plain.root = 1;
  auto a = compileStdlib("allgather_direct", plain, diagnostics);
  auto b = compileStdlib("allgather_direct", CompileOptions{}, diagnostics);
  ASSERT_TRUE(a && b) << diagnostics;
  EXPECT_EQ(a->cudaSource, b->cudaSource);
  EXPECT_EQ(a->root, 0);
}

TEST(KindsCompile, BufferCountsFollowTheKind) {
  struct Expected {
    const char* spec;
    uint64_t in, out; // for n = 10 on 4 ranks
  };
  for (Expected e : {Expected{"allgather_direct", 10, 40}, Expected{"reducescatter_direct", 40, 10},
                     Expected{"alltoall_direct", 40, 40}, Expected{"broadcast_direct", 10, 10},
                     Expected{"reduce_direct", 10, 10}, Expected{"allreduce_ring", 10, 10}}) {
    CompileOptions options;
    options.nranks = 4;
    std::string diagnostics;
    auto compiled = compileStdlib(e.spec, options, diagnostics);
    ASSERT_TRUE(bool(compiled)) << diagnostics;
    EXPECT_EQ(compiled->inputCount(10), e.in) << e.spec;
    EXPECT_EQ(compiled->outputCount(10), e.out) << e.spec;
  }
}

// A ring's steps are unrolled per rank count: nranks - 1 reduce-scatter steps, nranks - 1
// all-gather steps and the last copy, each but the first opening with a barrier.
TEST(KindsCompile, RepeatedStepsUnrollPerRankCount) {
  for (int nranks : {2, 5, 8}) {
    CompileOptions options;
    options.nranks = nranks;
    std::string diagnostics;
    auto compiled = compileStdlib("allreduce_ring", options, diagnostics);
    ASSERT_TRUE(bool(compiled)) << diagnostics;
    EXPECT_EQ(int(compiled->stepNames.size()), 2 * (nranks - 1) + 1);
    EXPECT_EQ(compiled->stepNames.front(), "scatter[s=0]");
    EXPECT_EQ(compiled->stepNames.back(), "last");
    EXPECT_EQ(compiled->syncPointsPerCall, 2 * (nranks - 1));
    // `if s == 0` is resolved when unrolling: no branch on s is left in the kernel.
    EXPECT_EQ(compiled->cudaSource.find("v_s"), std::string::npos);
  }
}

} // namespace
} // namespace collc
