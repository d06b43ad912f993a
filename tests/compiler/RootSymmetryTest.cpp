// The proof across calls starts its sequences from root 0 alone where every root's calls are root
// 0's with the ranks renamed (compiler/verify/RootSymmetry.h): the stdlib's rooted specs are such,
// the verdict is the one of the sequences from every root, and a program whose roots are not
// renamings of each other (here one whose bug needs a first call with root 1) starts from every
// root, so the bug is still found.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/verify/AcrossCalls.h"

#include <gtest/gtest.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

namespace collc {
namespace {

/// A broadcast whose root 1 sends one step later than the other roots, and whose peers then read
/// the inbox after the call's last barrier: with one scratch copy, the next call's push may
/// overwrite it. Only sequences whose first call has root 1 show it.
const char* kLateRootOne = R"(collective late_root_one kind broadcast
  ranks 2..8
  buffers in: T[n], out: T[n]
  scratch inbox: T[n]
  sync barrier
  launch blocks=8 threads=512 vector=16
{
  step push {
    if root != 1 {
      if rank == root {
        for p in peers { put in -> p.inbox }
        out = in
      }
    }
  }
  step receive {
    wait push
    if root != 1 { if rank != root { out = inbox } }
    if root == 1 {
      if rank == root {
        for p in peers { put in -> p.inbox }
        out = in
      }
    }
  }
  step late {
    wait receive
    if root == 1 { if rank != root { out = inbox } }
  }
}
)";

/// The same data flow as broadcast_direct, but the root sends to the ranks in their order rather
/// than from the next rank on: each root's events come in another order, no renaming of root 0's.
const char* kAbsoluteOrder = R"(collective absolute_order kind broadcast
  ranks 2..8
  buffers in: T[n], out: T[n]
  scratch inbox: T[n]
  sync barrier
  launch blocks=8 threads=512 vector=16
{
  step push {
    if rank == root {
      for p in ranks { if p != rank { put in -> p.inbox } }
      out = in
    }
  }
  step receive {
    wait push
    if rank != root { out = inbox }
  }
}
)";

struct Outcome {
  bool proved = false;
  AcrossCallsStats stats;
  std::string diagnostics;
};

Outcome prove(const SpecSource& spec, int nranks, int copies, bool rootSymmetry) {
  CompileOptions options;
  options.nranks = nranks;
  std::string text;
  DiagnosticText out(text);
  auto programs = lowerVariantPrograms(spec, options, out);
  if (!programs) {
    consumeError(programs.takeError());
    ADD_FAILURE() << spec.bufferName << " does not lower at " << nranks << " ranks:\n" << text;
    return {};
  }
  CallRotation rotation = rotationOf(*programs->lowered);
  if (copies > 0)
    rotation.copies = copies;
  // The program's locations point into text the compile has freed: messages come without them.
  llvm::SourceMgr sources;
  Outcome outcome;
  llvm::raw_string_ostream stream(outcome.diagnostics);
  Diagnostics diags(sources, stream);
  AcrossCallsOptions proofOptions;
  proofOptions.rootSymmetry = rootSymmetry;
  outcome.proved =
      proveAcrossCalls(*programs->lowered, nranks, rotation, diags, &outcome.stats, proofOptions);
  return outcome;
}

SpecSource stdlib(const char* name) {
  auto spec = loadSpec(name);
  EXPECT_TRUE(bool(spec)) << name;
  if (!spec) {
    consumeError(spec.takeError());
    return {};
  }
  return *spec;
}

TEST(RootSymmetry, StdlibRootedSpecsStartFromRootZeroWithTheSameVerdict) {
  for (const char* name : {"broadcast_direct", "reduce_direct"})
    for (int nranks : {2, 3, 5, 8}) {
      const SpecSource spec = stdlib(name);
      for (int copies : {0, 1}) { // the kernel's rotation, and one copy, which is refused
        const Outcome fromZero = prove(spec, nranks, copies, true);
        const Outcome fromEvery = prove(spec, nranks, copies, false);
        SCOPED_TRACE(std::string(name) + " at " + std::to_string(nranks) + " ranks, " +
                     (copies ? "one copy" : "the kernel's copies"));
        EXPECT_EQ(fromZero.proved, copies == 0) << fromZero.diagnostics;
        EXPECT_EQ(fromEvery.proved, fromZero.proved) << fromEvery.diagnostics;
        if (copies == 0) {
          // A sequence starts from root 0's classes alone: about nranks times fewer calls.
          EXPECT_EQ(fromZero.stats.firstCallRoots, 1);
          EXPECT_EQ(fromEvery.stats.firstCallRoots, nranks);
          EXPECT_LT(fromZero.stats.callsRun, fromEvery.stats.callsRun);
        } else {
          EXPECT_NE(fromZero.diagnostics.find("call 2's write of"), std::string::npos)
              << fromZero.diagnostics;
          EXPECT_NE(fromZero.diagnostics.find("(root 0)"), std::string::npos)
              << fromZero.diagnostics;
        }
      }
    }
}

TEST(RootSymmetry, ARootThatIsNoRenamingOfRootZeroStartsSequencesToo) {
  const SpecSource spec{"late_root_one.coll", kLateRootOne};
  for (int nranks : {3, 4}) {
    // With the kernel's two copies the next call's first barrier closes the late reads.
    const Outcome proved = prove(spec, nranks, 0, true);
    EXPECT_TRUE(proved.proved) << proved.diagnostics;
    EXPECT_EQ(proved.stats.firstCallRoots, nranks);
    // With one copy only a first call with root 1 reads the inbox after its last barrier, where
    // the next call's push may overwrite it: the proof must start from root 1 to see it.
    const Outcome refused = prove(spec, nranks, 1, true);
    EXPECT_FALSE(refused.proved);
    EXPECT_NE(refused.diagnostics.find("call 2's write of 'inbox'"), std::string::npos)
        << refused.diagnostics;
    EXPECT_NE(refused.diagnostics.find("calls with n = 1 (root 1)"), std::string::npos)
        << refused.diagnostics;
  }
}

TEST(RootSymmetry, EventsInAnotherOrderAreNoRenaming) {
  const SpecSource spec{"absolute_order.coll", kAbsoluteOrder};
  const Outcome outcome = prove(spec, 4, 0, true);
  EXPECT_TRUE(outcome.proved) << outcome.diagnostics;
  EXPECT_EQ(outcome.stats.firstCallRoots, 4);
}

} // namespace
} // namespace collc
