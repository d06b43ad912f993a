#include "compiler/passes/Passes.h"

#include <algorithm>

namespace collc {

void vectorize(ir::Program& program, DType dtype, int vectorBytes, int unroll) {
  // An LL packet carries 8 bytes of data: a thread must fill whole packet halves, or two threads
  // would write the same packet.
  for (const auto& buffer : program.buffers)
    if (buffer->access == ir::BufferAccess::LL)
      vectorBytes = std::max(vectorBytes, 8);
  // Accumulation lines and LL128 lines are 128 bytes moved by 8 threads together: 16 bytes each.
  for (const auto& buffer : program.buffers)
    if (buffer->access == ir::BufferAccess::AtomicLines ||
        buffer->access == ir::BufferAccess::LL128)
      vectorBytes = 16;
  const int elems = std::max(1, vectorBytes / int(sizeOf(dtype)));
  for (auto& step : program.steps)
    for (auto& loop : step.loops) {
      loop.vectorElems = elems;
      loop.unroll = unroll;
    }
}

} // namespace collc
