// What the process can see of its GPUs. Everything here works, and says so plainly, on a machine
// without a GPU or without a CUDA driver.
#ifndef COLLC_RUNTIME_DEVICES_H
#define COLLC_RUNTIME_DEVICES_H

#include "runtime/Status.h"

#include <string>

namespace collc {

/// The number of visible CUDA devices, at least 1. With none, an error whose message starts with
/// "no GPU: " and says why (no CUDA driver found, a driver too old for this runtime, no device).
Expected<int> gpuCount();

/// The device's name ("NVIDIA H200"), or "<unknown device N: why>" if it cannot be queried.
std::string gpuName(int device);

/// Streaming multiprocessors of the device; 0 if it cannot be queried.
int multiprocessorCount(int device);

/// The device's compute capability as an NVRTC target, "sm_90" for Hopper; "" if unknown.
std::string gpuArch(int device);

/// The device's compute capability as major * 10 + minor, 90 for Hopper; 0 if unknown.
int computeCapability(int device);

/// Whether the device has programmatic dependent launch (compute capability 9.0 and later): a
/// kernel launched with it may start before the previous one ends. Elsewhere kernels run in
/// stream order, and the generated kernels compile their griddepcontrol instructions out.
bool hasProgrammaticLaunch(int device);

/// Whether `from` can load and store into memory of `to` (peer access over NVLink or PCIe).
bool canAccessPeer(int from, int to);

} // namespace collc

#endif // COLLC_RUNTIME_DEVICES_H
