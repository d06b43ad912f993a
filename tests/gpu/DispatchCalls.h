// Calls of a Dispatcher on every rank of a world, each checked against the float64 reference: the
// buffers of one call, its inputs refilled, its launch on every rank, and a graph per rank of
// several calls replayed with fresh inputs. Shared by the dispatch tests on 2 GPUs and on ranks
// that share one GPU.
#ifndef COLLC_TESTS_GPU_DISPATCHCALLS_H
#define COLLC_TESTS_GPU_DISPATCHCALLS_H

#include "runtime/Dispatcher.h"
#include "runtime/LocalWorld.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collc::gputest {

/// One call's buffers on every rank, with the inputs on the host for the reference.
struct CallBuffers {
  uint64_t count = 0;
  std::vector<DeviceBuffer> in, out;     // per rank
  std::vector<std::vector<char>> hostIn; // per rank
};

/// A Dispatcher of `program` on `world` (its description printed first, for the log); null, with a
/// GoogleTest failure, where it could not be made.
std::unique_ptr<Dispatcher> makeDispatcher(SymmetricWorld& world, DispatchProgram program);

/// Buffers of `count` elements on every rank's GPU; fewer than the world's ranks, with a failure,
/// where an allocation failed.
CallBuffers allocateCall(const SymmetricWorld& world, DType dtype, uint64_t count);

/// New random inputs, uploaded; outputs poisoned with 0xff bytes (NaN in every type).
void refillCall(const SymmetricWorld& world, CallBuffers& call, DType dtype, uint64_t seed);

/// Every rank's output of `call` against the float64 reference; `what` names the call.
void checkCall(const CallBuffers& call, DType dtype, ReduceOp op, const std::string& what);

/// Every rank's part of `call`, on the rank's stream.
void launchCall(const SymmetricWorld& world, const Dispatcher& dispatcher, const CallBuffers& call);

/// Waits for every rank's stream and reads the dispatcher's watchdogs.
void synchronizeCalls(const SymmetricWorld& world, const Dispatcher& dispatcher);

/// `calls` launched in order, captured on each rank's stream into a graph of that rank's own (the
/// ranks' replays must not order each other), then replayed `replays` times, each time with fresh
/// inputs (seeds from `seed`) and every call checked.
void captureAndReplayChecked(const SymmetricWorld& world, const Dispatcher& dispatcher,
                             std::vector<CallBuffers>& calls, int replays, uint64_t seed);

} // namespace collc::gputest

#endif // COLLC_TESTS_GPU_DISPATCHCALLS_H
