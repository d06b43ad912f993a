// The rule for streams: one instance's calls are ordered on one stream per rank. The proof across
// calls assumes it (dsl/README.md: a rank's call starts after its previous call has finished), and
// two calls of one instance that overlap on a GPU share its epochs, flags and scratch: the later
// one can take the earlier one's flags, or, with their blocks all waiting, hold SMs a peer's
// earlier call needs.
//
// What the host can see, it enforces by ordering, not by refusing. Each eager call records an
// event on its stream after the launch; an eager call on another stream than the rank's last one
// first makes its stream wait for that event, so it runs after the last call whatever the program
// did. A refusal would have to ask whether the last call may still run (cudaEventQuery), and the
// answer depends on timing: the same program would pass or fail from run to run, and a program
// that ordered the streams itself (cudaStreamWaitEvent) would be refused while correct. The wait is
// always right and costs nothing on the GPU where the program had ordered them already.
//
// What it cannot see, the program must keep: a call made while its stream is being captured into
// a CUDA graph is neither ordered nor recorded (waiting inside a capture on an event recorded
// outside it is an error that ends the capture, and torch captures on a side stream); its order is
// the graph's, and replays, like calls on streams the host program orders in ways collc does not
// see, must be ordered on one stream per rank by the program. The pure choice is streamOrderStep,
// tested on the CPU.
#ifndef COLLC_RUNTIME_STREAMORDER_H
#define COLLC_RUNTIME_STREAMORDER_H

#include "runtime/Status.h"

#include <cuda_runtime_api.h>

namespace collc {

/// What a rank's call does about the rule, given its last eager call's stream (if any).
enum class StreamOrderStep {
  None,          // captured: its order is the graph's
  Record,        // eager, on the last call's stream (or the first call): record after it
  WaitAndRecord, // eager, on another stream: wait for the last call first, then record
};

StreamOrderStep streamOrderStep(bool hasLast, cudaStream_t last, cudaStream_t stream,
                                bool capturing);

/// One rank's side of the rule, on one GPU.
class StreamOrder {
public:
  StreamOrder() = default;
  ~StreamOrder();
  StreamOrder(StreamOrder&& other) noexcept;
  StreamOrder& operator=(StreamOrder&&) = delete;
  StreamOrder(const StreamOrder&) = delete;

  /// Creates the event on the current device (the rank's).
  Error create();
  /// Before a call on `stream` (the rank's device current): whether it is being captured, and for
  /// an eager call on another stream than the last, makes it wait for the last call.
  Expected<StreamOrderStep> before(cudaStream_t stream);
  /// After the call was enqueued on `stream` with `step` (before's answer): records it.
  Error after(cudaStream_t stream, StreamOrderStep step);

private:
  cudaEvent_t lastCall_ = nullptr;
  cudaStream_t lastStream_ = nullptr;
  bool hasLast_ = false;
};

} // namespace collc

#endif // COLLC_RUNTIME_STREAMORDER_H
