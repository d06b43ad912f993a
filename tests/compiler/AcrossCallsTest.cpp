// The proof across consecutive calls (compiler/verify/AcrossCalls.h): every stdlib spec under
// every strategy it compiles with passes it, and each strategy with a broken rotation (too few
// scratch copies, a flag that repeats too early) is refused with a message naming both calls.
#include "compiler/verify/AcrossCalls.h"

#include "abi/collc_abi.h"
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/verify/ChunkGroups.h"
#include "tests/StdlibApplicability.h"

#include <gtest/gtest.h>
#include <iostream>
#include <llvm/Support/raw_ostream.h>
#include <optional>

namespace collc {
namespace {

struct Compiled {
  bool ok = false;
  std::string diagnostics;
};

Compiled compile(const std::string& name, SyncKind sync, int nranks,
                 std::function<void(CallRotation&)> breakRotation = {}) {
  auto spec = loadSpec(name);
  if (!spec) {
    consumeError(spec.takeError());
    ADD_FAILURE() << "no stdlib spec " << name;
    return {};
  }
  CompileOptions options;
  options.sync = sync;
  options.nranks = nranks;
  options.formatSource = false;
  options.experimentalLL128 = true;
  options.breakRotationForTests = std::move(breakRotation);
  Compiled result;
  DiagnosticText out(result.diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  result.ok = bool(compiled);
  if (!compiled)
    consumeError(compiled.takeError());
  return result;
}

void oneCopy(CallRotation& rotation) {
  rotation.copies = 1;
}

// ---------------------------------------------------------------- every stdlib variant

/// The lowered program of a stdlib variant (its compile ran the proofs), or nullptr after a
/// failure naming it.
std::shared_ptr<const ir::Program> lowerStdlib(const tests::StdlibSpecFacts& facts, SyncKind sync,
                                               int nranks) {
  auto spec = loadSpec(facts.name);
  if (!spec) {
    ADD_FAILURE() << toString(spec.takeError());
    return nullptr;
  }
  CompileOptions options;
  options.sync = sync;
  options.nranks = nranks;
  options.experimentalLL128 = true;
  std::string text;
  DiagnosticText out(text);
  auto programs = lowerVariantPrograms(*spec, options, out);
  if (!programs) {
    consumeError(programs.takeError());
    ADD_FAILURE() << facts.name << " " << name(sync) << " " << nranks << "\n" << text;
    return nullptr;
  }
  return programs->lowered;
}

TEST(AcrossCalls, EveryStdlibSpecAndStrategyProves) {
  int proved = 0;
  int64_t largest = 0;
  std::string largestVariant;
  for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs)
    for (SyncKind sync : tests::kImplementedStrategies) {
      for (int nranks : {2, 3, 4, 8}) {
        if (!tests::specAccepts(facts, sync, ReduceOp::Sum, nranks))
          continue;
        auto lowered = lowerStdlib(facts, sync, nranks);
        ASSERT_TRUE(lowered);
        // The compilation ran the proof; run it again for what it covered.
        llvm::SourceMgr sources;
        std::string printed;
        llvm::raw_string_ostream stream(printed);
        Diagnostics diags(sources, stream);
        AcrossCallsStats stats;
        EXPECT_TRUE(proveAcrossCalls(*lowered, nranks, rotationOf(*lowered), diags, &stats))
            << facts.name << " " << name(sync) << " " << nranks;
        EXPECT_EQ(stats.calls, lowered->scratchCopies + 1);
        EXPECT_GE(stats.configurations, 1);
        EXPECT_GE(stats.sequences, 1);
        EXPECT_LE(stats.callsRun, stats.sequences * stats.calls);
        if (stats.callsRun > largest) {
          largest = stats.callsRun;
          largestVariant = std::string(facts.name) + " " + std::string(name(sync)) + " " +
                           std::to_string(nranks) + " ranks";
        }
        ++proved;
      }
    }
  EXPECT_GE(proved, 4 * 20); // every spec with barrier, the mutual ones with four more
  std::cout << "most calls run for one variant: " << largest << " (" << largestVariant << ")\n";
}

TEST(AcrossCalls, ShortcutsGiveTheVerdictOfTheClasses) {
  // Every stdlib variant, with the kernel's rotation and with one copy (refused by most): the
  // proof that first tries the one class a root that asks more than any class, then (where the
  // program keeps chunks apart) the events of chunks 0 and k for every k, then the classes of how
  // many chunks hold elements, reaches the verdict, and the message, of the proof that collects
  // and runs the classes of every count; and so does it with the chunk pairs left out, and with
  // every pair run rather than taken as pair 1 renamed.
  int covered = 0, byPairs = 0, byChunks = 0, compared = 0, renamedPairs = 0;
  for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs)
    for (SyncKind sync : tests::kImplementedStrategies)
      for (int nranks : {2, 3, 5, 8}) {
        if (!tests::specAccepts(facts, sync, ReduceOp::Sum, nranks))
          continue;
        auto lowered = lowerStdlib(facts, sync, nranks);
        ASSERT_TRUE(lowered);
        for (int copies : {0, 1}) {
          SCOPED_TRACE(std::string(facts.name) + " " + std::string(name(sync)) + " " +
                       std::to_string(nranks) + " ranks, " + (copies ? "one copy" : "its copies"));
          CallRotation rotation = rotationOf(*lowered);
          if (copies)
            rotation.copies = copies;
          auto prove = [&](bool shortcuts, bool pairs, std::string& printed,
                           AcrossCallsStats& stats, bool renaming = true) {
            std::optional<proof::ChunkGroupsOff> off;
            if (!shortcuts)
              off.emplace();
            llvm::SourceMgr sources;
            llvm::raw_string_ostream stream(printed);
            Diagnostics diags(sources, stream);
            AcrossCallsOptions proofOptions;
            proofOptions.coverFirst = shortcuts;
            proofOptions.chunkPairs = pairs;
            proofOptions.pairRenaming = renaming;
            return proveAcrossCalls(*lowered, nranks, rotation, diags, &stats, proofOptions);
          };
          std::string fast, noPairs, every, everyPair;
          AcrossCallsStats fastStats, noPairsStats, everyStats, everyPairStats;
          const bool fastProved = prove(true, true, fast, fastStats);
          const bool everyPairProved = prove(true, true, everyPair, everyPairStats, false);
          const bool noPairsProved = prove(true, false, noPairs, noPairsStats);
          const bool classesProved = prove(false, false, every, everyStats);
          EXPECT_EQ(fastProved, classesProved);
          EXPECT_EQ(everyPairProved, classesProved);
          EXPECT_EQ(everyPair, every);
          EXPECT_EQ(everyPairStats.coveredByChunkPairs, fastStats.coveredByChunkPairs);
          EXPECT_EQ(everyPairStats.renamedPairs, 0);
          // Renamed pairs are taken only where the pairs decide.
          if (fastStats.renamedPairs > 0) {
            EXPECT_TRUE(fastStats.coveredByChunkPairs);
          }
          EXPECT_EQ(noPairsProved, classesProved);
          EXPECT_EQ(fast, every);
          EXPECT_EQ(noPairs, every);
          EXPECT_FALSE(everyStats.coveredByOneClass || everyStats.coveredByChunkPairs ||
                       everyStats.coveredByChunkClasses);
          EXPECT_FALSE(noPairsStats.coveredByChunkPairs);
          // A shortcut that passes is itself a proof: the classes must pass then.
          if (fastStats.coveredByOneClass || fastStats.coveredByChunkPairs ||
              noPairsStats.coveredByChunkClasses) {
            EXPECT_TRUE(classesProved);
          }
          covered += fastStats.coveredByOneClass ? 1 : 0;
          byPairs += fastStats.coveredByChunkPairs ? 1 : 0;
          byChunks += noPairsStats.coveredByChunkClasses ? 1 : 0;
          // The two-shot's pairs 2 .. nranks - 1 are pair 1 with ranks renamed.
          if (fastStats.coveredByChunkPairs && std::string(facts.name) == "allreduce_twoshot") {
            EXPECT_EQ(fastStats.renamedPairs, nranks - 2);
          }
          renamedPairs += fastStats.renamedPairs;
          ++compared;
        }
      }
  EXPECT_GE(compared, 100);
  EXPECT_GE(covered, 20); // barrier variants with their copies, at least
  // The two-shot under sentinel, ll and ll128_atomic at 2, 3, 5 and 8 ranks, each way.
  EXPECT_GE(byPairs, 12);
  EXPECT_GE(byChunks, 12);
  EXPECT_GE(renamedPairs, 3 * (1 + 3 + 6)); // the two-shot at 3, 5 and 8 ranks, its copies
  EXPECT_LT(covered + byPairs, compared);
}

TEST(AcrossCalls, ChunkPairsDecideTheTwoShotPastTheClassesReach) {
  // At 24 ranks the classes of how many chunks hold elements run about 2 * 24^2 calls of 24^3
  // work for each strategy that polls; the pairs of chunks run pair 1, a few calls, and take the
  // 22 others as its renamings.
  for (SyncKind sync : {SyncKind::Sentinel, SyncKind::LL, SyncKind::LL128Atomic}) {
    SCOPED_TRACE(std::string(name(sync)));
    const tests::StdlibSpecFacts* twoShot = nullptr;
    for (const tests::StdlibSpecFacts& facts : tests::kStdlibSpecs)
      if (std::string(facts.name) == "allreduce_twoshot")
        twoShot = &facts;
    ASSERT_NE(twoShot, nullptr);
    auto lowered = lowerStdlib(*twoShot, sync, 24);
    ASSERT_TRUE(lowered);
    for (int copies : {0, 1}) {
      CallRotation rotation = rotationOf(*lowered);
      if (copies)
        rotation.copies = copies;
      llvm::SourceMgr sources;
      std::string printed;
      llvm::raw_string_ostream stream(printed);
      Diagnostics diags(sources, stream);
      AcrossCallsStats stats;
      const bool proved = proveAcrossCalls(*lowered, 24, rotation, diags, &stats);
      // Its copies: the pairs prove it, pair 1 run and the others its renamings. One copy:
      // refused, by the classes that report it.
      EXPECT_EQ(proved, copies == 0) << printed;
      EXPECT_EQ(stats.coveredByChunkPairs, copies == 0);
      EXPECT_EQ(stats.renamedPairs, copies == 0 ? 22 : 0);
      if (copies) {
        EXPECT_NE(printed.find("across calls"), std::string::npos) << printed;
      }
    }
  }
}

// ---------------------------------------------------------------- broken rotations

TEST(AcrossCalls, BarrierWithOneCopyIsRefused) {
  // The push of call 2 may reach a peer's slot while the peer still reduces call 1's.
  Compiled c = compile("allreduce_oneshot", SyncKind::Barrier, 2, oneCopy);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.diagnostics.find("across calls: call 2's write of 'slot'"), std::string::npos)
      << c.diagnostics;
  EXPECT_NE(c.diagnostics.find("while call 1's read on rank"), std::string::npos) << c.diagnostics;
  EXPECT_NE(c.diagnostics.find("note: call 1's read here"), std::string::npos) << c.diagnostics;
}

