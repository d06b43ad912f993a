#include "runtime/HeapSize.h"

#include "abi/SizeMath.h"

#include <algorithm>
#include <utility>

namespace collc {

ScratchLayout scratchLayout(const CompiledCollective& compiled, uint64_t count) {
  ScratchLayout layout;
  uint64_t end = 0;
  for (const ScratchBuffer& buffer : compiled.scratch) {
    const uint64_t offset = sizeAlignUp(end, 256);
    layout.offsets.push_back(offset);
    end = sizeAdd(offset, buffer.bytes(count));
  }
  layout.stride = sizeAlignUp(end, kScratchAlign);
  layout.copies = uint64_t(std::max(1, compiled.scratchCopies));
  return layout;
}

uint64_t heapBytesFor(const CompiledCollective& compiled, uint64_t count) {
  const ScratchLayout layout = scratchLayout(compiled, count);
  // The base's alignment can cost up to a page in front of the copies; the flags follow them.
  return sizeAdd(sizeAdd(kScratchAlign, sizeMul(layout.copies, layout.stride)),
                 sizeAdd(compiled.flagsBytes(), 4096));
}

std::string sizesProblem(const CompiledCollective& compiled, uint64_t count) {
  const uint64_t elementBytes = sizeOf(compiled.dtype);
  std::vector<std::pair<std::string, uint64_t>> sizes = {
      {"the input", sizeMul(compiled.inputCount(count), elementBytes)},
      {"the output", bytesOf(compiled.outputType(), compiled.outputCount(count))}};
  for (size_t k = 0; k < compiled.aux.size(); ++k)
    sizes.push_back({"buffer '" + compiled.aux[k].name + "'",
                     bytesOf(compiled.auxType(k), compiled.aux[k].elements(count))});
  for (const ScratchBuffer& buffer : compiled.scratch)
    sizes.push_back({"scratch '" + buffer.name + "'", buffer.bytes(count)});
  sizes.push_back({"the symmetric heap", heapBytesFor(compiled, count)});
  for (const auto& [what, bytes] : sizes)
    if (!fitsSize(bytes))
      return "calls of up to " + std::to_string(count) +
             " elements would need more than 2^63 - 1 "
             "bytes for " +
             what + ": collc refuses sizes that do not fit in 63 bits";
  return "";
}

} // namespace collc
