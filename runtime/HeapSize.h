// How much symmetric heap a compiled collective needs, so that a world can be sized before the
// instances that will live in it are made (CollectiveInstance carves them out of the heap).
#ifndef COLLC_RUNTIME_HEAPSIZE_H
#define COLLC_RUNTIME_HEAPSIZE_H

#include "abi/CompiledCollective.h"
#include "abi/SizeMath.h"

#include <cstdint>
#include <string>
#include <vector>

namespace collc {

/// Where each instance's scratch copies start in the heap, and the stride between them: a 2 MiB
/// page, so that every instance's scratch lies the same way against pages and the memory's address
/// interleaving, whatever was allocated before it (docs/api.md, CollectiveInstance, "Scratch
/// placement").
constexpr uint64_t kScratchAlign = uint64_t(2) << 20;

/// One copy of an instance's scratch: every buffer back to back, each 256-byte aligned, at
/// `offsets` from the copy's start; copy k starts k * `stride` after copy 0, which starts on a
/// kScratchAlign boundary. CollectiveInstance lays its scratch out by it.
struct ScratchLayout {
  std::vector<uint64_t> offsets; // per scratch buffer of the compiled collective
  uint64_t stride = 0;           // a whole number of kScratchAlign pages
  uint64_t copies = 1;           // the copies calls rotate through
};

/// Sizes past kMaxSize come out as kTooLarge (abi/SizeMath.h), never wrapped.
ScratchLayout scratchLayout(const CompiledCollective& compiled, uint64_t count);

/// Bytes of symmetric heap per rank that one instance of `compiled`, made for calls of up to
/// `count` elements, takes wherever the heap's previous allocations end: the padding to a page,
/// every copy of its scratch (scratchLayout) and its flags, with room to spare. kTooLarge where it
/// would pass kMaxSize (sizesProblem says so first).
uint64_t heapBytesFor(const CompiledCollective& compiled, uint64_t count);

/// Why calls of up to `count` elements cannot be made with `compiled`: a size the runtime or the
/// kernel computes for them (the input, the output, an aux buffer, a scratch buffer, in bytes, or
/// the heap) would not fit in 63 bits. "" if every one does; sizes grow with the count, so every
/// smaller call fits too. CollectiveInstance::create refuses such a maximum count.
std::string sizesProblem(const CompiledCollective& compiled, uint64_t count);

} // namespace collc

#endif // COLLC_RUNTIME_HEAPSIZE_H
