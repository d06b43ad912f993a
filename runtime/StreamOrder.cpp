#include "runtime/StreamOrder.h"

#include "runtime/CudaCheck.h"

namespace collc {

StreamOrderStep streamOrderStep(bool hasLast, cudaStream_t last, cudaStream_t stream,
                                bool capturing) {
  if (capturing)
    return StreamOrderStep::None;
  if (!hasLast || last == stream)
    return StreamOrderStep::Record;
  return StreamOrderStep::WaitAndRecord;
}

StreamOrder::~StreamOrder() {
  if (lastCall_ && cudaEventDestroy(lastCall_) != cudaSuccess)
    (void)cudaGetLastError();
}

StreamOrder::StreamOrder(StreamOrder&& other) noexcept
    : lastCall_(other.lastCall_), lastStream_(other.lastStream_), hasLast_(other.hasLast_) {
  other.lastCall_ = nullptr;
}

Error StreamOrder::create() {
  COLLC_CUDA_TRY(cudaEventCreateWithFlags(&lastCall_, cudaEventDisableTiming));
  return Error::success();
}

Expected<StreamOrderStep> StreamOrder::before(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  // The legacy stream while another stream captures says so with an error: the launch that
  // follows reports it.
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    (void)cudaGetLastError();
    return StreamOrderStep::None;
  }
  const StreamOrderStep step =
      streamOrderStep(hasLast_, lastStream_, stream, capture != cudaStreamCaptureStatusNone);
  if (step == StreamOrderStep::WaitAndRecord)
    COLLC_CUDA_TRY(cudaStreamWaitEvent(stream, lastCall_, 0));
  return step;
}

Error StreamOrder::after(cudaStream_t stream, StreamOrderStep step) {
  if (step == StreamOrderStep::None)
    return Error::success();
  COLLC_CUDA_TRY(cudaEventRecord(lastCall_, stream));
  lastStream_ = stream;
  hasLast_ = true;
  return Error::success();
}

} // namespace collc
