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
  return count;
}

} // namespace collc
