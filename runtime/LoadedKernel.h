// One generated kernel, loaded from its cubin (or PTX) image on each rank's GPU and launched with
// the collc_params ABI. Loading goes through the CUDA runtime's library API, so the driver is
// never linked directly.
#ifndef COLLC_RUNTIME_LOADEDKERNEL_H
#define COLLC_RUNTIME_LOADEDKERNEL_H

#include "abi/collc_abi.h"
#include "runtime/Status.h"

#include <cstddef>
#include <cuda_runtime_api.h>
#include <memory>
#include <string>
#include <vector>

struct collc_rank_launch;

namespace collc {

struct RankLaunchGrid;

/// Kernel parameters every architecture accepts (sm_90 with CUDA 12.1 takes 32 KB; older ones 4
/// KB): the per-rank heap pointers travel by value only while the struct stays under it.
inline constexpr size_t kPortableKernelParamBytes = 4096;
static_assert(sizeof(collc_params) <= kPortableKernelParamBytes,
              "collc_params no longer fits the kernel parameters of every architecture");

class LoadedKernel {
public:
  /// Loads `image` (a cubin, or NUL-terminated PTX) once per rank, rank r on GPU devices[r], and
  /// looks up the extern "C" entry point `kernelName` in it. The kernel is made resident on every
  /// GPU here, not at its first launch, because a first launch may happen inside graph capture.
  static Expected<std::unique_ptr<LoadedKernel>>
  load(const std::vector<int>& devices, const std::string& image, const std::string& kernelName);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  /// Launches the kernel for `rank` on `stream`, which must belong to that rank's GPU. Safe to
  /// call during stream capture. Launch errors (bad configuration, too many resources) come back
  /// here; errors inside the kernel surface at the next synchronization. `programmatic`: a
  /// programmatic dependent launch, which may start while the stream's previous kernel is still
  /// running; only for kernels that wait for it (griddepcontrol.wait) before touching memory.
  Error launch(int rank, dim3 grid, dim3 block, const collc_params& params, cudaStream_t stream,
               bool programmatic = false) const;

  /// Launches a kernel loaded from a <kernel>_ranks entry point (runtime/RankLaunch.h), on the
  /// GPU of its first rank: every rank of a one-GPU world at once, `grid` blocks, as a cooperative
  /// launch (CUDA refuses it if its blocks could not all be resident at once). Safe to call
  /// during stream capture.
  Error launchRanks(const RankLaunchGrid& grid, const collc_rank_launch& argument,
                    cudaStream_t stream) const;

  /// How many blocks of `threadsPerBlock` threads fit on one multiprocessor of rank's GPU at once.
  Expected<int> maxActiveBlocksPerMultiprocessor(int rank, int threadsPerBlock) const;
  /// Registers, shared memory and thread limit the compiled kernel has on rank's GPU.
  const cudaFuncAttributes& attributes(int rank) const { return attributes_[rank]; }
  const std::string& name() const { return name_; }

private:
  LoadedKernel() = default;

  std::string name_;
  std::vector<int> devices_;
  std::vector<cudaLibrary_t> libraries_;
  std::vector<cudaKernel_t> kernels_;
  std::vector<cudaFuncAttributes> attributes_;
};

} // namespace collc

#endif // COLLC_RUNTIME_LOADEDKERNEL_H
