// One run of a program's data flow for one configuration (rank count, root, count n): the
// executor (compiler/execute/Walker.h) over the proof's value domain. Element by element in
// effect, every element of a buffer holds the multiset of (rank, input index) contributions that
// reached it. Elements that fare alike are kept together as segments of a slot, so a run costs as
// much as its statements and their boundaries, not as n: that is what lets the verifier run every
// count's residue with n symbolic (execute/Affine.h).
//
// The same run checks the spec (its `wait`s order what it reads) and the lowered program (its
// barriers and polls do), the latter with the rules of the unit each strategy works in: a packet
// or element a peer writes is written once per call, packets of different writers never share 16
// bytes, accumulation lines receive every rank's add exactly once before they are taken.
#ifndef COLLC_COMPILER_VERIFY_SIMULATION_H
#define COLLC_COMPILER_VERIFY_SIMULATION_H

#include "compiler/Verifier.h"
#include "compiler/execute/Affine.h"
#include "compiler/ir/IR.h"
#include "dsl/Diagnostics.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace collc::proof {

// The executor's integers (n affine) serve the proof's configurations and errors.
using execute::Affine;
using execute::AffineError;
using execute::Arith;
using execute::SplitQ;

/// Memory one run may take for its elements (segments, their values and accesses): with the work
/// budget, what bounds the verifier for any input. Past it a run throws AffineError{"memory"}.
inline constexpr int64_t kMaxRunBytes = int64_t(512) << 20;

/// Thrown when a run has found (and, in a run that reports, reported) a broken rule.
struct RunFailed {};

class SpecRuns;
struct ChunkRotation; // verify/ChunkGroups.h
class ChunkWalks;     // verify/ChunkGroups.h

struct RunConfig {
  int nranks = 2;
  int root = 0;
  Affine count;          // n
  int64_t rowLength = 0; // a spec with rows: the row length of this run
  /// Buffers that are the same memory as another: (alias, original). The alias starts holding
  /// the original's data (an in-place call: out is in, residual_out is residual).
  std::vector<std::pair<ir::BufferId, ir::BufferId>> aliases;
  /// Run the lowered program (barriers, polls, flagged stores) rather than the spec.
  bool lowered = false;
  /// Elements per LL packet half (8 bytes of data) for the lowered run's packet rules.
  int packetElems = 2;
  /// Work this run may do before it gives up (the spec is too large to verify).
  int64_t budget = 0;
  /// A lowered run: the spec it was lowered from (its steps expanded for the same rank count),
  /// whose results it must reproduce.
  const ir::Program* reference = nullptr;
  const std::vector<ir::Step>* referenceSteps = nullptr;
  /// A lowered run: where the spec's run of this configuration may already be (SpecRuns).
  SpecRuns* specRuns = nullptr;
  /// Run the statements of chunk 0 alone, where chunks are rotations of chunk 0
  /// (verify/ChunkGroups.h): its verdict is every chunk's, and the facts are completed as every
  /// chunk's run would find them. Where they are not, the run throws AffineError{"chunks"}. The
  /// reference spec's run (a lowered run's) is made the same way.
  bool chunkZeroOnly = false;
  /// With chunkZeroOnly, where the caller has checked them (else the run checks them itself):
  /// whyChunksAreNotRotations's ChunkRotation of this run's program, steps, rank count and
  /// aliases, and of the reference spec's with the same.
  const ChunkRotation* rotation = nullptr;
  const ChunkRotation* referenceRotation = nullptr;
  /// The premise's walks of this program kept for its runs with other aliases (ChunkGroups.h), or
  /// none: each run walks its own.
  ChunkWalks* chunkWalks = nullptr;
};

/// What one run found out about the data flow (VerifyResult's facts, for this configuration).
struct RunFacts {
  bool indexAligned = true, localAligned = true, remoteWriteOrdering = false, usesAtomics = false;
  bool remoteDataReadOnce = true;
  std::set<std::pair<int, int>> dataEdges; // (writer rank, reader rank) of data read remotely
  std::set<int> remotelyWritten, locallyWritten;
  /// (step, wait's location) of every `wait` that ordered something.
  std::set<std::pair<int, const char*>> usedWaits;
  /// The first statement whose result holds for the operator 'sum' only, and why (none: every
  /// operator). See Run::noteOperators.
  llvm::SMLoc sumOnlyAt;
  std::string sumOnlyWhy;
  int64_t work = 0;
};

/// The spec's runs that lowered programs are compared with, each kept after it is made. Every
/// lowered program of a spec (each element type, each strategy, with or without aliases) is
/// compared, configuration by configuration, with the spec's run of the same configuration, which
/// does not depend on the program compared: a kept run stands for running it again, with the same
/// outcome, the same comparisons recorded (Arith) and the same work against the budget. Kept runs
/// are those of one spec: its steps expanded for each rank count, as the lowering expands them
/// (the key holds the spec's location and rank count). Runs past kMaxBytes are not kept.
class SpecRuns {
public:
  SpecRuns();
  ~SpecRuns();
  SpecRuns(const SpecRuns&) = delete;
  SpecRuns& operator=(const SpecRuns&) = delete;

  struct Store;
  Store& store() { return *store_; }
  /// whyChunksAreNotRotations of the spec (verify/ChunkGroups.h) for `steps` expanded for
  /// `nranks`, with `aliases`: made once a rank count and set of aliases, as the spec's runs are,
  /// for every lowered program compared with them. `rotation` receives what it gave.
  std::string whySpecChunksAreNotRotations(
      const ir::Program& spec, const std::vector<ir::Step>& steps, int nranks,
      const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases, ChunkRotation* rotation);
  /// Runs kept, and runs that a lowered run found kept rather than made.
  size_t kept() const;
  int64_t reused() const;

  static constexpr int64_t kMaxBytes = int64_t(256) << 20;

private:
  std::unique_ptr<Store> store_;
};

/// Runs `steps` (the program's, expanded for config.nranks) once. `diags` null: quiet (a symbolic
/// run reports nothing; the caller reruns the failing configuration with numbers to report it).
/// Throws RunFailed (after reporting) on a broken rule, AffineError on an internal limit, SplitQ
/// where a position is not affine in q for this residue class (execute/Affine.h).
RunFacts simulate(const ir::Program& program, const std::vector<ir::Step>& steps,
                  const RunConfig& config, Arith& arith, Diagnostics* diags);

/// An element of some rank's input (tag 0) or aux buffer (tag k: aux buffer k - 1) that reached an
/// element. A weight's element (`anyIndex`) is the one of the element's row position.
struct Source {
  int rank = 0;
  int tag = 0;
  int64_t index = 0;
  bool anyIndex = false;
};
/// What one element holds at the end of a run: its sources (sorted by tag, rank, index), or
/// nullopt where nothing wrote it.
using ElementSources = std::optional<std::vector<Source>>;
/// [rank][element] of each output and aux buffer, by buffer.
using FinalSources = std::map<ir::BufferId, std::vector<std::vector<ElementSources>>>;

/// Runs the spec `steps` once for a configuration with a fixed count (config.count constant, no
/// reference) and says which input and aux elements reach each element of its output and aux
/// buffers. Throws RunFailed where the spec breaks a rule there.
FinalSources finalSources(const ir::Program& program, const std::vector<ir::Step>& steps,
                          const RunConfig& config);

} // namespace collc::proof

#endif // COLLC_COMPILER_VERIFY_SIMULATION_H
