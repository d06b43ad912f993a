// A swizzled block-scale matrix in the runs with n symbolic. Its declared size,
// round_up(n / L, 128) * round_up(ceil_div(L, 16), 4), divides n by 128 (with rows of one
// element, which the proof runs): evaluated with q symbolic it would split every class of n into
// 128 (Affine.h's SplitQ). Nothing but that size depends on the padding rows: the row statement
// that writes the matrix is the only statement that names it, and it writes row t's padded blocks,
// t < n / L, and nothing past them. So the runs with n symbolic, which place row t's blocks at
// t * round_up(ceil_div(L, 16), 4) (a one-to-one renaming of the swizzle), give the matrix those
// rows alone, n / L * round_up(ceil_div(L, 16), 4) elements, affine in q. The runs with numbers
// keep the declared size and the swizzled offsets. dsl/README.md ("Why finitely many runs cover
// every n", step 6) says why the verdict is the same; the verifier refuses a program in which
// another statement names such a buffer (writtenParamNamedElsewhere).
#ifndef COLLC_COMPILER_EXECUTE_PADDEDROWS_H
#define COLLC_COMPILER_EXECUTE_PADDEDROWS_H

#include "compiler/ir/IR.h"

#include <string>
#include <vector>

namespace collc::execute {

/// Per buffer of `program`: the size the runs with n symbolic give it instead of its declared
/// one, or null where it keeps its own. Set for a buffer that a row statement writes as its
/// swizzled block scales, naming it whole, of exactly the declared size form, that no other
/// region of `program` names.
std::vector<ir::Expr> unpaddedSizes(const ir::Program& program);

/// A region of `program` that names the buffer of a parameter some row statement writes, other
/// than that parameter itself, or nullptr; `writer` is then that statement's op. The proof takes
/// every element of such a buffer as written by its row's block alone (and a swizzled matrix's by
/// its rows alone: unpaddedSizes), which another access would break.
const ir::Region* writtenParamNamedElsewhere(const ir::Program& program, std::string* writer);

} // namespace collc::execute

#endif // COLLC_COMPILER_EXECUTE_PADDEDROWS_H
