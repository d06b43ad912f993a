#include "compiler/CompiledCollective.h"

#include "dsl/CollectiveShapes.h"

namespace collc {

uint64_t CompiledCollective::inputCount(uint64_t count) const {
  return inputElems(kind, count, nranks);
}
uint64_t CompiledCollective::outputCount(uint64_t count) const {
  return outputElems(kind, count, nranks);
}

} // namespace collc
