#include "runtime/StreamPoll.h"

#include "runtime/CudaCheck.h"

#include <thread>

namespace collc {

llvm::Error pollStreams(llvm::ArrayRef<cudaStream_t> streams, llvm::ArrayRef<int> ranks,
                        std::vector<bool>& done, std::chrono::steady_clock::time_point deadline) {
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
        llvm::Error err = COLLC_CUDA_CHECK(status);
        return llvm::joinErrors(llvm::createStringError(llvm::inconvertibleErrorCode(),
                                                        "work on rank %d's stream failed",
                                                        ranks[r]),
                                std::move(err));
      }
      (void)cudaGetLastError();
      all = false;
    }
    if (all || std::chrono::steady_clock::now() >= deadline)
      return llvm::Error::success();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

} // namespace collc
