#include "runtime/HeapSize.h"

#include "runtime/Align.h"

#include <algorithm>

namespace collc {

uint64_t heapBytesFor(const CompiledCollective& compiled, uint64_t count) {
  uint64_t copyBytes = 0;
  for (const auto& scratch : compiled.scratch)
    copyBytes += scratch.bytes(count) + 256;
  const uint64_t copies = uint64_t(std::max(1, compiled.scratchCopies));
  const uint64_t stride = alignUp(copyBytes, kScratchAlign);
  // The base's alignment can cost up to a page in front of the copies.
  return kScratchAlign + copies * stride + compiled.flagsBytes() + 4096;
}

} // namespace collc