TEST(AcrossCalls, TwoShotUnderBarrierNeedsNoSecondCopy) {
  // Its second barrier closes every read of 'inbox' before the next call's push, and its first
  // every read of 'result' before the next call's sends: one copy would do, and the proof says so.
  EXPECT_TRUE(compile("allreduce_twoshot", SyncKind::Barrier, 3, oneCopy).ok);
}

TEST(AcrossCalls, LLWithOneCopyIsRefused) {
  Compiled c = compile("allreduce_oneshot", SyncKind::LL, 2, oneCopy);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.diagnostics.find("across calls: call 2's write of 'slot'"), std::string::npos)
      << c.diagnostics;
  EXPECT_NE(c.diagnostics.find("call 1's read here"), std::string::npos) << c.diagnostics;
}

TEST(AcrossCalls, LLWhoseFlagWrapsTooEarlyIsRefused) {
  // Flags 1, 2, 1, ...: call 3 uses call 1's copy and flag, and may be smaller than call 1.
  Compiled c = compile("allgather_direct", SyncKind::LL, 2, [](CallRotation& rotation) {
    rotation.packetFlag = [](uint64_t epoch) { return 1 + (epoch - 1) % 2; };
  });
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.diagnostics.find("across calls: call 3's poll of 'slot' can be satisfied by call "
                               "1's packet: both use scratch copy 1 and carry flag 1"),
            std::string::npos)
      << c.diagnostics;
}

