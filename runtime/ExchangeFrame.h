// The frames of a process-per-GPU world's host-side exchanges (ProcessWorld::allGatherRanks and
// its bootstrap rounds). Every exchange moves one fixed-size slot per rank through ncclAllGather,
// so that two processes that disagree about what they are exchanging still make matching NCCL
// calls, and each slot says which exchange it belongs to: its sequence number and a label. A
// process that made a different sequence of collective calls is then reported by name ("rank 1
// is at exchange #7 'layout of collective x', this rank at #7 'case outcome'") instead of
// silently mixing up data or hanging. Pure functions: tested without a GPU.
#ifndef COLLC_RUNTIME_EXCHANGEFRAME_H
#define COLLC_RUNTIME_EXCHANGEFRAME_H

#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace collc {

/// Bytes of one rank's slot, header included.
constexpr size_t kExchangeSlotBytes = 1024;
/// Bytes of the label kept in a slot (longer labels are cut).
constexpr size_t kExchangeLabelBytes = 64;
/// Payload bytes a slot can carry.
constexpr size_t kExchangePayloadBytes = kExchangeSlotBytes - 24 - kExchangeLabelBytes;

/// Writes one slot (kExchangeSlotBytes at `slot`). Fails if the payload does not fit.
Error packExchangeFrame(uint64_t sequence, int rank, std::string_view label,
                        std::string_view payload, char* slot);

/// Reads `nranks` slots (back to back at `slots`), checks each against this process's
/// `sequence` and `label` and the rank it must come from, and returns the payloads in rank order.
Expected<std::vector<std::string>> unpackExchangeFrames(const char* slots, int nranks,
                                                        uint64_t sequence, std::string_view label,
                                                        int myRank);

} // namespace collc

#endif // COLLC_RUNTIME_EXCHANGEFRAME_H
