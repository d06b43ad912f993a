// Where a program keeps the chunks of chunk(n) apart (compiler/verify/ChunkGroups.h), the runs for
// large n alone decide every count. These tests check the premise on programs that keep chunks
// apart and on ones that do not, and compare, over every spec of this repository that splits n
// into chunks, the verdicts and messages of the proof with and without the premise.
#include "compiler/verify/ChunkGroups.h"

#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/ExpandSteps.h"
#include "compiler/Sema.h"
#include "compiler/Verifier.h"
#include "dsl/Parser.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <sstream>

namespace collc {
namespace {

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string stdlibText(const char* name) {
  return readFile(std::filesystem::path(COLLC_SOURCE_DIR) / "stdlib" /
                  (std::string(name) + ".coll"));
}

/// The spec's program (as Sema builds it) and why its steps at `nranks` mix chunks ("" if not).
std::string whyTheSpecMixes(const std::string& text, int nranks, bool inPlace = false) {
  llvm::SourceMgr sources;
  std::string diagnostics;
  llvm::raw_string_ostream out(diagnostics);
  Diagnostics diags(sources, out);
  auto ast = parseSpecText(diags, text, "spec.coll");
  auto program = ast ? analyze(*ast, diags) : nullptr;
  if (!program) {
    ADD_FAILURE() << "spec does not parse:\n" << diagnostics;
    return "?";
  }
  auto steps = expandRepeatedSteps(*program, nranks, diags);
  if (!steps) {
    ADD_FAILURE() << "steps do not expand:\n" << diagnostics;
    return "?";
  }
  std::vector<std::pair<ir::BufferId, ir::BufferId>> aliases;
  if (inPlace)
    aliases.push_back({program->output(), program->input()});
  return proof::whyChunksMix(*program, *steps, nranks, 0, aliases);
}

/// Why the program `sync` lowers the spec to at `nranks` mixes chunks ("" if not).
std::string whyTheLoweredMixes(const std::string& text, int nranks, SyncKind sync) {
  CompileOptions options;
  options.nranks = nranks;
  options.sync = sync;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto programs = lowerVariantPrograms(SpecSource{"spec.coll", text}, options, out);
  if (!programs) {
    consumeError(programs.takeError());
    ADD_FAILURE() << "does not lower:\n" << diagnostics;
    return "?";
  }
  const ir::Program& lowered = *programs->lowered;
  return proof::whyChunksMix(lowered, lowered.steps, nranks, 0, {});
}

TEST(ChunkGroups, TheStdlibsChunkedAllReducesKeepChunksApart) {
  for (const char* name : {"allreduce_twoshot", "allreduce_ring"}) {
    const std::string text = stdlibText(name);
    for (int nranks : {2, 3, 5, 8, 12}) {
      SCOPED_TRACE(std::string(name) + " at " + std::to_string(nranks) + " ranks");
      EXPECT_EQ(whyTheSpecMixes(text, nranks), "");
      EXPECT_EQ(whyTheSpecMixes(text, nranks, /*inPlace=*/true), "");
      EXPECT_EQ(whyTheLoweredMixes(text, nranks, SyncKind::Barrier), "");
    }
  }
  // The strategies that poll: a packet, a sentinel or a line add is counted per element too.
  for (SyncKind sync : {SyncKind::Sentinel, SyncKind::LL, SyncKind::LL128Atomic})
    for (int nranks : {2, 5, 8}) {
      SCOPED_TRACE(std::string(name(sync)) + " at " + std::to_string(nranks) + " ranks");
      EXPECT_EQ(whyTheLoweredMixes(stdlibText("allreduce_twoshot"), nranks, sync), "");
    }
}

TEST(ChunkGroups, WhatMixesChunksOrIsNotCoveredIsNamed) {
  // A kind whose postcondition relates an output element to inputs elsewhere (an AllGather's
  // out[q * n + i] holds in[i] of rank q).
  EXPECT_NE(whyTheSpecMixes(stdlibText("allgather_direct"), 4).find("kind's postcondition"),
            std::string::npos);
  // Whole buffers: the statement's elements are not one chunk's.
  EXPECT_NE(whyTheSpecMixes(stdlibText("allreduce_oneshot"), 4).find("is not a chunk of n"),
            std::string::npos);
  // Rows: a row statement reads a whole row, across chunks.
  const std::string rows = R"(collective rows kind allreduce
  ranks 2..2
  rows hidden
  buffers in: T[n], out: T[n], weight: T[hidden]
  scratch inbox[nranks]: T[chunk(n)]
  scratch sums: T[n]
  sync barrier
{
  step scatter { for p in peers { put in.chunk(p) -> p.inbox[rank] } }
  step reduce {
    wait scatter
    sums.chunk(rank) = reduce(in.chunk(rank), inbox[peers])
  }
  step norm {
    wait reduce
    out = rmsnorm(sums, weight)
  }
}
)";
  EXPECT_NE(whyTheSpecMixes(rows, 2).find("row statement"), std::string::npos)
      << whyTheSpecMixes(rows, 2);
  // A rank sends its chunk rank + 1 into the slot the owner of chunk rank reads: one slot holds
  // the elements of two chunks.
  const std::string shifted = R"(collective shifted kind allreduce
  ranks 3..3
  buffers in: T[n], out: T[n]
  scratch inbox[nranks]: T[chunk(n)]
  scratch result: T[n]
  sync barrier
{
  step scatter {
    for p in peers { put in.chunk(p) -> p.inbox[rank] }
    put in.chunk((rank + 2) % nranks) -> ((rank + 1) % nranks).inbox[rank]
  }
  step reduce {
    wait scatter
    out.chunk(rank) = reduce(in.chunk(rank), inbox[peers])
  }
}
)";
  EXPECT_NE(whyTheSpecMixes(shifted, 3).find("holds elements of chunks"), std::string::npos)
      << whyTheSpecMixes(shifted, 3);
  // A chunk-sized slot moved whole: its elements past a short chunk's length are touched too.
  const std::string wholeSlot = R"(collective whole_slot kind allreduce
  ranks 2..2
  buffers in: T[n], out: T[n]
  scratch inbox[nranks]: T[chunk(n)]
  scratch relay[nranks]: T[chunk(n)]
  sync barrier
{
  step scatter { for p in peers { put in.chunk(p) -> p.inbox[rank] } }
  step pass {
    wait scatter
    for p in peers { put inbox[p] -> p.relay[rank] }
  }
}
)";
  EXPECT_NE(whyTheSpecMixes(wholeSlot, 2).find("is not a chunk of n elements"), std::string::npos)
      << whyTheSpecMixes(wholeSlot, 2);
}

