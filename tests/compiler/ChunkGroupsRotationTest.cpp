// Where the chunks of an AllReduce are rotations of chunk 0 (compiler/verify/ChunkGroups.h), the
// runs for large n make chunk 0's statements alone. These tests check the rotation check on
// programs whose chunks are rotations and on ones whose are not, and compare the verdicts,
// messages and facts of the proof with and without the runs of chunk 0 alone: for every stdlib
// AllReduce and strategy, and for specs with planted bugs.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/ExpandSteps.h"
#include "compiler/Sema.h"
#include "compiler/Verifier.h"
#include "compiler/verify/ChunkGroups.h"
#include "compiler/verify/Simulation.h"
#include "dsl/Parser.h"
#include "tests/SpecForRanks.h"
#include "tests/StdlibStrategies.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <optional>
#include <sstream>

namespace collc {
namespace {

using Aliases = std::vector<std::pair<ir::BufferId, ir::BufferId>>;

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string stdlibText(const std::string& name) {
  return readFile(std::filesystem::path(COLLC_SOURCE_DIR) / "stdlib" / (name + ".coll"));
}

/// The stdlib spec, declaring `nranks` alone where its range does not (tests/SpecForRanks.h).
std::string stdlibTextFor(const std::string& name, int nranks) {
  const std::string text = stdlibText(name);
  return tests::declaresRanks(text, nranks) ? text : tests::specTextForRanks(text, nranks);
}

/// A spec as Sema builds it, its steps expanded for `nranks` (null program after a failure).
struct Parsed {
  llvm::SourceMgr sources;
  std::unique_ptr<ir::Program> program;
  std::vector<ir::Step> steps;
};

std::unique_ptr<Parsed> parse(const std::string& text, int nranks) {
  auto parsed = std::make_unique<Parsed>();
  std::string diagnostics;
  llvm::raw_string_ostream out(diagnostics);
  Diagnostics diags(parsed->sources, out);
  auto ast = parseSpecText(diags, text, "spec.coll");
  parsed->program = ast ? analyze(*ast, diags) : nullptr;
  auto steps =
      parsed->program ? expandRepeatedSteps(*parsed->program, nranks, diags) : std::nullopt;
  if (!steps) {
    ADD_FAILURE() << "spec does not parse or expand:\n" << diagnostics;
    parsed->program = nullptr;
    return parsed;
  }
  parsed->steps = std::move(*steps);
  return parsed;
}

/// Why the spec's chunks at `nranks` are no rotations of chunk 0 ("" if they are).
std::string whyTheSpecIsNoRotation(const std::string& text, int nranks, bool inPlace = false,
                                   proof::ChunkRotation* rotation = nullptr) {
  auto parsed = parse(text, nranks);
  if (!parsed->program)
    return "?";
  Aliases aliases;
  if (inPlace)
    aliases.push_back({parsed->program->output(), parsed->program->input()});
  return proof::whyChunksAreNotRotations(*parsed->program, parsed->steps, nranks, aliases,
                                         rotation);
}

/// The variant's programs (its compile ran the proofs), or nullopt with the diagnostics.
std::optional<VariantPrograms> lowered(const std::string& text, int nranks, SyncKind sync,
                                       std::string& diagnostics, bool proveAliases = false,
                                       DType dtype = DType::F32) {
  CompileOptions options;
  options.nranks = nranks;
  options.sync = sync;
  options.dtype = dtype;
  options.experimentalLL128 = true;
  DiagnosticText out(diagnostics);
  auto programs = lowerVariantPrograms(SpecSource{"spec.coll", text}, options, out, proveAliases);
  if (!programs) {
    consumeError(programs.takeError());
    return std::nullopt;
  }
  return std::move(*programs);
}

/// Why the program `sync` lowers the spec to at `nranks` is no rotation ("" if it is).
std::string whyTheLoweredIsNoRotation(const std::string& text, int nranks, SyncKind sync,
                                      proof::ChunkRotation* rotation = nullptr) {
  std::string diagnostics;
  auto programs = lowered(text, nranks, sync, diagnostics);
  if (!programs) {
    ADD_FAILURE() << "does not lower:\n" << diagnostics;
    return "?";
  }
  const ir::Program& program = *programs->lowered;
  return proof::whyChunksAreNotRotations(program, program.steps, nranks, {}, rotation);
}

/// What a run of chunk 0 alone is given: a chunk a statement, chunk 0 as often as each other,
/// and the earliest image of each of chunk 0's statements, never after the statement itself.
void expectWellFormed(const proof::ChunkRotation& rotation, int nranks) {
  std::vector<int> zeros;
  std::vector<size_t> perChunk(size_t(nranks), 0);
  for (size_t i = 0; i < rotation.chunks.size(); ++i) {
    ASSERT_GE(rotation.chunks[i], 0);
    ASSERT_LT(rotation.chunks[i], nranks);
    ++perChunk[size_t(rotation.chunks[i])];
    if (rotation.chunks[i] == 0)
      zeros.push_back(int(i));
  }
  for (size_t count : perChunk)
    EXPECT_EQ(count, zeros.size());
  ASSERT_EQ(rotation.firstImage.size(), zeros.size());
  for (size_t j = 0; j < zeros.size(); ++j)
    EXPECT_LE(rotation.firstImage[j], zeros[j]);
}

TEST(ChunkGroupsRotation, TheStdlibsChunkedAllReducesAreRotations) {
  for (const char* name : {"allreduce_twoshot", "allreduce_ring"}) {
    for (int nranks : {2, 3, 5, 8, 16}) {
      const std::string text = stdlibTextFor(name, nranks);
      SCOPED_TRACE(std::string(name) + " at " + std::to_string(nranks) + " ranks");
      proof::ChunkRotation rotation;
      EXPECT_EQ(whyTheSpecIsNoRotation(text, nranks, false, &rotation), "");
      expectWellFormed(rotation, nranks);
      EXPECT_EQ(whyTheSpecIsNoRotation(text, nranks, /*inPlace=*/true), "");
      EXPECT_EQ(whyTheLoweredIsNoRotation(text, nranks, SyncKind::Barrier, &rotation), "");
      expectWellFormed(rotation, nranks);
    }
  }
  // The strategies that poll: their packets, flags and lines are per element too.
  for (SyncKind sync : {SyncKind::Sentinel, SyncKind::LL, SyncKind::LL128, SyncKind::LL128Atomic})
    for (int nranks : {2, 3, 5, 8, 16}) {
      SCOPED_TRACE(std::string(name(sync)) + " at " + std::to_string(nranks) + " ranks");
      EXPECT_EQ(whyTheLoweredIsNoRotation(stdlibTextFor("allreduce_twoshot", nranks), nranks, sync),
                "");
    }
}

/// The two-shot (3 ranks) with `scatter` as its first step's body.
std::string twoShotScattering(const std::string& scatter) {
  return R"(collective c kind allreduce
  ranks 3..3
  buffers in: T[n], out: T[n]
  scratch inbox[nranks]: T[chunk(n)]
  scratch copy: T[n]
  scratch result: T[n]
  sync barrier
{
  step scatter {
)" + scatter +
         R"(
  }
  step reduce {
    wait scatter
    out.chunk(rank) = reduce(in.chunk(rank), inbox[peers])
    for p in peers { put out.chunk(rank) -> p.result.chunk(rank) }
  }
  step gather {
    wait reduce
    for q in peers { out.chunk(q) = result.chunk(q) }
  }
}
)";
}

