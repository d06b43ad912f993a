#include "compiler/Verifier.h"

#include "abi/CollectiveShapes.h"
#include "compiler/ExpandSteps.h"
#include "compiler/RowEpilogue.h"
#include "compiler/execute/CountCover.h"
#include "compiler/execute/PaddedRows.h"
#include "compiler/ir/Visitor.h"
#include "compiler/verify/ChunkGroups.h"
#include "compiler/verify/Simulation.h"

#include <algorithm>
#include <map>

namespace collc {
namespace {

using proof::Affine;
using proof::AffineError;
using proof::Arith;
using proof::RunConfig;
using proof::RunFacts;
using proof::RunFailed;

/// Rank counts first..last, both included.
struct RankSpan {
  int first, last;
};

/// Every run of one program for one rank count: the counts an earlier verifier tried first (so
/// their diagnostics read as before; up to 8 ranks), then the runs with n symbolic that decide
/// every count (execute/CountCover.h).
class Sweep {
public:
  /// `keepFacts`: whether facts() is wanted (a lowered program's proof folds no facts).
  Sweep(const ir::Program& program, const std::vector<ir::Step>& steps, RunConfig base,
        Diagnostics* diags, int64_t& work, int64_t workLimit, bool keepFacts = true)
      : program_(program), steps_(steps), base_(std::move(base)), diags_(diags), work_(work),
        workLimit_(workLimit), keepFacts_(keepFacts) {}

  /// False (after reporting, unless quiet) at the first configuration that breaks a rule.
  bool run() {
    const int nranks = base_.nranks;
    const int roots = hasRoot(program_.kind) ? nranks : 1;
    const bool rows = !program_.rowLengthName.empty();
    // Covered by the runs below; run first where they are cheap, for diagnostics that name small
    // counts. Past kFirstCountsUpTo ranks they would be most of the proof's work.
    if (nranks <= kFirstCountsUpTo)
      for (auto [count, rowLength] : shapesToVerify(program_, nranks))
        for (int root = 0; root < roots; ++root)
          if (!concrete(count, rows ? rowLength : 0, root))
            return false;
    // A spec with rows is proved for rows of one element: sizes cannot use the row length but as
    // a weight that is only read, so every other row length is n = rows * length of these.
    const int64_t rowLength = rows ? 1 : 0;
    // Where every root's program keeps the chunks apart (verify/ChunkGroups.h), the large runs
    // decide every smaller count; where, besides, every chunk is chunk 0 with the ranks renamed,
    // each of them runs chunk 0 alone. Where one breaks a rule, the whole cover runs, every chunk
    // in every run, so that the verdict and its message (the smallest count that shows it) are
    // those of every count.
    if (!proof::chunkGroupsOn())
      return cover(roots, rowLength, /*largeOnly=*/false);
    // Chunks that are rotations are kept apart: the rotation check checks that first.
    chunkZeroOnly_ = proof::chunkRotationsOn() && chunksAreRotations(roots);
    if (chunkZeroOnly_ || chunksKeptApart(roots)) {
      chunksGaveUp_ = false;
      if (largeRunsProve(roots, rowLength))
        return true;
      // Runs of chunk 0 alone that cannot stand for the others (not a broken rule) leave the
      // large runs to every chunk.
      const bool retry = chunkZeroOnly_ && chunksGaveUp_;
      chunkZeroOnly_ = false;
      if (retry && largeRunsProve(roots, rowLength))
        return true;
    }
    return cover(roots, rowLength, /*largeOnly=*/false);
  }

  int64_t runs() const { return runs_; }
  const std::vector<RunFacts>& facts() const { return facts_; }

private:
  /// The large runs alone (cover's largeOnly); where they do not prove the program, nothing of
  /// them is kept.
  bool largeRunsProve(int roots, int64_t rowLength) {
    const int64_t work = work_, runs = runs_;
    const size_t facts = facts_.size();
    if (cover(roots, rowLength, /*largeOnly=*/true))
      return true;
    work_ = work;
    runs_ = runs;
    facts_.resize(facts);
    return false;
  }