TEST(AcrossCalls, LLWhoseFlagWrapsToZeroIsRefused) {
  Compiled c = compile("allgather_direct", SyncKind::LL, 2, [](CallRotation& rotation) {
    rotation.packetFlag = [](uint64_t epoch) { return epoch % 3; };
  });
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.diagnostics.find("call 3's poll of 'slot' can be satisfied by the zeros scratch "
                               "starts with"),
            std::string::npos)
      << c.diagnostics;
}

TEST(AcrossCalls, LLRunsAcrossTheLastCallItRuns) {
  // The kernel's packets carry the epoch's low 32 bits, and it refuses the calls past
  // COLLC_LAST_PACKET_EPOCH = 2^32 - 1, whose packets would repeat a flag: runs that reach the
  // last call and past it are proved, as are runs that start past it (they run nothing).
  for (uint64_t first : {(uint64_t(1) << 32) - 3, (uint64_t(1) << 32) - 2,
                         uint64_t(COLLC_LAST_PACKET_EPOCH), uint64_t(1) << 32})
    for (SyncKind sync : {SyncKind::LL, SyncKind::LL128Atomic}) {
      const char* spec = sync == SyncKind::LL ? "allgather_direct" : "allreduce_twoshot";
      Compiled c =
          compile(spec, sync, 2, [first](CallRotation& rotation) { rotation.firstEpoch = first; });
      EXPECT_TRUE(c.ok) << "first call " << first << ": " << c.diagnostics;
    }
}