TEST(ChunkGroupsRotation, ChunksThatAreNoRotationsAreNamed) {
  auto expectWhy = [](const std::string& text, int nranks, const std::string& part) {
    const std::string why = whyTheSpecIsNoRotation(text, nranks);
    EXPECT_NE(why.find(part), std::string::npos) << why;
  };
  // Other kinds: a root would have to move with the ranks.
  expectWhy(stdlibText("broadcast_direct"), 4, "AllReduce only");
  // Chunks not kept apart: the premise's reason.
  expectWhy(stdlibText("allreduce_oneshot"), 4, "is not a chunk of n elements");
  // Kept apart, but the gather skips chunk nranks - 1: chunk 0 reaches every rank, chunk 4 not.
  const std::string skip =
      readFile(std::filesystem::path(COLLC_ERROR_SPECS_DIR) / "skip_last_chunk.coll");
  const auto skipAt5 = parse(skip, 5);
  ASSERT_TRUE(skipAt5->program);
  ASSERT_EQ(proof::whyChunksMix(*skipAt5->program, skipAt5->steps, 5, 0, {}), "");
  expectWhy(skip, 5, "chunk 4 has 9 statements, chunk 0 13");
  // Rank 0 alone copies chunk 1 once more.
  const std::string scatter = "    for p in peers { put in.chunk(p) -> p.inbox[rank] }\n";
  expectWhy(twoShotScattering(scatter + "    if rank == 0 { copy.chunk(1) = in.chunk(1) }"), 3,
            "chunk 1 has 8 statements, chunk 0 7");
  // Chunk k's copy goes to rank 2k, not to rank k.
  expectWhy(twoShotScattering(scatter +
                              "    put in.chunk(rank) -> ((2 * rank) % nranks).copy.chunk(rank)"),
            3, "rank 2's buffer rather than rank 1's");
  // A sender's slot at (rank + p): chunk 0 of rank 1 in slot 1, chunk 1 of rank 2 in slot 0.
  expectWhy(twoShotScattering("    for p in peers { put in.chunk(p) -> p.inbox[(rank + p) % "
                              "nranks] }"),
            3, "slot 0 for slot 1");
  // The same put written twice, for rank 0 and for the others: another statement.
  expectWhy(
      twoShotScattering("    if rank == 0 { for p in peers { put in.chunk(p) -> p.inbox[rank] } }\n"
                        "    if rank != 0 { for p in peers { put in.chunk(p) -> p.inbox[rank] } }"),
      3, "another statement");
}

