#include "runtime/StreamPoll.h"

#include "runtime/CudaCheck.h"

#include <fmt/format.h>
#include <thread>

namespace collc {

Error pollStreams(Span<const cudaStream_t> streams, Span<const int> ranks, std::vector<bool>& done,
                  std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    bool all = true;
    for (size_t r = 0; r < streams.size(); ++r) {
      if (done[r])
        continue;
      cudaError_t status = cudaStreamQuery(streams[r]);
      if (status == cudaSuccess) {
        done[r] = true;
        continue;
      }
      if (status != cudaErrorNotReady) {
        Error err = COLLC_CUDA_CHECK(status);
        return joinErrors(makeError(fmt::format("work on rank {}'s stream failed", ranks[r])),
                          std::move(err));
      }
      (void)cudaGetLastError();
      all = false;
    }
    if (all || std::chrono::steady_clock::now() >= deadline)
      return Error::success();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

} // namespace collc
