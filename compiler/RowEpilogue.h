// Row-wise epilogues: `rows NAME` in the header makes every user buffer of n elements n / NAME rows
// of NAME elements, and `out = rmsnorm(y, weight)` normalises each row of y by its root mean
// square and scales it by a weight one row long. Such a statement needs a whole row at once, so a
// step that holds one is split by rows (one thread block per row) instead of by elements. These
// are the rules that make that split possible, checked on the IR before anything runs.
#ifndef COLLC_COMPILER_ROWEPILOGUE_H
#define COLLC_COMPILER_ROWEPILOGUE_H

#include "abi/CompiledCollective.h"
#include "compiler/ir/IR.h"
#include "dsl/Diagnostics.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace collc {

/// True if `step` has a row-wise statement (its work must be split by rows).
bool hasRowStatement(const ir::Step& step);

/// Sema's checks: a row-wise statement needs `rows`, is a statement of its step (not in a loop),
/// reads and writes whole buffers of n elements and a weight of one row; every other statement
/// of its step is a local assignment over whole buffers of n elements (so that the block that
/// owns a row computes all of it). Reports each violation at its place.
void checkRowStatements(const ir::Program& program, Diagnostics& diags);

/// The largest row length a variant may have (`rows NAME = INT`, --hidden,
/// CompileOptions::rowLength): 2^30 elements.
inline constexpr int64_t kMaxRowLength = int64_t(1) << 30;

/// The variant's row length: given exactly when the spec declares rows, 1..kMaxRowLength, a
/// multiple of the vector width of every row-split loop (so a vector never straddles two rows,
/// which two different blocks own). Run after vectorize. Reports at the `rows` clause (or the
/// collective).
bool checkRowLength(const ir::Program& program, int64_t rowLength, Diagnostics& diags);

/// The aux user buffers of `program` for the runtime: sizes, and whether the spec writes them.
std::vector<AuxBuffer> describeAuxBuffers(const ir::Program& program, int nranks,
                                          int64_t rowLength);

/// The fused AllReduce + residual add + RMSNorm, if `program` computes exactly that:
/// `R_OUT = reduce(...) + R_IN` and `OUT = rmsnorm(R_OUT, W)` in one step, R_IN, R_OUT and W aux
/// buffers, OUT the output.
std::optional<AddRmsNormEpilogue> findAddRmsNorm(const ir::Program& program);

/// The (n, row length) pairs the verifier runs a spec for with `nranks` ranks: for a spec
/// without rows, counts that exercise a single element, counts that do not split evenly into
/// chunks or vectors, and one where every rank owns several aligned chunks (row length 0); with
/// rows, the same lengths as rows of a one-, three- and two-row call.
std::vector<std::pair<int64_t, int64_t>> shapesToVerify(const ir::Program& program, int nranks);

} // namespace collc

#endif // COLLC_COMPILER_ROWEPILOGUE_H
