#include "compiler/ElementCounts.h"

#include "dsl/Diagnostics.h"

namespace collc {

ElementCount elementCount(const ir::Expr& size, int nranks, int64_t rowLength) {
  ir::Env env;
  env.nranks = nranks;
  env.rowLength = rowLength;
  std::string why;
  auto form = ir::sizeForm(size, env, &why);
  if (!form)
    internalError("a size Sema accepted has no plain form: " + why);
  ElementCount count;
  count.perCount = uint64_t(form->perCount);
  count.constant = uint64_t(form->constant);
  count.chunked = form->chunked;
  count.nranks = nranks;
  if (form->perRow != 0) {
    count.perRow = uint64_t(form->perRow);
    count.rowLength = uint64_t(rowLength);
    count.rowMultiple = uint64_t(form->rowMultiple);
  }
  return count;
}

ScratchBuffer describeScratch(const ir::Buffer& buffer, int nranks, DType dtype,
                              int64_t rowLength) {
  ScratchBuffer scratch;
  scratch.name = buffer.name;
  ir::Env env;
  env.nranks = nranks;
  scratch.slots = int(ir::evaluate(buffer.slots, env).value_or(1));
  scratch.slotElems = elementCount(buffer.slotElems, nranks, rowLength);
  scratch.elementBytes = sizeOf(dtype);
  scratch.storage = buffer.storage;
  if (buffer.filledWithNegativeZero) {
    scratch.fillWidth = int(scratch.elementBytes);
    scratch.fillBits = scratch.elementBytes == 4 ? 0x80000000u : 0x8000u; // -0.0
  }
  return scratch;
}

} // namespace collc
