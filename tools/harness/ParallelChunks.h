// Host-side loops over tens of millions of elements (a benchmark's fresh inputs before every
// replay, their float64 references and checks) split into fixed chunks over a few threads, so that
// the host is not what a GPU measurement waits for. Chunks are fixed in size and independent, so
// what a loop computes does not depend on how many threads ran it.
#ifndef COLLC_TOOLS_HARNESS_PARALLELCHUNKS_H
#define COLLC_TOOLS_HARNESS_PARALLELCHUNKS_H

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace collc {

/// Elements per chunk: one thread handles a whole chunk.
constexpr uint64_t kParallelChunk = uint64_t(1) << 18;

inline uint64_t parallelChunkCount(uint64_t count) {
  return (count + kParallelChunk - 1) / kParallelChunk;
}

/// Calls body(chunk, begin, end) once for every chunk of [0, count), on up to 16 threads (this
/// one included); returns when all are done. `body` must be safe to run concurrently for
/// different chunks.
template <typename Body> void forEachChunk(uint64_t count, Body body) {
  const uint64_t chunks = parallelChunkCount(count);
  auto run = [&](uint64_t first, uint64_t step) {
    for (uint64_t c = first; c < chunks; c += step)
      body(c, c * kParallelChunk, std::min(count, (c + 1) * kParallelChunk));
  };
  const uint64_t threads =
      std::min<uint64_t>({chunks, uint64_t(std::max(1u, std::thread::hardware_concurrency())), 16});
  if (threads <= 1) {
    run(0, 1);
    return;
  }
  std::vector<std::thread> workers;
  for (uint64_t t = 1; t < threads; ++t)
    workers.emplace_back(run, t, threads);
  run(0, threads);
  for (std::thread& worker : workers)
    worker.join();
}

/// How many elements of [0, count) fail `passes(i)`, counted on forEachChunk's threads; then
/// `report(i)` for the first `maxReported` failing elements, in ascending order, on this thread
/// (a check reports its first mismatches; only the chunks that have any are walked again).
/// `passes` must be safe to call concurrently.
template <typename Passes, typename Report>
uint64_t countFailures(uint64_t count, uint64_t maxReported, Passes passes, Report report) {
  std::vector<uint64_t> perChunk(parallelChunkCount(count), 0);
  forEachChunk(count, [&](uint64_t chunk, uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i)
      perChunk[chunk] += passes(i) ? 0 : 1;
  });
  uint64_t failures = 0, reported = 0;
  for (uint64_t chunk = 0; chunk < perChunk.size(); ++chunk) {
    failures += perChunk[chunk];
    const uint64_t end = std::min(count, (chunk + 1) * kParallelChunk);
    for (uint64_t i = chunk * kParallelChunk; perChunk[chunk] && reported < maxReported && i < end;
         ++i)
      if (!passes(i)) {
        report(i);
        ++reported;
      }
  }
  return failures;
}

} // namespace collc

#endif // COLLC_TOOLS_HARNESS_PARALLELCHUNKS_H
