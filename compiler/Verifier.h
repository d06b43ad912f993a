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

#include "compiler/IR.h"
#include "dsl/Diagnostics.h"

namespace collc {

struct VerifyResult {
  bool ok = false;
  /// Every dependency crosses ranks (or steps) at the same element index of loops with the same
  /// bound, so the thread block that reads an element is the one whose peers wrote it. The barrier
  /// lowering then needs only per-block flags.
  bool indexAligned = true;
};

VerifyResult verify(const ir::Program& program, Diagnostics& diags);

} // namespace collc

#endif // COLLC_COMPILER_VERIFIER_H