struct Verdict {
  bool ok = false;
  std::string diagnostics;
};

/// collc check's verdict on the spec (its own strategy; no report), with or without the premise.
Verdict check(const std::string& name, const std::string& text, bool chunkGroups) {
  std::optional<proof::ChunkGroupsOff> off;
  if (!chunkGroups)
    off.emplace();
  Verdict verdict;
  std::ostringstream out;
  Error error = checkSpec(SpecSource{name, text}, out);
  verdict.ok = !error;
  consumeError(std::move(error));
  verdict.diagnostics = out.str();
  return verdict;
}

TEST(ChunkGroups, EveryChunkedSpecHasTheVerdictOfEveryCount) {
  // Every spec here that splits n into chunks: the stdlib's, the accepted ones, and the bad ones
  // of tests/errors, whose messages name the smallest count that shows the rule broken.
  std::vector<std::pair<std::string, std::string>> specs;
  // The stdlib's up to 12 ranks: past that every count alone would take minutes.
  for (const char* name : {"allreduce_twoshot", "allreduce_ring"}) {
    std::string text = stdlibText(name);
    const size_t line = text.find("\n  ranks 2..");
    ASSERT_NE(line, std::string::npos) << name;
    text.replace(line, text.find('\n', line + 1) - line, "\n  ranks 2..12");
    specs.push_back({name, text});
  }
  for (const char* dir : {COLLC_ERROR_SPECS_DIR, COLLC_ACCEPTED_SPECS_DIR})
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string text = readFile(entry.path());
      if (entry.path().extension() == ".coll" && text.find("chunk(") != std::string::npos)
        specs.push_back({entry.path().filename().string(), text});
    }
  ASSERT_GE(specs.size(), size_t(6));
  int refused = 0;
  for (const auto& [name, text] : specs) {
    SCOPED_TRACE(name);
    const Verdict with = check(name, text, true);
    const Verdict without = check(name, text, false);
    EXPECT_EQ(with.ok, without.ok);
    EXPECT_EQ(with.diagnostics, without.diagnostics);
    refused += with.ok ? 0 : 1;
  }
  EXPECT_GE(refused, 3); // the comparison covers refusals, not only proofs
}

