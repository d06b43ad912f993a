// How much symmetric heap a compiled collective needs, so that a world can be sized before the
// instances that will live in it are made (CollectiveInstance carves them out of the heap).
#ifndef COLLC_RUNTIME_HEAPSIZE_H
#define COLLC_RUNTIME_HEAPSIZE_H

#include "compiler/CompiledCollective.h"

#include <cstdint>

namespace collc {

/// Where each instance's scratch copies start in the heap, and the stride between them: a 2 MiB
/// page, so that every instance's scratch lies the same way against pages and the memory's address
/// interleaving, whatever was allocated before it (docs/runtime.md, "Scratch placement").
constexpr uint64_t kScratchAlign = uint64_t(2) << 20;

/// Bytes of symmetric heap per rank that one instance of `compiled`, made for calls of up to
/// `count` elements, takes: every copy of its scratch (256-byte aligned) and its flags, with room
/// to spare.
uint64_t heapBytesFor(const CompiledCollective& compiled, uint64_t count);

} // namespace collc

#endif // COLLC_RUNTIME_HEAPSIZE_H
