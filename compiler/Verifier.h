// The verifier proves a spec before any code is generated, and checks the program each strategy
// lowers it to, by running the data flow for every rank count the spec declares (`collc check`;
// a compile runs its variant's), every root, and every count n (verify/Simulation.h): each
// element holds the multiset of (rank, index)
// contributions that reached it. It checks
//  - the collective's postcondition (AllReduce: every rank's out[i] holds every rank's in[i] once),
//  - bounds of every access,
//  - that every read of data another rank (or thread) wrote is ordered after the write,
//  - that no two writes race on one location in one step, and no write races a read,
//  - that scratch is never read before it is written,
//  - that every `wait` orders something for some rank count and n,
//  - in the lowered program: the same, with barriers and polls instead of waits, and the rules of
//    the strategy's unit (packets, polled elements, accumulation lines).
// Why the finitely many runs cover every n: execute/Affine.h and dsl/README.md.
// A failed proof is an error at the offending statement naming the rank count and n that break.
#ifndef COLLC_COMPILER_VERIFIER_H
#define COLLC_COMPILER_VERIFIER_H

#include "compiler/ir/IR.h"
#include "dsl/Diagnostics.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace collc {

namespace proof {
class SpecRuns;   // verify/Simulation.h
class ChunkWalks; // verify/ChunkGroups.h
} // namespace proof

/// The facts of VerifyResult below (see there) of the runs of one rank count.
struct RankFacts {
  int nranks = 0;
  bool indexAligned = true;
  bool localAligned = true;
  bool remoteWriteOrdering = false;
  bool usesAtomics = false;
  bool exchangesAreMutual = true;
  bool remoteDataReadOnce = true;
  std::set<int> remotelyWritten, locallyWritten;
};

/// What the proof found out about the spec's data flow, over every rank count it proved and n.
/// The sync lowering passes decide from these facts whether their strategy applies.
struct VerifyResult {
  bool ok = false;
  /// Every dependency crosses ranks (or steps) at the same element index of loops with the same
  /// bound, so the thread block that reads an element is the one whose peers wrote it. The barrier
  /// lowering then needs only per-block flags.
  bool indexAligned = true;
  /// Every read of data this rank wrote in an earlier step is by the thread that wrote it. When
  /// false, only a barrier orders the two (data arrival signals cross ranks, not threads).
  bool localAligned = true;
  /// Some remote write had to be ordered after a peer's earlier use of that memory by a wait
  /// (write-after-read across ranks): a barrier orders that, data arrival does not.
  bool remoteWriteOrdering = false;
  /// atomic_add is used: completion of an accumulation is not visible per element.
  bool usesAtomics = false;
  /// Whenever rank A writes data that rank B reads, B also writes data that A reads in the same
  /// call. Then A cannot start call k+2 before B has finished call k, which is what lets
  /// data-arrival strategies reuse their buffers every other call without a barrier.
  bool exchangesAreMutual = true;
  /// Every element another rank writes is written at most once and read at most once per call
  /// (the sentinel strategy clears an element when it reads it).
  bool remoteDataReadOnce = true;
  /// Scratch buffers (by Program::buffers index) that other ranks write with put / atomic_add,
  /// and those this rank also writes itself.
  std::set<int> remotelyWritten, locallyWritten;
  /// The output may be the input's memory (an in-place call): proved like the rest.
  bool inPlace = false;
  /// The first statement whose result is right for the operator 'sum' only (a '+' of two values
  /// that carry the input, aux data in a reduce, atomic_add), as an offset into the spec's text
  /// (-1: the spec is right for every operator), and why. Variants of another operator are
  /// refused there. An offset, not a location: proofs are remembered beyond their source buffer.
  int64_t sumOnlyOffset = -1;
  std::string sumOnlyWhy;
  /// Aux buffers that may be the same memory: (written, read) names, proved like the rest.
  std::vector<std::pair<std::string, std::string>> auxAliases;
  /// Every pair above (in place included) also holds with all of them at once; vacuously true
  /// for fewer than two. Each pair alone says nothing of two at once.
  bool aliasesTogether = true;
  /// Why in place is not allowed, when the spec has an input and an output of one shape (the
  /// diagnostics of the rule the in-place run breaks).
  std::string inPlaceWhy;
  /// The facts above for each rank count proved (every one the spec declares, or the variant's).
  std::vector<RankFacts> byRanks;
  /// Runs made (configurations of rank count, root and count) and the work they took.
  int64_t runs = 0;
  int64_t work = 0;
};

