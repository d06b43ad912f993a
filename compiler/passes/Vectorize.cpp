#include "compiler/passes/Passes.h"

#include <algorithm>

namespace collc {

void vectorize(ir::Program& program, DType dtype, int vectorBytes, int unroll) {
  const int elems = std::max(1, vectorBytes / int(sizeOf(dtype)));
  for (auto& step : program.steps)
    for (auto& loop : step.loops) {
      loop.vectorElems = elems;
      loop.unroll = unroll;
    }
}

} // namespace collc
