#include "abi/CompiledCollective.h"

#include "abi/CollectiveShapes.h"
#include "abi/SizeMath.h"

#include <fmt/format.h>

namespace collc {

std::string launchText(const LaunchShape& shape) {
  // Whole stores are named only where on, so that the names of variants without them stay as
  // they were before the knob existed (in tables, logs and results).
  return fmt::format("{}x{} v{} u{}{}", shape.blocks, shape.threads, shape.vectorBytes,
                     shape.unroll, shape.wholeStores == 1 ? " w1" : "");
}

uint64_t ElementCount::at(uint64_t count) const {
  // The kernel computes chunk(perCount * n + constant) from the whole length: it must fit too.
  const uint64_t base = sizeAdd(sizeMul(perCount, count), constant);
  if (chunked)
    return chunkSize(base, nranks);
  if (perRow == 0)
    return base;
  // rowLength and rowMultiple are at least 1 wherever perRow is not 0 (the bundle reader refuses
  // others); the count of a spec with rows is whole rows.
  const uint64_t rows = sizeAlignUp(count / rowLength, rowMultiple);
  return sizeAdd(base, sizeMul(perRow, rows));
}

uint64_t ScratchBuffer::bytes(uint64_t count) const {
  const uint64_t elems = slotElems.at(count);
  uint64_t slotBytes = sizeMul(elems, elementBytes);
  auto ll128Lines = [](uint64_t bytes) { return sizeMul(sizeDivCeil(bytes, 120), 128); };
  switch (storage) {
  case ScratchStorage::Elements:
    break;
  case ScratchStorage::Packets:
    slotBytes = sizeMul(sizeDivCeil(slotBytes, 8), 16);
    break;
  case ScratchStorage::AtomicLines:
    slotBytes = sizeAlignUp(slotBytes, 128);
    break;
  case ScratchStorage::LineHeads:
    slotBytes = sizeMul(sizeDivCeil(elems, 8), elementBytes);
    break;
  case ScratchStorage::LL128Lines:
    slotBytes = ll128Lines(slotBytes);
    break;
  case ScratchStorage::LL128LinesPerChunk:
    slotBytes = sizeMul(uint64_t(slotElems.nranks),
                        ll128Lines(sizeMul(chunkSize(elems, slotElems.nranks), elementBytes)));
    break;
  }
  return sizeMul(uint64_t(slots), slotBytes);
}

uint64_t CompiledCollective::inputCount(uint64_t count) const {
  return inputElems(kind, count, nranks);
}
uint64_t CompiledCollective::outputCount(uint64_t count) const {
  return outputElems(kind, count, nranks);
}

} // namespace collc
