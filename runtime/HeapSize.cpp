#include "runtime/HeapSize.h"

#include "runtime/Align.h"

#include <algorithm>

namespace collc {

ScratchLayout scratchLayout(const CompiledCollective& compiled, uint64_t count) {
  ScratchLayout layout;
  uint64_t end = 0;
  for (const ScratchBuffer& buffer : compiled.scratch) {
    const uint64_t offset = alignUp(end, 256);
    layout.offsets.push_back(offset);
    end = offset + buffer.bytes(count);
  }
  layout.stride = alignUp(end, kScratchAlign);
  layout.copies = uint64_t(std::max(1, compiled.scratchCopies));
  return layout;
}

uint64_t heapBytesFor(const CompiledCollective& compiled, uint64_t count) {
  const ScratchLayout layout = scratchLayout(compiled, count);
  // The base's alignment can cost up to a page in front of the copies; the flags follow them.
  return kScratchAlign + layout.copies * layout.stride + compiled.flagsBytes() + 4096;
}

} // namespace collc
