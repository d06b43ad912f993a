// The memory a launch is given: the verifier proves a spec for distinct buffers, and for the
// pairs it also proved as one memory (CompiledCollective::inPlace, auxAliases). Any other pair
// that shares a byte would run a program nobody proved, so the launch is refused.
#ifndef COLLC_RUNTIME_BUFFEROVERLAP_H
#define COLLC_RUNTIME_BUFFEROVERLAP_H

#include "abi/CompiledCollective.h"
#include "runtime/Span.h"
#include "runtime/Status.h"

#include <cstdint>

namespace collc {

/// Success when no two of in, out and aux overlap for a call of `count` elements, except exactly
/// coinciding pairs the compiled collective allows; else what overlaps and what to do.
Error checkBufferOverlap(const CompiledCollective& compiled, const void* in, const void* out,
                         Span<void* const> aux, uint64_t count);

} // namespace collc

#endif // COLLC_RUNTIME_BUFFEROVERLAP_H
