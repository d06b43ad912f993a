// Unrolls the steps of a program for one rank count: a repeated step (`step ring for s in
// 0..nranks - 1`) becomes one ordinary step per value of its variable, named `ring[s=0]`,
// `ring[s=1]`, ..., with the variable replaced by its value; conditions that become constant
// (`if s == 0`) are resolved, so generated code has no branch on them. Waits are rewritten:
// inside a repeated step, `wait ring` orders a repetition after the previous one (the first has
// nothing to wait for); from any other step, a wait for a repeated step waits for all its
// repetitions. The verifier runs on the unrolled steps of every rank count it proves, and the
// compiler lowers the unrolled steps of the variant's rank count.
#ifndef COLLC_COMPILER_EXPANDSTEPS_H
#define COLLC_COMPILER_EXPANDSTEPS_H

#include "compiler/ir/IR.h"
#include "dsl/Diagnostics.h"

#include <optional>
#include <vector>

namespace collc {

/// Most repetitions a repeated step may have (the unrolled kernel grows with each): enough for a
/// step per peer at the most ranks (COLLC_MAX_RANKS = 72).
inline constexpr int64_t kMaxStepRepetitions = 72;

/// The steps of `program` for `nranks` ranks, or nullopt after reporting why they cannot be
/// unrolled (a repetition count that does not evaluate or is too large).
std::optional<std::vector<ir::Step>> expandRepeatedSteps(const ir::Program& program, int nranks,
                                                         Diagnostics& diags);

} // namespace collc

#endif // COLLC_COMPILER_EXPANDSTEPS_H
