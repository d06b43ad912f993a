// The executor's two value domains (compiler/execute/Walker.h) on one spec and configuration: the
// proof's (which input and aux elements reach each element) and the reference's (float64). Both
// must say the same element reaches the same output.
#pragma once

#include "compiler/ir/IR.h"

#include <cstdint>
#include <string>

namespace collc::differential {

/// What one agreement check covered.
struct Agreement {
  int64_t summed = 0;    // elements whose float64 value is the sum of the proof's sources
  int64_t unwritten = 0; // elements both leave unwritten
  int64_t rowWise = 0;   // elements a row-wise statement computed: both say they are written
};

/// Runs `spec` (its steps expanded for nranks) through both domains with the operator 'sum' and
/// inputs that tell elements apart (distinct integers, so every sum is exact and a different
/// element gives a different sum): every element of the output and of every aux buffer must hold,
/// in float64, the sum of the input and aux elements the proof says reach it, and be NaN exactly
/// where the proof says nothing writes it. A row-wise statement's result is no sum: there both
/// must agree that it is written. Returns the first disagreement, or empty; adds to `covered`.
std::string checkDomainsAgree(const ir::Program& spec, int nranks, int64_t count, int root,
                              int64_t rowLength, Agreement& covered);

} // namespace collc::differential