TEST(ChunkGroupsRotation, ABarrierOfSomeRanksAloneIsNoRotation) {
  // The lowered two-shot with its gather step's barrier run by every rank but 0: rank 0's
  // statements of chunk 0 come after no barrier, rank 1's of chunk 1 after one.
  std::string diagnostics;
  auto programs = lowered(stdlibText("allreduce_twoshot"), 3, SyncKind::Barrier, diagnostics);
  ASSERT_TRUE(programs) << diagnostics;
  ir::Program program = *programs->lowered;
  ASSERT_EQ(proof::whyChunksAreNotRotations(program, program.steps, 3, {}), "");
  bool moved = false;
  for (ir::Step& step : program.steps)
    for (ir::Stmt& stmt : step.body)
      if (!moved && step.name == "gather" && stmt->kind == ir::StmtKind::Barrier) {
        stmt = std::make_shared<ir::If>(
            stmt->loc,
            ir::ExprNode::binary(ir::ExprKind::Ne, ir::ExprNode::rank(), ir::ExprNode::constant(0)),
            std::vector<ir::Stmt>{stmt});
        moved = true;
      }
  ASSERT_TRUE(moved);
  const std::string why = proof::whyChunksAreNotRotations(program, program.steps, 3, {});
  EXPECT_NE(why.find("another barrier before it"), std::string::npos) << why;
}

// ---------------------------------------------------------------- the same verdicts

/// Everything a proof says of a spec but its cost: verdict, messages and facts.
std::string said(const VerifyResult& r, const std::string& diagnostics) {
  std::ostringstream out;
  out << "ok " << r.ok << " indexAligned " << r.indexAligned << " localAligned " << r.localAligned
      << " remoteWriteOrdering " << r.remoteWriteOrdering << " usesAtomics " << r.usesAtomics
      << " mutual " << r.exchangesAreMutual << " readOnce " << r.remoteDataReadOnce << " inPlace "
      << r.inPlace << " together " << r.aliasesTogether << " sumOnly " << r.sumOnlyOffset << " "
      << r.sumOnlyWhy << "\ninPlaceWhy " << r.inPlaceWhy << "\n";
  for (const std::set<int>& buffers : {r.remotelyWritten, r.locallyWritten}) {
    for (int b : buffers)
      out << b << " ";
    out << "\n";
  }
  for (const auto& [written, read] : r.auxAliases)
    out << written << "=" << read << " ";
  for (const RankFacts& f : r.byRanks)
    out << "\nnranks " << f.nranks << ": " << f.indexAligned << f.localAligned
        << f.remoteWriteOrdering << f.usesAtomics << f.exchangesAreMutual << f.remoteDataReadOnce
        << " " << f.remotelyWritten.size() << " " << f.locallyWritten.size();
  return out.str() + "\n" + diagnostics;
}

