// The element counts the many-ranks-on-one-GPU matrix runs: for R ranks, counts whose chunks (the
// `x.chunk(k)` of specs, abi/CollectiveShapes.h) reach the last rank, since from 5 ranks on small
// odd counts leave the last chunk empty (8 ranks, n = 197: chunks of 32 x 6, 5 and 0), and a
// spec that mishandles it would pass. Pure arithmetic, checked on the CPU (SharedGpuWorldTest).
#ifndef COLLC_TESTS_MANYRANKCOUNTS_H
#define COLLC_TESTS_MANYRANKCOUNTS_H

#include "abi/CollectiveShapes.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace collc::tests {

/// Elements in chunk k of `length` elements split into `nranks` chunks.
inline uint64_t chunkLength(uint64_t length, int nranks, int k) {
  const uint64_t size = chunkSize(length, nranks);
  const uint64_t begin = std::min(length, uint64_t(k) * size);
  return std::min(length, uint64_t(k + 1) * size) - begin;
}

/// Whether the last chunk holds something, but fewer elements than a whole chunk.
inline bool lastChunkPartial(uint64_t length, int nranks) {
  const uint64_t last = chunkLength(length, nranks, nranks - 1);
  return last > 0 && last < chunkSize(length, nranks);
}

/// For `nranks` ranks: 1 (only chunk 0 holds anything); 16 (R - 1) + 1, whose last chunk holds
/// one element (chunks of 16); and, up to 16 ranks, 8 R k + 5 with k = 1031 up to 8 ranks and 131
/// past them, every chunk whole but the last, which is long and partial (an odd count of many
/// vectors per block). The smaller k keeps the scratch of co-resident ranks within their heaps (an
/// ll one-shot holds R packet copies of the whole call). Past 16 ranks 32 R - 3: chunks of 32, the
/// last 29; the reference interpreted on the host costs about R^2 n a call (R ranks' outputs, each
/// from R inputs), and 8 R k + 5 at 72 ranks would take minutes a case.
inline std::vector<uint64_t> manyRankCounts(int nranks) {
  const uint64_t r = uint64_t(nranks);
  if (nranks > 16)
    return {1, 16 * (r - 1) + 1, 32 * r - 3};
  const uint64_t k = nranks <= 8 ? 1031 : 131;
  return {1, 16 * (r - 1) + 1, 8 * r * k + 5};
}

/// Token counts (whole rows) for a spec with rows: one row, R + 1 and 3 R + 2 (odd counts for odd
/// R, a different pair at every rank count); past 8 ranks one row, R / 2 + 1 and R + 1, so that 32
/// co-resident ranks' scratch for rows of 4096 f32 stays within their heaps (3 R + 2 rows would
/// need 152 MiB a rank under sentinel, `collc check --footprint`).
inline std::vector<uint64_t> manyRankTokens(int nranks) {
  const uint64_t r = uint64_t(nranks);
  if (nranks > 8)
    return {1, r / 2 + 1, r + 1};
  return {1, r + 1, 3 * r + 2};
}

} // namespace collc::tests

#endif // COLLC_TESTS_MANYRANKCOUNTS_H