  bool chunksKeptApart(int roots) const {
    for (int root = 0; root < roots; ++root)
      if (!proof::whyChunksMix(program_, steps_, base_.nranks, root, base_.aliases).empty())
        return false;
    return true;
  }

  /// Whether the program's chunks (and, for a lowered program, the spec's, whose run the lowered
  /// one's is compared with) are rotations of chunk 0 (verify/ChunkGroups.h); what the runs of
  /// chunk 0 alone need of them is kept for every run.
  bool chunksAreRotations(int roots) {
    if (roots != 1 || program_.kind != CollectiveKind::AllReduce)
      return false;
    if (!(base_.chunkWalks ? base_.chunkWalks->whyChunksAreNotRotations(
                                 program_, steps_, base_.nranks, base_.aliases, &rotation_)
                           : proof::whyChunksAreNotRotations(program_, steps_, base_.nranks,
                                                             base_.aliases, &rotation_))
             .empty())
      return false;
    if (!base_.reference)
      return true;
    // The spec's check is the same for every lowered program compared with its runs.
    return (base_.specRuns
                ? base_.specRuns->whySpecChunksAreNotRotations(*base_.reference,
                                                               *base_.referenceSteps, base_.nranks,
                                                               base_.aliases, &referenceRotation_)
                : proof::whyChunksAreNotRotations(*base_.reference, *base_.referenceSteps,
                                                  base_.nranks, base_.aliases, &referenceRotation_))
        .empty();
  }

  /// Classes of n modulo a period, first 1, split where a division needs it (the classes that
  /// replace one hold exactly its counts), a range of residues a run, then (unless `largeOnly`)
  /// the smaller counts (execute/CountCover.h). `largeOnly` reports nothing: a run that fails is
  /// run again with every count.
  bool cover(int roots, int64_t rowLength, bool largeOnly) {
    int64_t period = 1;
    try {
      for (int root = 0; root < roots; ++root) {
        auto large = [&](const Affine& count, Arith& arith) {
          try {
            record(proof::simulate(program_, steps_, configure(count, rowLength, root), arith,
                                   nullptr));
            return true;
          } catch (const RunFailed&) {
            if (largeOnly)
              return false;
            // Broken for every large q: report it with numbers at the first count the run holds
            // for.
            const int64_t first = execute::firstCountOf(count, arith);
            if (concrete(first, rowLength, root))
              internalError("the verifier's run with n symbolic broke a rule that n = " +
                            std::to_string(first) + " keeps");
            return false;
          } catch (const AffineError& error) {
            chunksGaveUp_ |= error.why == "chunks";
            return largeOnly ? false : limit(error);
          }
        };
        auto stretch = [&](const Affine& count, Arith& arith, int64_t first) {
          return this->stretch(count, arith, first, rowLength, root);
        };
        if (!execute::coverCounts(period, large, stretch, /*smallCounts=*/!largeOnly))
          return false;
      }
    } catch (const AffineError& error) {
      chunksGaveUp_ |= error.why == "chunks";
      return largeOnly ? false : limit(error);
    }
    return true;
  }

  /// Rank counts up to which the counts an earlier verifier tried run first.
  static constexpr int kFirstCountsUpTo = 8;

  RunConfig configure(Affine count, int64_t rowLength, int root) const {
    RunConfig config = base_;
    config.count = count;
    config.rowLength = rowLength;
    config.root = root;
    config.budget = std::max<int64_t>(1, workLimit_ - work_);
    config.chunkZeroOnly = chunkZeroOnly_;
    if (chunkZeroOnly_) {
      config.rotation = &rotation_;
      config.referenceRotation = base_.reference ? &referenceRotation_ : nullptr;
    }
    return config;
  }