/// The spec's proof at `nranks` (declared alone), as `said` puts it, and its work.
std::pair<std::string, int64_t> proofOf(const std::string& text, int nranks) {
  llvm::SourceMgr sources;
  std::string diagnostics;
  llvm::raw_string_ostream out(diagnostics);
  Diagnostics diags(sources, out);
  auto ast = parseSpecText(diags, text, "spec.coll");
  auto program = ast ? analyze(*ast, diags) : nullptr;
  if (!program)
    return {"does not parse: " + out.str(), 0};
  const VerifyResult result = verify(*program, diags, kDefaultVerifyWorkLimit, nranks);
  return {said(result, out.str()), result.work};
}

/// What compiling the spec for `sync` and `dtype` at `nranks` says: refused (and why) or which
/// buffers the lowered program allows as one memory.
std::string loweringOf(const std::string& text, int nranks, SyncKind sync, DType dtype) {
  std::string diagnostics;
  auto programs = lowered(text, nranks, sync, diagnostics, /*proveAliases=*/true, dtype);
  if (!programs)
    return "refused\n" + diagnostics;
  std::ostringstream out;
  out << "in place " << programs->inPlace << " together " << programs->aliasesTogether;
  for (const auto& [written, read] : programs->auxAliases)
    out << " " << written << "=" << read;
  return out.str() + "\n" + diagnostics;
}

TEST(ChunkGroupsRotation, ChunkZeroAloneGivesEveryStdlibVerdict) {
  // Every stdlib AllReduce, every strategy (in place and aux pairs proved) for f32 and bf16, at 2
  // to 9 ranks and 16: the proof with the runs of chunk 0 alone says what the proof with every
  // chunk says.
  int compared = 0, rotations = 0, lowerings = 0;
  for (const std::string& spec : stdlibNames()) {
    if (stdlibText(spec).find("kind allreduce") == std::string::npos)
      continue;
    for (int nranks : {2, 3, 4, 5, 6, 7, 8, 9, 16}) {
      const std::string forRanks = stdlibTextFor(spec, nranks);
      SCOPED_TRACE(spec + " at " + std::to_string(nranks) + " ranks");
      const bool rotation = whyTheSpecIsNoRotation(forRanks, nranks).empty();
      rotations += rotation;
      const auto [projected, projectedWork] = proofOf(forRanks, nranks);
      std::pair<std::string, int64_t> every;
      {
        proof::ChunkRotationsOff off;
        every = proofOf(forRanks, nranks);
      }
      EXPECT_EQ(projected, every.first);
      // Where chunks are rotations, the large runs did less (up to 8 ranks the first counts,
      // which run every chunk, are most of the work).
      if (rotation && nranks > 8) {
        EXPECT_LT(projectedWork * 3, every.second);
      }
      // Packets of 2 elements (f32) and of 4 (bf16).
      for (SyncKind sync : tests::kImplementedStrategies)
        for (DType dtype : {DType::F32, DType::BF16}) {
          SCOPED_TRACE(std::string(name(sync)) + " " + std::string(name(dtype)));
          const std::string with = loweringOf(forRanks, nranks, sync, dtype);
          proof::ChunkRotationsOff off;
          EXPECT_EQ(with, loweringOf(forRanks, nranks, sync, dtype));
          lowerings += with.rfind("refused", 0) != 0;
        }
      ++compared;
    }
  }
  EXPECT_GE(compared, 8 * 9);
  EXPECT_EQ(rotations, 2 * 9); // the ring and the two-shot
  EXPECT_GE(lowerings, 400);
}

/// A two-shot at 9 ranks (past those whose first counts run every chunk) whose reduce of chunk
/// `rank` adds the peers' slots with '+' (right for 'sum' only), after a statement for 'sum' only
/// of chunk rank + 1: of chunk 0's statements the reduce of rank 0 comes first in the walk, of
/// every chunk's the other statement of rank 0.
std::string twoSumOnlyStatements() {
  std::string sum = "in.chunk(rank)";
  for (int p = 1; p < 9; ++p)
    sum += " + inbox[(rank + " + std::to_string(p) + ") % nranks]";
  return R"(collective c kind allreduce
  ranks 9..9
  buffers in: T[n], out: T[n]
  scratch inbox[nranks]: T[chunk(n)]
  scratch doubled: T[n]
  scratch result: T[n]
{
  step scatter {
    for p in peers { put in.chunk(p) -> p.inbox[rank] }
  }
  step reduce {
    wait scatter
    doubled.chunk((rank + 1) % nranks) = in.chunk((rank + 1) % nranks) + in.chunk((rank + 1) % nranks)
    out.chunk(rank) = )" +
         sum + R"(
    for p in peers { put out.chunk(rank) -> p.result.chunk(rank) }
  }
  step gather {
    wait reduce
    for q in peers { out.chunk(q) = result.chunk(q) }
  }
}
)";
}

