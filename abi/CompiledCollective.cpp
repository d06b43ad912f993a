#include "abi/CompiledCollective.h"

#include "abi/CollectiveShapes.h"

#include <fmt/format.h>

namespace collc {

std::string launchText(const LaunchShape& shape) {
  // Whole stores are named only where on, so that the names of variants without them stay as
  // they were before the knob existed (in tables, logs and results).
  return fmt::format("{}x{} v{} u{}{}", shape.blocks, shape.threads, shape.vectorBytes,
                     shape.unroll, shape.wholeStores == 1 ? " w1" : "");
}

uint64_t CompiledCollective::inputCount(uint64_t count) const {
  return inputElems(kind, count, nranks);
}
uint64_t CompiledCollective::outputCount(uint64_t count) const {
  return outputElems(kind, count, nranks);
}

} // namespace collc
