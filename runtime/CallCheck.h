// The checking mode of a process world (ProcessWorldOptions::checkCalls): before each launch the
// ranks compare what they are about to run, so that a call whose count, operator, type or root
// differs between ranks fails on every rank with each rank's call named, instead of hanging on
// a flag that never comes or returning a silently wrong result. It costs a host exchange per
// launch, which is why it is a mode. The description and the comparison are pure functions,
// tested without a GPU.
#ifndef COLLC_RUNTIME_CALLCHECK_H
#define COLLC_RUNTIME_CALLCHECK_H

#include "abi/CompiledCollective.h"
#include "runtime/Span.h"
#include "runtime/Status.h"
#include "runtime/SymmetricWorld.h"

#include <array>
#include <cstdint>
#include <string>

namespace collc {

/// Values per rank in the exchange: the kernel (a hash of its name), count, kind, type,
/// operator, root, and 1 if the rank refused the call itself (a wrong argument).
constexpr unsigned kCallWidth = 7;
/// Every failure of the check says this, so that the C API can report it as the caller's.
constexpr const char* kCallCheckMarker = "call check: ";
using CallDescription = std::array<uint64_t, kCallWidth>;

CallDescription describeCall(const CompiledCollective& compiled, uint64_t count, bool refused);

/// "" where every rank's row (table holds nranks rows of kCallWidth) is the same; else one
/// message naming every rank's call: "the ranks' calls differ: rank 0: allreduce f32 sum, 4097
/// elements; rank 1: allreduce f32 max, 4096 elements ...".
std::string compareCalls(Span<const uint64_t> table, int nranks);

/// Exchanges this process's rank(s) call through world.allGatherRanks and compares them; a rank
/// that refused its call (`refused` there) fails the call on every rank. Safe inside a stream
/// capture: the exchange runs in relaxed capture mode on this thread.
Error checkCallAcrossRanks(SymmetricWorld& world, const CompiledCollective& compiled,
                           uint64_t count, bool refused);

} // namespace collc

#endif // COLLC_RUNTIME_CALLCHECK_H