  /// The counts of a stretch from `first` on, in one run with n symbolic whose every comparison
  /// is decided as at `first` (Arith::from, Arith::residues): for each count up to its limit, the
  /// run with numbers makes the same comparisons with the same outcomes. Where that run cannot
  /// be made (a division it would split, an internal limit), `first` alone, with numbers.
  execute::Covered stretch(const Affine& count, Arith& arith, int64_t first, int64_t rowLength,
                           int root) {
    using execute::Covered;
    try {
      record(proof::simulate(program_, steps_, configure(count, rowLength, root), arith, nullptr));
      return Covered::Stretch;
    } catch (const RunFailed&) {
      // Broken for every count of the stretch: report it with numbers at its first.
      if (concrete(first, rowLength, root))
        internalError("the verifier's run with n symbolic broke a rule that n = " +
                      std::to_string(first) + " keeps");
      return Covered::Stop;
    } catch (const proof::SplitQ&) {
    } catch (const AffineError& error) {
      if (error.why == "budget" || error.why == "memory") {
        limit(error);
        return Covered::Stop;
      }
    }
    return concrete(first, rowLength, root) ? Covered::FirstOnly : Covered::Stop;
  }

  bool concrete(int64_t count, int64_t rowLength, int root) {
    Arith arith(/*symbolic=*/false);
    try {
      record(proof::simulate(program_, steps_, configure(Affine::constant(count), rowLength, root),
                             arith, diags_));
      return true;
    } catch (const RunFailed&) {
      return false;
    } catch (const AffineError& error) {
      return limit(error);
    }
  }

  void record(RunFacts facts) {
    ++runs_;
    work_ += facts.work;
    if (keepFacts_)
      facts_.push_back(std::move(facts));
  }

  bool limit(const AffineError& error) {
    if (diags_) {
      if (error.why == "budget")
        diags_->error(program_.loc,
                      "verifying '" + program_.name + "' takes more than " +
                          std::to_string(workLimit_) + " steps of work (" + std::to_string(runs_) +
                          " runs so far); collc refuses a spec it cannot prove in that: use "
                          "fewer statements, loop trips or rank counts");
      else if (error.why == "memory")
        diags_->error(program_.loc, "verifying '" + program_.name + "' needs more than " +
                                        std::to_string(proof::kMaxRunBytes >> 20) +
                                        " MiB for the elements of one run "
                                        "(nranks=" +
                                        std::to_string(base_.nranks) +
                                        "); collc refuses a spec it cannot prove in that: use "
                                        "fewer buffers, slots or statements");
      else
        diags_->error(program_.loc, "cannot verify '" + program_.name + "': " + error.why +
                                        " (nranks=" + std::to_string(base_.nranks) + ")");
    }
    return false;
  }

