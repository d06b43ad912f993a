// One variant of a spec interpreted in float64 (compiler/interpret/) against what it must compute:
// the spec against its kind's result (computed here, independently, with NCCL's layouts) where it
// has no aux buffers or rows, and the lowered program against the spec for every buffer the call
// leaves, also in place and with aliased aux buffers where the variant allows them. Inputs are
// small integers, so every sum is exact in any order and results compare
// exactly. Shared by the interpreter's test on the stdlib and the differential test.
#pragma once

#include "compiler/Compile.h"
#include "tests/differential/DomainAgreement.h"

#include <cstdint>
#include <string>
#include <vector>

namespace collc::differential {

/// Counts that leave the last chunk empty, hold one element in it, and make it long and partial;
/// whole rows for a spec with rows.
std::vector<int64_t> interpretedCounts(int nranks, int64_t rowLength);

/// Calls interpreted and compared.
struct InterpretedCalls {
  int calls = 0;    // with distinct buffers
  int inPlace = 0;  // the lowered program in place
  int aliased = 0;  // the lowered program with aux buffers as one memory (in place too, if allowed)
  Agreement agreed; // the spec through the proof's domain and the reference's (barrier, sum)
};

/// Interprets `programs` (one variant, options as compiled) at every count of interpretedCounts
/// and every root; returns the first difference found (with where), or empty. Where the lowered
/// program was proved for buffers as one memory (lowerVariantPrograms' proveAliases), it is also
/// run so at the longest count, each allowed pair alone and all of them at once where
/// aliasesTogether, on the same inputs: what it leaves must be what the spec computes with
/// distinct buffers. For barrier and sum (once a spec and rank count), the spec also runs through
/// the proof's domain at each count and root, and both must agree (checkDomainsAgree). Adds the
/// calls interpreted to `counts`.
std::string checkInterpreted(const VariantPrograms& programs, const CompileOptions& options,
                             InterpretedCalls& counts);

} // namespace collc::differential