TEST(ChunkGroups, EveryStrategysProgramHasTheVerdictOfEveryCount) {
  // The two-shot, and one that puts every chunk twice (a polled element written twice in a call,
  // refused where peers poll), lowered with every strategy at 2 to 8 ranks, with the in-place
  // proofs: the same verdicts and messages with and without the premise.
  std::string twice = stdlibText("allreduce_twoshot");
  const std::string put = "for p in peers { put in.chunk(p) -> p.inbox[rank] }";
  const size_t at = twice.find(put);
  ASSERT_NE(at, std::string::npos);
  twice.replace(at, put.size(), put + "\n    " + put);
  int refused = 0, compared = 0;
  for (const std::string& text : {stdlibText("allreduce_twoshot"), twice})
    for (SyncKind sync :
         {SyncKind::Barrier, SyncKind::Sentinel, SyncKind::LL, SyncKind::LL128Atomic})
      for (int nranks : {2, 3, 5, 8}) {
        SCOPED_TRACE(std::string(name(sync)) + " at " + std::to_string(nranks) + " ranks" +
                     (text == twice ? ", every chunk put twice" : ""));
        auto lower = [&](bool chunkGroups, std::string& diagnostics) {
          std::optional<proof::ChunkGroupsOff> off;
          if (!chunkGroups)
            off.emplace();
          CompileOptions options;
          options.nranks = nranks;
          options.sync = sync;
          DiagnosticText out(diagnostics);
          auto programs = lowerVariantPrograms(SpecSource{"spec.coll", text}, options, out,
                                               /*proveAliases=*/true);
          if (!programs) {
            consumeError(programs.takeError());
            return std::string("refused");
          }
          return std::string(programs->inPlace ? "in place" : "not in place");
        };
        std::string with, without;
        const std::string verdict = lower(true, with);
        EXPECT_EQ(verdict, lower(false, without));
        EXPECT_EQ(with, without);
        refused += verdict == "refused";
        ++compared;
      }
  EXPECT_EQ(compared, 32);
  EXPECT_GE(refused, 9); // the twice-put one under sentinel, ll and ll128_atomic
}

TEST(ChunkGroups, TheLargeRunsAloneDecideAChunkedSpec) {
  // The two-shot at 12 ranks: two runs (the classes of n modulo 8 * nranks for large n) where
  // every count below them took a stretch of its own.
  auto runsOf = [](bool chunkGroups) {
    std::optional<proof::ChunkGroupsOff> off;
    if (!chunkGroups)
      off.emplace();
    llvm::SourceMgr sources;
    std::string diagnostics;
    llvm::raw_string_ostream out(diagnostics);
    Diagnostics diags(sources, out);
    auto ast = parseSpecText(diags, stdlibText("allreduce_twoshot"), "allreduce_twoshot.coll");
    auto program = ast ? analyze(*ast, diags) : nullptr;
    EXPECT_TRUE(program) << diagnostics;
    if (!program)
      return VerifyResult{};
    VerifyResult proof = verify(*program, diags, kDefaultVerifyWorkLimit, /*onlyRanks=*/12);
    EXPECT_TRUE(proof.ok) << diagnostics;
    return proof;
  };
  const VerifyResult with = runsOf(true), without = runsOf(false);
  EXPECT_EQ(with.runs, 2);
  EXPECT_GT(without.runs, 20);
  EXPECT_LT(with.work * 10, without.work);
}

} // namespace
} // namespace collc
