#include "runtime/HeapSize.h"

#include <algorithm>

namespace collc {

uint64_t heapBytesFor(const CompiledCollective& compiled, uint64_t count) {
  uint64_t copyBytes = 0;
  for (const auto& scratch : compiled.scratch)
    copyBytes += scratch.bytes(count) + 256;
  const uint64_t copies = uint64_t(std::max(1, compiled.scratchCopies));
  return copies * (copyBytes + 256) + compiled.flagsBytes() + 4096;
}

} // namespace collc
