// A hardware work queue per stream for ranks that share a GPU (runtime/SharedGpuWorld.h says why).
// CUDA reads CUDA_DEVICE_MAX_CONNECTIONS once, when it starts in a process, so the project's own
// programs that run ranks on one GPU (the collc tool, the GPU tests) call
// giveEachStreamAWorkQueue() first thing in main. The libraries never set it: they only refuse a
// value too small for the ranks asked for.
#ifndef COLLC_TOOLS_LAUNCH_WORKQUEUES_H
#define COLLC_TOOLS_LAUNCH_WORKQUEUES_H

#include <cstdlib>

namespace collc {

/// Sets CUDA_DEVICE_MAX_CONNECTIONS to 32 (CUDA's most) in this process's environment unless it is
/// set already: a value the user chose stays.
inline void giveEachStreamAWorkQueue() {
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", /*overwrite=*/0);
}

} // namespace collc

#endif // COLLC_TOOLS_LAUNCH_WORKQUEUES_H
