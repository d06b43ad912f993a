// A bounded wait on several ranks' streams: how the host waits for kernels that may never finish
// (a lost peer) without hanging, and reports a fault at once with the rank it came from.
#ifndef COLLC_RUNTIME_STREAMPOLL_H
#define COLLC_RUNTIME_STREAMPOLL_H

#include "runtime/Span.h"
#include "runtime/Status.h"

#include <chrono>
#include <cuda_runtime_api.h>
#include <vector>

namespace collc {

/// Polls until every stream in `streams` whose `done` entry is false has finished, or until
/// `deadline`; marks finished streams in `done` (a bounded wait: check `done` after it). An error
/// from a stream (a kernel that faulted) is returned at once, naming the rank (streams[i] is rank
/// ranks[i]'s).
Error pollStreams(Span<const cudaStream_t> streams, Span<const int> ranks, std::vector<bool>& done,
                  std::chrono::steady_clock::time_point deadline);

} // namespace collc

#endif // COLLC_RUNTIME_STREAMPOLL_H
