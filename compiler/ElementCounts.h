// A spec's size expression as the plain numbers the runtime computes sizes from (ElementCount),
// for one variant: its rank count and row length fixed; and its scratch buffers so described.
#ifndef COLLC_COMPILER_ELEMENTCOUNTS_H
#define COLLC_COMPILER_ELEMENTCOUNTS_H

#include "abi/CompiledCollective.h"
#include "compiler/ir/IR.h"

namespace collc {

/// `size` (a size Sema accepted: ir::sizeForm holds) with nranks and the row length fixed.
ElementCount elementCount(const ir::Expr& size, int nranks, int64_t rowLength);

/// A scratch buffer of a lowered program as the runtime sizes and fills it, for one variant.
ScratchBuffer describeScratch(const ir::Buffer& buffer, int nranks, DType dtype, int64_t rowLength);

} // namespace collc

#endif // COLLC_COMPILER_ELEMENTCOUNTS_H