/// Specs whose chunks are kept apart, each with a bug: refused with and without chunk 0 alone,
/// with the message of every count. The first three are rotations; the runs of chunk 0 alone find
/// the bug, and the whole cover runs.
const std::vector<std::pair<std::string, std::string>>& plantedBugs() {
  static const std::vector<std::pair<std::string, std::string>> specs = [] {
    const std::string twoShot = stdlibText("allreduce_twoshot");
    auto replaced = [&](const std::string& from, const std::string& to) {
      std::string text = tests::specTextForRanks(twoShot, 5);
      const size_t at = text.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      return at == std::string::npos ? text : text.replace(at, from.size(), to);
    };
    std::vector<std::pair<std::string, std::string>> all = {
        {"gather unordered", replaced("wait reduce\n", "")},
        {"own chunk not reduced",
         replaced("reduce(in.chunk(rank), inbox[peers])", "in.chunk(rank)")},
        {"every chunk put twice",
         replaced("for p in peers { put in.chunk(p) -> p.inbox[rank] }",
                  "for p in peers { put in.chunk(p) -> p.inbox[rank] }\n"
                  "    for p in peers { put in.chunk(p) -> p.inbox[rank] }")},
        {"rank 1 keeps its chunk",
         replaced("for p in peers { put out.chunk(rank) -> p.result.chunk(rank) }",
                  "for p in peers { if rank != 1 { put out.chunk(rank) -> p.result.chunk(rank) } "
                  "}")},
    };
    for (const char* dir : {COLLC_ERROR_SPECS_DIR, COLLC_ACCEPTED_SPECS_DIR})
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string text = readFile(entry.path());
        if (entry.path().extension() == ".coll" && text.find("chunk(") != std::string::npos &&
            text.find("kind allreduce") != std::string::npos)
          all.push_back({entry.path().filename().string(), text});
      }
    return all;
  }();
  return specs;
}

/// collc check's verdict and report on the spec, every strategy, with or without chunk 0 alone.
std::string checked(const std::string& file, const std::string& text) {
  std::ostringstream out;
  CheckReport report;
  Error error = checkSpec(SpecSource{file, text}, out, &report, CheckDepth::EveryStrategy);
  const bool ok = !error;
  consumeError(std::move(error));
  std::ostringstream verdict;
  verdict << (ok ? "ok" : "refused") << "\n"
          << out.str() << "sumOnly " << report.sumOnly << "\ninPlace " << report.inPlace << " "
          << report.inPlaceWhy;
  for (const StrategyReport& strategy : report.strategies) {
    verdict << "\n"
            << name(strategy.sync) << ": " << strategy.refused << " " << strategy.notTriedFrom;
    for (const AliasReport& alias : strategy.aliases) {
      verdict << " " << alias.written << "=" << alias.read << " " << alias.why;
      for (int r : alias.allowedRanks)
        verdict << " " << r;
    }
  }
  return verdict.str();
}

TEST(ChunkGroupsRotation, PlantedBugsAreRefusedWithTheMessageOfEveryChunk) {
  int refused = 0;
  for (const auto& [file, text] : plantedBugs()) {
    SCOPED_TRACE(file);
    const std::string with = checked(file, text);
    proof::ChunkRotationsOff off;
    EXPECT_EQ(with, checked(file, text));
    refused += with.rfind("refused", 0) == 0;
  }
  EXPECT_GE(refused, 12);
  // The planted bugs of the two-shot are rotations: the runs of chunk 0 alone are made and fail.
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(whyTheSpecIsNoRotation(plantedBugs()[i].second, 5), "") << plantedBugs()[i].first;
  EXPECT_NE(whyTheSpecIsNoRotation(plantedBugs()[3].second, 5), "");
}

