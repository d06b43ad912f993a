// The verifier proves a spec before any code is generated, by running its data flow symbolically
// for every rank count it declares and several element counts: each element of each buffer holds
// the multiset of (rank, index) contributions that reached it. It checks
//  - the collective's postcondition (AllReduce: every rank's out[i] holds every rank's in[i] once),
//  - bounds of every access,
//  - that every read of data another rank wrote is ordered after the write by a `wait`,
//  - that no two writes race on one location in one step, and no write races a read,
//  - that scratch is never read before it is written,
//  - that every `wait` is matched: something the waited step writes is read after the wait.
// A failed proof is an error at the offending statement naming the rank count and n that break.
#ifndef COLLC_COMPILER_VERIFIER_H
#define COLLC_COMPILER_VERIFIER_H

#include "compiler/ir/IR.h"
#include "dsl/Diagnostics.h"

#include <set>

namespace collc {

/// What the proof found out about the spec's data flow, over every rank count and n it tried.
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
};

VerifyResult verify(const ir::Program& program, Diagnostics& diags);

} // namespace collc

#endif // COLLC_COMPILER_VERIFIER_H