/// Work (segment operations) the runs of one spec may take together, its alias proofs included;
/// past it the spec is refused as too large to prove (aliases past it are not allowed).
inline constexpr int64_t kDefaultVerifyWorkLimit = 50'000'000;

/// Proves `program` (as Sema built it) for every rank count it declares, or, with `onlyRanks`
/// one of them, for that one (what a variant of that rank count needs): its facts are that
/// count's, and a wait that orders nothing there makes the other counts run until one it orders
/// something for (a wait must order something for some declared count).
VerifyResult verify(const ir::Program& program, Diagnostics& diags,
                    int64_t workLimit = kDefaultVerifyWorkLimit, int onlyRanks = 0);

/// `proof` with the facts of `nranks` alone (one of the counts it proved) in place of those of
/// every count: what a variant of that rank count is lowered with, so that it lowers the same
/// whether the proof covered one rank count or all.
VerifyResult proofForRanks(const VerifyResult& proof, int nranks);

/// Checks `lowered`, the program a strategy lowered `spec` (its steps expanded) to for `nranks`,
/// for every root and every n: it breaks no rule and computes what the spec computes. Reports, as
/// the strategy's, what it finds; true if nothing.
/// `work`, if given, has the work done added to it.
/// `specRuns`, if given, keeps the spec's runs this compares with for the next lowered program of
/// the same spec (verify/Simulation.h); `walks`, if given, keeps the walks of `lowered` that its
/// alias proofs and its proof across calls take up again (verify/ChunkGroups.h).
bool verifyLowered(const ir::Program& spec, const ir::Program& lowered, int nranks, DType dtype,
                   Diagnostics& diags, int64_t workLimit = kDefaultVerifyWorkLimit,
                   int64_t* work = nullptr, proof::SpecRuns* specRuns = nullptr,
                   proof::ChunkWalks* walks = nullptr);

/// Whether a caller may pass two buffers of one variant as the same memory: the spec's proof
/// allows the pair, and the lowered program, run with the two sharing their elements, breaks no
/// rule and computes what the spec computes so (its strategy orders threads and ranks in its own
/// way, so a pair the spec allows may race in the kernel).
struct AliasVerdict {
  std::string written, read; // buffer names
  bool inPlace = false;      // the pair is the output and the input
  bool allowed = false;
  std::string why; // when not allowed: the diagnostics of the rule the lowered program breaks
};

/// What a lowered program allows of the pairs its spec allows.
struct LoweredAliases {
  std::vector<AliasVerdict> pairs; // in place first, then the aux pairs
  bool together = true; // the allowed pairs also hold all at once (vacuous for fewer than two)
};

/// The verdicts for every pair `proof` allows, for the program `lowered` that a strategy made of
/// `spec` (steps expanded) for `nranks`. The proofs share `workLimit` (and add their work to
/// `work`, if given); one that does not finish within it is not allowed. `specRuns` and `walks`
/// as for verifyLowered.
LoweredAliases proveLoweredAliases(const ir::Program& spec, const VerifyResult& proof,
                                   const ir::Program& lowered, int nranks, DType dtype,
                                   Diagnostics& diags, int64_t workLimit = kDefaultVerifyWorkLimit,
                                   int64_t* work = nullptr, proof::SpecRuns* specRuns = nullptr,
                                   proof::ChunkWalks* walks = nullptr);

} // namespace collc

#endif // COLLC_COMPILER_VERIFIER_H