TEST(ChunkGroupsRotation, TheFirstStatementForSumOnlyIsThatOfEveryChunksWalk) {
  const std::string text = twoSumOnlyStatements();
  ASSERT_EQ(whyTheSpecIsNoRotation(text, 9), "");
  // The doubling (line 13), whose image on rank 0 comes first, not the reduce (line 14).
  auto sumOnly = [&] {
    std::string diagnostics;
    DiagnosticText out(diagnostics);
    CheckReport report;
    Error error = checkSpec(SpecSource{"sums.coll", text}, out, &report);
    EXPECT_FALSE(bool(error)) << diagnostics;
    consumeError(std::move(error));
    return report.sumOnly;
  };
  const std::string projected = sumOnly();
  EXPECT_EQ(projected.rfind("13:5: '+' adds values that both carry the input", 0), 0u) << projected;
  const auto [proof, work] = proofOf(text, 9);
  proof::ChunkRotationsOff off;
  EXPECT_EQ(projected, sumOnly());
  EXPECT_EQ(proof, proofOf(text, 9).first);
}

/// What one run finds but its work, with numbers.
std::string factsOf(const ir::Program& program, const std::vector<ir::Step>& steps,
                    proof::RunConfig config, bool chunkZeroOnly) {
  config.chunkZeroOnly = chunkZeroOnly;
  proof::Arith arith(/*symbolic=*/false);
  const proof::RunFacts facts = proof::simulate(program, steps, config, arith, nullptr);
  std::ostringstream out;
  out << facts.indexAligned << facts.localAligned << facts.remoteWriteOrdering << facts.usesAtomics
      << facts.remoteDataReadOnce << " sumOnly "
      << (facts.sumOnlyAt.isValid() ? facts.sumOnlyAt.getPointer() - program.loc.getPointer() : -1)
      << " " << facts.sumOnlyWhy << "\nedges";
  for (const auto& [writer, reader] : facts.dataEdges)
    out << " " << writer << ">" << reader;
  out << "\nwritten";
  for (const std::set<int>& buffers : {facts.remotelyWritten, facts.locallyWritten})
    for (int b : buffers)
      out << " " << b;
  out << "\nwaits";
  for (const auto& [step, wait] : facts.usedWaits)
    out << " " << step << "@" << wait - program.loc.getPointer();
  return out.str();
}

TEST(ChunkGroupsRotation, ChunkZeroAloneFindsTheFactsOfEveryChunk) {
  // A count at which every chunk holds elements, the last one fewer: the spec's run and the
  // lowered programs' find, with chunk 0 alone, what they find with every chunk. Which rank reads
  // whose data is chunk 0's renamed: in the two-shot chunk 0 goes to rank 0 and back alone.
  for (const char* spec : {"allreduce_twoshot", "allreduce_ring"})
    for (int nranks : {3, 5}) {
      const std::string text = stdlibTextFor(spec, nranks);
      SCOPED_TRACE(std::string(spec) + " at " + std::to_string(nranks) + " ranks");
      proof::RunConfig config;
      config.nranks = nranks;
      config.count = proof::Affine::constant(8 * nranks * 10 + 3);
      auto parsed = parse(text, nranks);
      ASSERT_TRUE(parsed->program);
      const std::string every = factsOf(*parsed->program, parsed->steps, config, false);
      EXPECT_EQ(factsOf(*parsed->program, parsed->steps, config, true), every);
      EXPECT_NE(every.find(" 1>2 "), std::string::npos) << every;
      for (SyncKind sync : {SyncKind::Barrier, SyncKind::LL}) {
        if (sync == SyncKind::LL && std::string(spec) == "allreduce_ring")
          continue; // one way round the ring: refused
        SCOPED_TRACE(name(sync));
        std::string diagnostics;
        auto programs = lowered(text, nranks, sync, diagnostics);
        ASSERT_TRUE(programs) << diagnostics;
        proof::RunConfig lowering = config;
        lowering.lowered = true;
        lowering.reference = programs->spec.get();
        lowering.referenceSteps = &programs->spec->steps;
        const ir::Program& program = *programs->lowered;
        EXPECT_EQ(factsOf(program, program.steps, lowering, true),
                  factsOf(program, program.steps, lowering, false));
      }
    }
}

