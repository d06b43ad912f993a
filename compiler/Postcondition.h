// The postcondition of each collective kind, as the verifier checks it: what every output element
// must hold at the end of a call, as the multiset of (rank, input index) contributions that reached
// it. The layouts are those of CollectiveShapes.h (NCCL's).
#ifndef COLLC_COMPILER_POSTCONDITION_H
#define COLLC_COMPILER_POSTCONDITION_H

#include "abi/Types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collc {

using Contribution = std::pair<int, int64_t>; // (rank, element index of its input)

/// What out[index] on `rank` must hold, sorted; nullopt where the kind leaves it unspecified (a
/// reduce's output on ranks other than the root).
std::optional<std::vector<Contribution>> expectedOutput(CollectiveKind kind, int rank, int root,
                                                        int nranks, int64_t count, int64_t index);

/// The rule for one element, for messages: "an allgather needs in[3] of rank 1 exactly once".
std::string describeExpectedOutput(CollectiveKind kind, const std::string& inputName,
                                   const std::vector<Contribution>& expected);

} // namespace collc

#endif // COLLC_COMPILER_POSTCONDITION_H