  const ir::Program& program_;
  const std::vector<ir::Step>& steps_;
  RunConfig base_;
  Diagnostics* diags_;
  int64_t& work_;
  const int64_t workLimit_;
  const bool keepFacts_;
  int64_t runs_ = 0;
  std::vector<RunFacts> facts_;
  bool chunkZeroOnly_ = false; // the large runs run chunk 0 alone (run())
  bool chunksGaveUp_ = false;  // one of them found chunk 0 cannot stand for every chunk
  proof::ChunkRotation rotation_, referenceRotation_; // what they need (chunksAreRotations)
};

/// The facts of one run into those of a rank count or of a whole proof.
template <typename Facts> void foldFacts(Facts& result, const RunFacts& facts) {
  result.indexAligned &= facts.indexAligned;
  result.localAligned &= facts.localAligned;
  result.remoteWriteOrdering |= facts.remoteWriteOrdering;
  result.usesAtomics |= facts.usesAtomics;
  result.remoteDataReadOnce &= facts.remoteDataReadOnce;
  for (const auto& [from, to] : facts.dataEdges)
    result.exchangesAreMutual &= facts.dataEdges.count({to, from}) != 0;
  result.remotelyWritten.insert(facts.remotelyWritten.begin(), facts.remotelyWritten.end());
  result.locallyWritten.insert(facts.locallyWritten.begin(), facts.locallyWritten.end());
}

void fold(VerifyResult& result, const RunFacts& facts, const ir::Program& program) {
  foldFacts(result, facts);
  if (result.sumOnlyWhy.empty() && facts.sumOnlyAt.isValid()) {
    result.sumOnlyOffset = facts.sumOnlyAt.getPointer() - program.loc.getPointer();
    result.sumOnlyWhy = facts.sumOnlyWhy;
  }
}

/// Every rank count of `span`, with `aliases` (quiet when diags is null). Folds the facts of
/// every run into `result` and collects the waits that ordered something.
bool proveAll(const ir::Program& program, const RunConfig& base, Diagnostics* diags,
              Diagnostics& expandDiags, VerifyResult& result,
              std::set<std::pair<int, const char*>>& usedWaits, int64_t workLimit, RankSpan span) {
  for (int nranks = span.first; nranks <= span.last; ++nranks) {
    auto steps = expandRepeatedSteps(program, nranks, expandDiags);
    if (!steps)
      return false;
    RunConfig config = base;
    config.nranks = nranks;
    Sweep sweep(program, *steps, config, diags, result.work, workLimit);
    const bool ok = sweep.run();
    result.runs += sweep.runs();
    if (!ok)
      return false;
    RankFacts& rankFacts = result.byRanks.emplace_back();
    rankFacts.nranks = nranks;
    for (const RunFacts& facts : sweep.facts()) {
      fold(result, facts, program);
      foldFacts(rankFacts, facts);
      usedWaits.insert(facts.usedWaits.begin(), facts.usedWaits.end());
    }
  }
  return true;
}

/// A wait must order something for some rank count and n: data the waited step wrote that some
/// rank reads after it, or a write it protects. (A wait that orders nothing for one rank count
/// or n, as a ring's at 2 ranks, is fine: the same spec orders something with others.)
bool checkWaitsUsed(const ir::Program& program, const std::set<std::pair<int, const char*>>& used,
                    Diagnostics& diags) {
  std::set<const char*> usedLocations;
  for (const auto& [step, loc] : used)
    usedLocations.insert(loc);
  for (const auto& step : program.steps)
    for (const auto& wait : step.waits)
      if (!usedLocations.count(wait.loc.getPointer())) {
        const std::string waited = program.steps[size_t(wait.step)].name;
        diags.error(wait.loc, "nothing that step '" + waited +
                                  "' writes is read after this wait, so no signal matches it; "
                                  "wait for the step whose data this step reads (for every rank "
                                  "count and n the spec declares)");
        return false;
      }
  return true;
}

/// The buffers some statement writes.
class Writes : public ir::Visitor {
public:
  std::set<ir::BufferId> buffers;

private:
  void visitPut(const ir::Put& s) override { buffers.insert(s.target.buffer); }
  void visitAtomicAdd(const ir::AtomicAdd& s) override { buffers.insert(s.target.buffer); }
  void visitAssign(const ir::Assign& s) override { buffers.insert(s.target.buffer); }
  void visitRow(const ir::RowStmt& s) override { buffers.insert(s.target.buffer); }
};

/// Two buffers that may be one memory: the same elements, of one element type (an fp8 output is
/// never its T input's memory).
bool sameSize(const ir::Buffer& a, const ir::Buffer& b) {
  return ir::structurallyEqual(a.slotElems, b.slotElems) &&
         ir::structurallyEqual(a.slots, b.slots) && a.fixedType == b.fixedType;
}

/// The pairs of memory a caller may pass as one buffer, each proved like the spec itself.
void proveAliases(const ir::Program& program, Diagnostics& diags, VerifyResult& result,
                  int64_t workLimit, RankSpan span) {
  std::set<std::pair<int, const char*>> ignored;
  auto holds = [&](const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases,
                   std::string* why) {
    RunConfig config;
    config.aliases = aliases;
    // One budget for the spec and its alias proofs: a pair whose proof would exceed it is
    // simply not allowed.
    VerifyResult scratch;
    scratch.work = result.work;
    std::string text;
    llvm::raw_string_ostream out(text);
    Diagnostics quiet(diags.sources(), out);
    const bool proved =
        proveAll(program, config, why ? &quiet : nullptr, diags, scratch, ignored, workLimit, span);
    result.work = scratch.work;
    if (why)
      *why = out.str();
    return proved;
  };
  Writes writes;
  for (const auto& step : program.steps)
    writes.visitAll(step.body);
  std::vector<std::pair<ir::BufferId, ir::BufferId>> allowed;
  const ir::BufferId in = program.input(), out = program.output();
  const bool sameShape = inputIsPerRankBlocks(program.kind) == outputIsPerRankBlocks(program.kind);
  if (in >= 0 && out >= 0 && sameShape && sameSize(program.buffer(in), program.buffer(out))) {
    result.inPlace = holds({{out, in}}, &result.inPlaceWhy);
    if (result.inPlace)
      allowed.push_back({out, in});
  }
  for (size_t w = 0; w < program.buffers.size(); ++w)
    for (size_t r = 0; r < program.buffers.size(); ++r) {
      const ir::Buffer& written = program.buffers[w];
      const ir::Buffer& read = program.buffers[r];
      if (w == r || written.role != ir::BufferRole::Aux || read.role != ir::BufferRole::Aux ||
          !writes.buffers.count(ir::BufferId(w)) || !sameSize(written, read))
        continue;
      if (holds({{ir::BufferId(w), ir::BufferId(r)}}, nullptr)) {
        result.auxAliases.push_back({written.name, read.name});
        allowed.push_back({ir::BufferId(w), ir::BufferId(r)});
      }
    }
  result.aliasesTogether = allowed.size() < 2 || holds(allowed, nullptr);
}

/// The proof takes a buffer a row statement writes as a parameter as written by each row's block
/// alone, from its row (and a swizzled matrix as its rows alone where n is symbolic:
/// execute/PaddedRows.h): refused where another statement names it. Sema refuses that in a spec
/// (RowEpilogue.cpp); this holds every program proved, lowered ones too, to it.
bool writtenParamsAlone(const ir::Program& program, Diagnostics& diags) {
  std::string writer;
  const ir::Region* other = execute::writtenParamNamedElsewhere(program, &writer);
  if (!other)
    return true;
  diags.error(other->loc, "'" + program.buffer(*other).name + "' is written by '" + writer +
                              "' as a parameter, which the proof takes as the row's own; no "
                              "other statement may read or write it");
  return false;
}

/// Whether every wait of `program` is among `used`.
bool everyWaitUsed(const ir::Program& program, const std::set<std::pair<int, const char*>>& used) {
  std::set<const char*> usedLocations;
  for (const auto& [step, loc] : used)
    usedLocations.insert(loc);
  for (const auto& step : program.steps)
    for (const auto& wait : step.waits)
      if (!usedLocations.count(wait.loc.getPointer()))
        return false;
  return true;
}

/// The rank counts a proof for `onlyRanks` runs: that one, or (0, or a count the spec does not
/// declare, which the compile refuses after the proof) every one the spec declares.
RankSpan spanOf(const ir::Program& program, int onlyRanks) {
  if (onlyRanks >= program.minRanks && onlyRanks <= program.maxRanks)
    return {onlyRanks, onlyRanks};
  return {program.minRanks, program.maxRanks};
}

} // namespace

VerifyResult verify(const ir::Program& program, Diagnostics& diags, int64_t workLimit,
                    int onlyRanks) {
  VerifyResult result;
  if (!writtenParamsAlone(program, diags))
    return result;
  const RankSpan span = spanOf(program, onlyRanks);
  std::set<std::pair<int, const char*>> usedWaits;
  if (!proveAll(program, RunConfig{}, &diags, diags, result, usedWaits, workLimit, span))
    return result;
  // A wait must order something for some declared rank count: where it orders nothing at the one
  // proved (a ring's at 2 ranks), the other counts are proved, in order, until every wait has.
  // Their facts are not folded in: the variant's strategy decides by the facts of its own count.
  for (int nranks = program.minRanks;
       nranks <= program.maxRanks && !everyWaitUsed(program, usedWaits); ++nranks) {
    if (nranks >= span.first && nranks <= span.last)
      continue;
    VerifyResult other;
    other.work = result.work;
    const bool proved = proveAll(program, RunConfig{}, &diags, diags, other, usedWaits, workLimit,
                                 RankSpan{nranks, nranks});
    result.work = other.work;
    result.runs += other.runs;
    if (!proved)
      return result;
  }
  if (!checkWaitsUsed(program, usedWaits, diags))
    return result;
  proveAliases(program, diags, result, workLimit, span);
  result.ok = true;
  return result;
}

namespace {

RunConfig loweredConfig(const ir::Program& spec, int nranks, DType dtype, proof::SpecRuns* specRuns,
                        proof::ChunkWalks* walks) {
  RunConfig config;
  config.specRuns = specRuns;
  config.chunkWalks = walks;
  config.nranks = nranks;
  config.lowered = true;
  config.packetElems = int(8 / sizeOf(dtype));
  config.reference = &spec;
  config.referenceSteps = &spec.steps;
  return config;
}

} // namespace

VerifyResult proofForRanks(const VerifyResult& proof, int nranks) {
  for (const RankFacts& facts : proof.byRanks) {
    if (facts.nranks != nranks)
      continue;
    VerifyResult result = proof;
    result.indexAligned = facts.indexAligned;
    result.localAligned = facts.localAligned;
    result.remoteWriteOrdering = facts.remoteWriteOrdering;
    result.usesAtomics = facts.usesAtomics;
    result.exchangesAreMutual = facts.exchangesAreMutual;
    result.remoteDataReadOnce = facts.remoteDataReadOnce;
    result.remotelyWritten = facts.remotelyWritten;
    result.locallyWritten = facts.locallyWritten;
    result.byRanks = {facts};
    return result;
  }
  internalError("a variant of " + std::to_string(nranks) +
                " ranks lowered with a proof that did not run that rank count");
}

bool verifyLowered(const ir::Program& spec, const ir::Program& lowered, int nranks, DType dtype,
                   Diagnostics& diags, int64_t workLimit, int64_t* work, proof::SpecRuns* specRuns,
                   proof::ChunkWalks* walks) {
  if (!writtenParamsAlone(lowered, diags))
    return false;
  int64_t done = 0;
  Sweep sweep(lowered, lowered.steps, loweredConfig(spec, nranks, dtype, specRuns, walks), &diags,
              done, workLimit, /*keepFacts=*/false);
  const bool ok = sweep.run();
  if (work)
    *work += done;
  return ok;
}

LoweredAliases proveLoweredAliases(const ir::Program& spec, const VerifyResult& proof,
                                   const ir::Program& lowered, int nranks, DType dtype,
                                   Diagnostics& diags, int64_t workLimit, int64_t* workDone,
                                   proof::SpecRuns* specRuns, proof::ChunkWalks* walks) {
  std::vector<std::pair<std::string, std::string>> pairs;
  if (proof.inPlace)
    pairs.push_back({spec.buffer(spec.output()).name, spec.buffer(spec.input()).name});
  pairs.insert(pairs.end(), proof.auxAliases.begin(), proof.auxAliases.end());
  LoweredAliases result;
  int64_t work = 0; // one budget for every pair
  // Whether the lowered program holds with these pairs as one memory; the diagnostics if not.
  auto holds = [&](const std::vector<std::pair<std::string, std::string>>& aliased,
                   std::string& why) {
    RunConfig config = loweredConfig(spec, nranks, dtype, specRuns, walks);
    for (const auto& [written, read] : aliased) {
      // Both runs share the configuration: user buffers keep their place in the lowered program.
      if (lowered.find(written) != spec.find(written) || lowered.find(read) != spec.find(read))
        internalError("the lowered program moved user buffer '" + written + "' or '" + read + "'");
      config.aliases.push_back({spec.find(written), spec.find(read)});
    }
    // Reported into a string of its own: a pair that is not allowed is no error of the spec.
    llvm::raw_string_ostream out(why);
    Diagnostics quiet(diags.sources(), out);
    Sweep sweep(lowered, lowered.steps, config, &quiet, work, workLimit, /*keepFacts=*/false);
    return sweep.run();
  };
  std::vector<std::pair<std::string, std::string>> allowed;
  for (const auto& pair : pairs) {
    AliasVerdict verdict{pair.first, pair.second, proof.inPlace && result.pairs.empty(), false, ""};
    verdict.allowed = holds({pair}, verdict.why);
    if (verdict.allowed)
      allowed.push_back(pair);
    result.pairs.push_back(std::move(verdict));
  }
  std::string why;
  result.together = allowed.size() < 2 || (proof.aliasesTogether && holds(allowed, why));
  if (workDone)
    *workDone += work;
  return result;
}

} // namespace collc