/// An AllReduce at 9 ranks in which rank o owns chunk o + 1: one rank's input arrives by a put,
/// every other rank, o among them, adds its own in one step, and o reads the sum once for itself
/// and once for each peer: nine reads of data peers wrote (remoteDataReadOnce), whichever rank's
/// add the walk makes last. In chunk 0's walk o (rank 8) adds last; in chunk 2's, a peer does.
constexpr const char* kAddsOfSeveralRanks = R"(collective c kind allreduce
  ranks 9..9
  buffers in: T[n], out: T[n]
  scratch inbox[nranks]: T[chunk(n)]
  scratch acc: T[n]
  scratch result: T[n]
{
  step first {
    put in.chunk((rank + 2) % nranks) -> ((rank + 1) % nranks).inbox[0]
  }
  step init {
    wait first
    acc.chunk((rank + 1) % nranks) = inbox[0]
  }
  step add {
    wait init
    for p in ranks { if p != (rank + 1) % nranks { atomic_add in.chunk((p + 1) % nranks) -> p.acc.chunk((p + 1) % nranks) } }
  }
  step reduce {
    wait add
    out.chunk((rank + 1) % nranks) = acc.chunk((rank + 1) % nranks)
    for p in peers { put acc.chunk((rank + 1) % nranks) -> p.result.chunk((rank + 1) % nranks) }
  }
  step gather {
    wait reduce
    for q in peers { out.chunk((q + 1) % nranks) = result.chunk((q + 1) % nranks) }
  }
}
)";

TEST(ChunkGroupsRotation, AddsOfSeveralRanksInOneStepAreJudgedAlikeInEveryChunk) {
  // Whose data a read of added elements takes does not depend on the order in which the walk
  // makes the adds of one step, which renaming changes: the run of chunk 0 alone finds the facts
  // of every chunk's, and the proofs agree.
  ASSERT_EQ(whyTheSpecIsNoRotation(kAddsOfSeveralRanks, 9), "");
  auto parsed = parse(kAddsOfSeveralRanks, 9);
  ASSERT_TRUE(parsed->program);
  proof::RunConfig config;
  config.nranks = 9;
  config.count = proof::Affine::constant(8 * 9 * 10 + 3);
  const std::string every = factsOf(*parsed->program, parsed->steps, config, false);
  EXPECT_EQ(every.rfind("11110", 0), 0u) << every; // atomics; data read more than once
  EXPECT_EQ(factsOf(*parsed->program, parsed->steps, config, true), every);
  const auto [projected, work] = proofOf(kAddsOfSeveralRanks, 9);
  EXPECT_NE(projected.find("ok 1 "), std::string::npos) << projected;
  EXPECT_NE(projected.find("readOnce 0 "), std::string::npos) << projected;
  proof::ChunkRotationsOff off;
  const auto [everyChunk, everyWork] = proofOf(kAddsOfSeveralRanks, 9);
  EXPECT_EQ(projected, everyChunk);
  EXPECT_LT(work * 3, everyWork); // the runs of chunk 0 alone were made
}

TEST(ChunkGroupsRotation, TheRingAt16RanksRunsChunkZeroAlone) {
  const std::string ring = tests::specTextForRanks(stdlibText("allreduce_ring"), 16);
  const auto [projected, work] = proofOf(ring, 16);
  proof::ChunkRotationsOff off;
  const auto [every, everyWork] = proofOf(ring, 16);
  EXPECT_EQ(projected, every);
  // Chunk 0's statements are one in 16.
  EXPECT_LT(work * 8, everyWork);
}

// ------------------------------------------------------------------ walks kept (ChunkWalks)

/// No aliases, and every ordered pair of buffers of `program` as one memory: the sets a kept walk
/// is asked about (out and in among them), and more (buffers of other sizes, whether a caller may
/// pass them as one or not).
std::vector<Aliases> aliasSets(const ir::Program& program) {
  std::vector<Aliases> sets{{}};
  for (size_t a = 0; a < program.buffers.size(); ++a)
    for (size_t b = 0; b < program.buffers.size(); ++b)
      if (a != b)
        sets.push_back({{ir::BufferId(a), ir::BufferId(b)}});
  return sets;
}

/// The kept walks' verdict, message and rotation for each set of aliases are those of a walk of
/// their own, asked in any order; how many were decided from the kept walk.
int expectKeptWalksAgree(const ir::Program& program, const std::vector<ir::Step>& steps, int nranks,
                         const std::vector<Aliases>& sets) {
  proof::ChunkWalks walks;
  for (const Aliases& aliases : sets) {
    SCOPED_TRACE("aliases " + std::to_string(aliases.size()) +
                 (aliases.empty() ? std::string()
                                  : " (" + std::to_string(aliases[0].first) + ", " +
                                        std::to_string(aliases[0].second) + ")"));
    proof::ChunkRotation own, kept;
    const std::string why = proof::whyChunksAreNotRotations(program, steps, nranks, aliases, &own);
    EXPECT_EQ(walks.whyChunksAreNotRotations(program, steps, nranks, aliases, &kept), why);
    if (why.empty()) {
      EXPECT_EQ(kept.chunks, own.chunks);
      EXPECT_EQ(kept.firstImage, own.firstImage);
    }
  }
  std::vector<int> own, kept;
  const std::string why = proof::whyChunksMix(program, steps, nranks, 0, {}, &own);
  EXPECT_EQ(walks.whyChunksMix(program, steps, nranks, &kept), why);
  EXPECT_EQ(kept, own);
  EXPECT_LE(walks.walks(), 1); // the walk without aliases, once
  return walks.derived();
}

