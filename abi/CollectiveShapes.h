// What each collective kind promises about its buffers, following NCCL's conventions: how many
// elements the input and the output hold for a call of `count` elements (`n` in specs), whether
// the kind has a root rank and whether it reduces. Shared by the compiler (buffer shapes,
// postconditions) and the runtime (allocation, the float64 reference).
//
//   kind           input              output             out on rank r
//   allreduce      n                  n                  out[i] = op over q of in_q[i]
//   allgather      n                  n * nranks         out[q*n + i] = in_q[i]
//   reducescatter  n * nranks         n                  out[i] = op over q of in_q[r*n + i]
//   broadcast      n                  n                  out[i] = in_root[i]
//   reduce         n                  n                  root only: out[i] = op over q of in_q[i]
//   alltoall       n * nranks         n * nranks         out[q*n + i] = in_q[r*n + i]
//
// `n` is NCCL's count argument: sendcount (allgather), recvcount (reducescatter), count (the
// others); for alltoall the elements each rank sends to each rank.
#ifndef COLLC_ABI_COLLECTIVESHAPES_H
#define COLLC_ABI_COLLECTIVESHAPES_H

#include "abi/Types.h"

#include <cstdint>
#include <string_view>

namespace collc {

/// Broadcast and reduce have a root rank (`root` in specs, `--root`, CompileOptions::root).
bool hasRoot(CollectiveKind kind);
/// The reduction operator matters: allreduce, reducescatter, reduce.
bool reduces(CollectiveKind kind);
/// True when the input (output) holds n * nranks elements rather than n.
bool inputIsPerRankBlocks(CollectiveKind kind);
bool outputIsPerRankBlocks(CollectiveKind kind);
/// Elements of each rank's input and output for a call of `count` elements (kTooLarge past
/// kMaxSize: abi/SizeMath.h, as every size below).
uint64_t inputElems(CollectiveKind kind, uint64_t count, int nranks);
uint64_t outputElems(CollectiveKind kind, uint64_t count, int nranks);

/// Chunks (`x.chunk(k)`, `chunk(x)` in specs) start at multiples of this many elements, so every
/// chunk starts 16-byte aligned whatever the element type.
inline constexpr uint64_t kChunkAlignElems = 8;
/// Elements per chunk when `length` elements are split into `nranks` chunks: ceil(length /
/// nranks) rounded up to kChunkAlignElems. The last chunks may be shorter, or empty.
uint64_t chunkSize(uint64_t length, int nranks);

} // namespace collc

#endif // COLLC_ABI_COLLECTIVESHAPES_H
