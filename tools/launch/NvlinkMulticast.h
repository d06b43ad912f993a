// The GPU machine's rule: NVLink multicast stays off there (a program that uses it can take the
// host's GPUs out of service; see the README). The project's own programs (the collc tool, the
// tests) call keepNvlinkMulticastOff() first thing in main, before anything loads NCCL or torch.
// The libraries never do: a host process's environment is its own.
#ifndef COLLC_TOOLS_LAUNCH_NVLINKMULTICAST_H
#define COLLC_TOOLS_LAUNCH_NVLINKMULTICAST_H

#include <cstdlib>

namespace collc {

/// Sets NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 in this
/// process's environment, whatever they were, for it and the processes it starts.
inline void keepNvlinkMulticastOff() {
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/1);
  setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", /*overwrite=*/1);
  setenv("NVSHMEM_DISABLE_NVLS", "1", /*overwrite=*/1);
}

} // namespace collc

#endif // COLLC_TOOLS_LAUNCH_NVLINKMULTICAST_H
