// Which of a call's buffers the run harness passes as one memory: the output as the input (in
// place), and the aux buffers that CompiledCollective::auxAliases pairs. A variant allows what the
// verifier proved of its own lowered program; the runtime refuses a launch that passes anything
// else as one memory (runtime/BufferOverlap.h), and the harness refuses the request before that,
// saying why. No CUDA here.
#ifndef COLLC_TOOLS_HARNESS_BUFFERSHARING_H
#define COLLC_TOOLS_HARNESS_BUFFERSHARING_H

#include "abi/CompiledCollective.h"
#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace collc {

struct BufferSharing {
  bool inPlace = false;    // out is in's memory
  bool auxAliased = false; // each pair of CompiledCollective::auxAliases is one memory

  bool any() const { return inPlace || auxAliased; }
};

/// "in place", "aux aliased", "in place and aux aliased", or "distinct buffers".
std::string describe(BufferSharing sharing);

/// Success where `compiled` allows `sharing` in calls of `count` elements; else which buffers its
/// lowered program was not proved for, and where to look (collc check). What the runtime would
/// refuse at launch is refused here, with the variant named.
Error checkBufferSharing(const CompiledCollective& compiled, BufferSharing sharing, uint64_t count);

/// For each aux buffer k, the aux buffer whose memory it uses: k itself, or with
/// sharing.auxAliased the read buffer of its pair when k is the written one. Assumes
/// checkBufferSharing passed.
std::vector<int> auxMemoryOwners(const CompiledCollective& compiled, BufferSharing sharing);

} // namespace collc

#endif // COLLC_TOOLS_HARNESS_BUFFERSHARING_H
