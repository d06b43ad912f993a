// The proof across consecutive calls of one instance: a lowered program run as k calls in a row,
// each with its own count (and root), the calls rotating through the scratch copies by epoch as
// the kernel does. The proof of one call (Simulation.h) says each call is right on its own; this
// one says that calls do not disturb one another: no write of a later call reaches scratch an
// earlier call may still use, and no packet or line an earlier call left behind can satisfy a
// poll of a later one. dsl/README.md ("Across calls") states the model and the claim.
#ifndef COLLC_COMPILER_VERIFY_ACROSSCALLS_H
#define COLLC_COMPILER_VERIFY_ACROSSCALLS_H

#include "compiler/ir/IR.h"
#include "dsl/Diagnostics.h"

#include <cstdint>
#include <functional>

namespace collc {

namespace proof {
class ChunkWalks; // verify/ChunkGroups.h
}

/// How calls share a variant's scratch: how many copies they rotate through (copy = epoch mod
/// copies, the first call's epoch being 1) and the flag each call's packets and lines carry. The
/// kernel's own is rotationOf(program); tests build broken ones to see the proof refuse them.
struct CallRotation {
  int copies = 2;
  /// The flag an LL packet of the call with this epoch carries (the kernel: the epoch's low 32
  /// bits). Scratch starts zeroed, so flag 0 is what a packet no call wrote carries.
  std::function<uint64_t(uint64_t)> packetFlag;
  /// The same for an LL128 line (the kernel: the whole 64-bit epoch).
  std::function<uint64_t(uint64_t)> lineFlag;
  /// The epoch of the first call the proof runs (1: an instance's first call). Every earlier
  /// call of the same copy may still have left packets or lines behind.
  uint64_t firstEpoch = 1;
  /// The last call that runs: a later one returns at its head, touching no scratch and no flag,
  /// and so does every call after it (the kernel of a variant with packets refuses the calls past
  /// COLLC_LAST_PACKET_EPOCH, abi/collc_abi.h, whose packets would repeat a flag).
  uint64_t lastEpoch = UINT64_MAX;
};

/// The rotation the kernel of `lowered` uses (its scratchCopies, the flags CudaCodeGen prints,
/// the last call it runs).
CallRotation rotationOf(const ir::Program& lowered);

/// What the proof across calls did, for `collc check`.
struct AcrossCallsStats {
  int calls = 0;          // k: calls in each sequence
  int configurations = 0; // (root, which regions are empty) classes of one call, over every n
  int64_t sequences = 0;  // sequences of k such classes covered
  int64_t callsRun = 0;   // calls run to cover them (a state met twice is run from once)
  int firstCallRoots = 0; // roots a sequence starts with (1 where every root is root 0 rotated)
  /// The sequences of one class a root that asks more than any class (every statement touches
  /// elements, no read learns from its data) passed, and covered every sequence of classes.
  bool coveredByOneClass = false;
  /// The program keeps chunks apart, and for every chunk k the events of chunks 0 and k with
  /// every barrier passed, chunk k holding elements or not in each call.
  bool coveredByChunkPairs = false;
  /// Of those pairs, how many were pair 1 with ranks 1 and k swapped, and so not run.
  int renamedPairs = 0;
  /// The program keeps chunks apart, and the classes of how many chunks hold elements passed.
  bool coveredByChunkClasses = false;
};

struct AcrossCallsOptions {
  /// Start sequences only with root 0's classes where every root's are root 0's with the ranks
  /// renamed (dsl/README.md, "Across calls"); tests turn it off to compare the two.
  bool rootSymmetry = true;
  /// Try first one class a root that asks more of every sequence than any class does, and run the
  /// classes themselves only where it does not pass (dsl/README.md, "Across calls"); tests turn
  /// it off to compare the two.
  bool coverFirst = true;
  /// Where chunks are kept apart, try first the events of chunks 0 and k for each k, then the
  /// classes of how many chunks hold elements (dsl/README.md, "Across calls"); tests turn it off
  /// to compare the two.
  bool chunkPairs = true;
  /// Of those pairs, take pair k as decided by pair 1 where it is pair 1 with ranks 1 and k
  /// swapped (dsl/README.md, "Across calls"); tests turn it off to compare the two.
  bool pairRenaming = true;
  /// The lowered program's walks of the premise that its proof made (verifyLowered), taken up
  /// again where they passed; none: walked anew.
  proof::ChunkWalks* chunkWalks = nullptr;
};

/// Proves, for `nranks` ranks, that consecutive calls of `lowered` (its steps expanded for
/// nranks) keep each other's scratch intact under `rotation`; false after reporting the first
/// pair of calls that does not. The single call must be proved already (verifyLowered).
bool proveAcrossCalls(const ir::Program& lowered, int nranks, const CallRotation& rotation,
                      Diagnostics& diags, AcrossCallsStats* stats = nullptr,
                      const AcrossCallsOptions& options = {});

} // namespace collc

#endif // COLLC_COMPILER_VERIFY_ACROSSCALLS_H