TEST(ChunkWalks, KeptWalksGiveEveryStdlibVerdictWithEveryAliases) {
  int derived = 0;
  for (const char* spec :
       {"allreduce_twoshot", "allreduce_ring", "allreduce_oneshot", "allreduce_rmsnorm"})
    for (int nranks : {2, 3, 5, 8}) {
      const std::string text = stdlibTextFor(spec, nranks);
      SCOPED_TRACE(std::string(spec) + " at " + std::to_string(nranks) + " ranks");
      auto parsed = parse(text, nranks);
      ASSERT_TRUE(parsed->program);
      derived += expectKeptWalksAgree(*parsed->program, parsed->steps, nranks,
                                      aliasSets(*parsed->program));
      for (SyncKind sync : tests::kImplementedStrategies) {
        SCOPED_TRACE(name(sync));
        std::string diagnostics;
        auto programs = lowered(text, nranks, sync, diagnostics);
        if (!programs)
          continue; // a strategy the spec does not take
        const ir::Program& program = *programs->lowered;
        derived += expectKeptWalksAgree(program, program.steps, nranks, aliasSets(program));
      }
    }
  // The pairs of the chunked AllReduces were decided from their kept walks, not walked again.
  EXPECT_GT(derived, 0);
}

TEST(ChunkWalks, AliasesThatChangeTheWalkAreWalkedForItsMessage) {
  // The two-shot at 3 ranks, with chunk-sized scratch of other shapes beside its inbox.
  const std::string text = R"(collective c kind allreduce
  ranks 3..3
  buffers in: T[n], out: T[n]
  scratch inbox[nranks]: T[chunk(n)]
  scratch mine[nranks]: T[chunk(n)]
  scratch pair[2]: T[chunk(n)]
  scratch result: T[n]
  sync barrier
{
  step scatter {
    for p in peers { put in.chunk(p) -> p.inbox[rank] }
    for p in peers { put in.chunk(rank) -> p.mine[rank] }
    for p in peers { put in.chunk(p) -> p.pair[0] }
  }
  step reduce {
    wait scatter
    out.chunk(rank) = reduce(in.chunk(rank), inbox[peers])
    for p in peers { put out.chunk(rank) -> p.result.chunk(rank) }
  }
  step gather {
    wait reduce
    for q in peers { out.chunk(q) = result.chunk(q) + mine[q] }
  }
}
)";
  auto parsed = parse(text, 3);
  ASSERT_TRUE(parsed->program);
  const ir::Program& program = *parsed->program;
  const ir::BufferId inbox = program.find("inbox"), mine = program.find("mine"),
                     pair = program.find("pair"), result = program.find("result");
  for (const auto& [aliases, part] : std::vector<std::pair<Aliases, std::string>>{
           // Cut differently: n elements and chunk-sized slots.
           {{{result, inbox}}, "shares memory with a buffer of another size"},
           // One slot, two chunks: rank r's slot p holds chunk r of inbox and chunk p of mine.
           {{{mine, inbox}}, "holds elements of chunks"},
           // inbox's slots past pair's two.
           {{{inbox, pair}}, "names a rank or slot out of range"}}) {
    SCOPED_TRACE(part);
    const std::string why = proof::whyChunksAreNotRotations(program, parsed->steps, 3, aliases);
    EXPECT_NE(why.find(part), std::string::npos) << why;
    proof::ChunkWalks walks;
    EXPECT_EQ(walks.whyChunksAreNotRotations(program, parsed->steps, 3, {}), "");
    EXPECT_EQ(walks.whyChunksAreNotRotations(program, parsed->steps, 3, aliases), why);
    EXPECT_EQ(walks.derived(), 0);
  }
}

} // namespace
} // namespace collc
