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

uint64_t ElementCount::at(uint64_t count) const {
  const uint64_t base = perCount * count + constant;
  return chunked ? chunkSize(base, nranks) : base;
}

uint64_t ScratchBuffer::bytes(uint64_t count) const {
  const uint64_t elems = slotElems.at(count);
  uint64_t slotBytes = elems * elementBytes;
  auto ll128Lines = [](uint64_t bytes) { return (bytes + 119) / 120 * 128; };
  switch (storage) {
  case ScratchStorage::Elements:
    break;
  case ScratchStorage::Packets:
    slotBytes = (slotBytes + 7) / 8 * 16;
    break;
  case ScratchStorage::AtomicLines:
    slotBytes = (slotBytes + 127) / 128 * 128;
    break;
  case ScratchStorage::LineHeads:
    slotBytes = (elems + 7) / 8 * elementBytes;
    break;
  case ScratchStorage::LL128Lines:
    slotBytes = ll128Lines(slotBytes);
    break;
  case ScratchStorage::LL128LinesPerChunk:
    slotBytes =
        uint64_t(slotElems.nranks) * ll128Lines(chunkSize(elems, slotElems.nranks) * elementBytes);
    break;
  }
  return uint64_t(slots) * slotBytes;
}

uint64_t CompiledCollective::inputCount(uint64_t count) const {
  return inputElems(kind, count, nranks);
}
uint64_t CompiledCollective::outputCount(uint64_t count) const {
  return outputElems(kind, count, nranks);
}

} // namespace collc
