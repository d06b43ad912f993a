#include "runtime/SharedGpuWorld.h"

#include "abi/collc_abi.h"
#include "runtime/Align.h"
#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"
#include "runtime/HeapSize.h"

#include <cstdlib>
#include <limits>

namespace collc {

namespace {

Error worldError(const std::string& message) {
  return makeError("SharedGpuWorld: " + message);
}

} // namespace

Expected<SharedHeapLayout> sharedHeapLayout(int nranks, uint64_t heapBytesPerRank) {
  if (nranks < 1 || nranks > COLLC_MAX_RANKS)
    return worldError(std::to_string(nranks) + " ranks asked for; 1 to " +
                      std::to_string(COLLC_MAX_RANKS) + " are supported (COLLC_MAX_RANKS)");
  if (heapBytesPerRank == 0)
    return worldError("the symmetric heap must not be empty");
  const uint64_t most = std::numeric_limits<uint64_t>::max();
  // The base is aligned by hand inside the allocation: one more page than the regions need.
  if (heapBytesPerRank > most / uint64_t(nranks + 1) - kScratchAlign)
    return worldError(std::to_string(nranks) + " heaps of " + std::to_string(heapBytesPerRank) +
                      " bytes do not fit in 64 bits");
  SharedHeapLayout layout;
  layout.regionBytes = heapBytesPerRank;
  layout.regionStride = alignUp(heapBytesPerRank, kScratchAlign);
  layout.totalBytes = uint64_t(nranks) * layout.regionStride;
  layout.allocationBytes = layout.totalBytes + kScratchAlign;
  return layout;
}

void requestWorkQueuePerStream() {
  // setenv's last argument 0: a value the user set stays.
  (void)setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
}

Expected<std::unique_ptr<SharedGpuWorld>> SharedGpuWorld::create(int nranks, int device,
                                                                 size_t heapBytesPerRank) {
  Expected<SharedHeapLayout> layout = sharedHeapLayout(nranks, heapBytesPerRank);
  if (!layout)
    return layout.takeError();
  requestWorkQueuePerStream();
  Expected<int> visible = gpuCount();
  if (!visible)
    return visible.takeError();
  if (device < 0 || device >= *visible)
    return worldError("GPU " + std::to_string(device) + " asked for, but " +
                      std::to_string(*visible) + " are visible");

  ScopedDevice restore;
  // Built in place so that, whatever fails below, the destructor frees what was made so far.
  std::unique_ptr<SharedGpuWorld> world(new SharedGpuWorld(device, *layout));
  for (int r = 0; r < nranks; ++r)
    world->ranks_.push_back(r);
  COLLC_CUDA_TRY(cudaSetDevice(device));
  void* allocation = nullptr;
  cudaError_t status = cudaMalloc(&allocation, layout->allocationBytes);
  if (status != cudaSuccess)
    return joinErrors(worldError("allocating " + std::to_string(nranks) + " heaps of " +
                                 std::to_string(heapBytesPerRank) + " bytes on GPU " +
                                 std::to_string(device) + " (" + gpuName(device) + ") failed"),
                      COLLC_CUDA_CHECK(status));
  world->allocation_ = static_cast<char*>(allocation);
  world->heap_ =
      world->allocation_ + (alignUp(reinterpret_cast<uintptr_t>(allocation), kScratchAlign) -
                            reinterpret_cast<uintptr_t>(allocation));
  // Zeroed once, so that flags and scratch start from a known state however they are used.
  COLLC_CUDA_TRY(cudaMemset(allocation, 0, layout->allocationBytes));
  // One after another and nothing in between: see "Hardware work queues" in the header.
  for (int r = 0; r < nranks; ++r) {
    cudaStream_t stream = nullptr;
    COLLC_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    world->streams_.push_back(stream);
  }
  // The memset ran on the legacy default stream, which the non-blocking rank streams do not wait
  // for; finish it before anyone launches.
  COLLC_CUDA_TRY(cudaDeviceSynchronize());
  return world;
}

SharedGpuWorld::~SharedGpuWorld() {
  // Errors cannot be reported from a destructor; clear them so no later call is blamed.
  ScopedDevice restore;
  if (cudaSetDevice(device_) != cudaSuccess)
    (void)cudaGetLastError();
  for (cudaStream_t stream : streams_)
    if (cudaStreamDestroy(stream) != cudaSuccess)
      (void)cudaGetLastError();
  if (allocation_ && cudaFree(allocation_) != cudaSuccess)
    (void)cudaGetLastError();
}

std::string SharedGpuWorld::pathDescription() const {
  return std::to_string(nranks()) + " ranks share GPU " + std::to_string(device_) + " (" +
         gpuName(device_) +
         ") as co-resident kernels, each rank's heap a region of its memory: collectives run on "
         "collc kernels, for correctness only. Timings mean nothing: the ranks divide one GPU's "
         "multiprocessors and memory bandwidth, and nothing crosses a link";
}

} // namespace collc