TEST(AcrossCalls, LLThatRunsCallTwoToThe32IsRefused) {
  // A kernel that refused one call later: call 2^32's packets carry flag 0, which a packet of its
  // copy that no call wrote carries too.
  Compiled at = compile("allgather_direct", SyncKind::LL, 2, [](CallRotation& rotation) {
    rotation.firstEpoch = (uint64_t(1) << 32) - 2;
    rotation.lastEpoch = uint64_t(1) << 32;
  });
  EXPECT_FALSE(at.ok);
  EXPECT_NE(at.diagnostics.find("call 4294967296's poll of 'slot' can be satisfied by the zeros"),
            std::string::npos)
      << at.diagnostics;
}

TEST(AcrossCalls, SentinelWithOneCopyIsRefused) {
  Compiled c = compile("allreduce_oneshot", SyncKind::Sentinel, 2, oneCopy);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.diagnostics.find("across calls: call 2's "), std::string::npos) << c.diagnostics;
  EXPECT_NE(c.diagnostics.find("call 1's "), std::string::npos) << c.diagnostics;
}

TEST(AcrossCalls, LL128AtomicWithOneCopyIsRefused) {
  Compiled c = compile("allreduce_twoshot", SyncKind::LL128Atomic, 2, oneCopy);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.diagnostics.find("across calls: call 2's "), std::string::npos) << c.diagnostics;
  EXPECT_NE(c.diagnostics.find("call 1's "), std::string::npos) << c.diagnostics;
}

TEST(AcrossCalls, LL128WhoseFlagWrapsTooEarlyIsRefused) {
  Compiled c = compile("allgather_direct", SyncKind::LL128, 2, [](CallRotation& rotation) {
    rotation.lineFlag = [](uint64_t epoch) { return 1 + (epoch - 1) % 2; };
  });
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.diagnostics.find("call 3's poll of 'slot' can be satisfied by call 1's line"),
            std::string::npos)
      << c.diagnostics;
}

TEST(AcrossCalls, RotationIsTheKernels) {
  // rotationOf says what the kernel does: its copies, unsigned(epoch) in packets, the epoch in
  // lines. The kernel text is checked for the same, so that neither drifts alone.
  auto spec = loadSpec("allgather_direct");
  ASSERT_TRUE(bool(spec));
  for (SyncKind sync : {SyncKind::LL, SyncKind::LL128, SyncKind::Sentinel}) {
    CompileOptions options;
    options.sync = sync;
    options.formatSource = false;
    options.experimentalLL128 = true;
    std::string text;
    DiagnosticText out(text);
    auto compiled = compileCollective(*spec, options, out);
    ASSERT_TRUE(bool(compiled)) << text;
    auto programs = lowerVariantPrograms(*spec, options, out);
    ASSERT_TRUE(bool(programs)) << text;
    const CallRotation rotation = rotationOf(*programs->lowered);
    EXPECT_EQ(rotation.copies, compiled->scratchCopies);
    const std::string& cuda = compiled->cudaSource;
    EXPECT_NE(cuda.find("const u64 copy = epoch % kScratchCopies;"), std::string::npos);
    // A kernel with packets refuses the calls past the last one the proof runs; no other does.
    const std::string refusal = "if (epoch > COLLC_LAST_PACKET_EPOCH) {\n"
                                "  refuse_call_past_last(params, epoch);\n"
                                "  return;\n"
                                "}\n"
                                "const unsigned flag = unsigned(epoch);";
    if (sync == SyncKind::LL) {
      EXPECT_NE(cuda.find(refusal), std::string::npos) << cuda;
      EXPECT_EQ(rotation.packetFlag((uint64_t(1) << 32) + 5), 5u);
      EXPECT_EQ(rotation.lastEpoch, uint64_t(COLLC_LAST_PACKET_EPOCH));
      EXPECT_EQ(uint64_t(COLLC_LAST_PACKET_EPOCH), (uint64_t(1) << 32) - 1);
    } else {
      EXPECT_EQ(cuda.find("COLLC_LAST_PACKET_EPOCH) {"), std::string::npos);
      EXPECT_EQ(rotation.lastEpoch, UINT64_MAX);
    }
    if (sync == SyncKind::LL128) {
      EXPECT_NE(cuda.find("ll128_store("), std::string::npos);
      EXPECT_NE(cuda.find(", epoch);"), std::string::npos);
      EXPECT_EQ(rotation.lineFlag((uint64_t(1) << 32) + 5), (uint64_t(1) << 32) + 5);
    }
  }
}

} // namespace
} // namespace collc
