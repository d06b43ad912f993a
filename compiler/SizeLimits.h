// Sizes that cannot fit, refused when a variant is lowered. Every size of a call grows with its
// count n (Sema: a * n + b with a, b >= 0), so a buffer that takes more than 2^63 - 1 bytes for the
// smallest call (n = 1, or one row) takes more for every call: that is known before any call, and
// reported at the buffer. A count too large for buffers that fit at n = 1 is the runtime's to
// refuse (runtime/HeapSize.h: sizesProblem, when an instance is made).
#ifndef COLLC_COMPILER_SIZELIMITS_H
#define COLLC_COMPILER_SIZELIMITS_H

#include "abi/Types.h"
#include "compiler/ir/IR.h"
#include "dsl/Diagnostics.h"

namespace collc {

/// Checks the scratch buffers of `lowered` (each with its copies, and all together) and its aux
/// buffers, as the runtime sizes them for the variant (`dtype`, `nranks`, `rowLength`), at the
/// smallest call; reports each that does not fit in 63 bits at its declaration, and each whose
/// size has no plain form (ir::sizeForm) at the variant's row length. True if all fit.
bool checkSizesFit(const ir::Program& lowered, DType dtype, int nranks, int64_t rowLength,
                   Diagnostics& diags);

} // namespace collc

#endif // COLLC_COMPILER_SIZELIMITS_H
