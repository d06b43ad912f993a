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

std::string workQueueProblem(const char* maxConnections, int nranks) {
  if (!maxConnections)
    return nranks <= kDefaultWorkQueues
               ? ""
               : workQueueProblem(std::to_string(kDefaultWorkQueues).c_str(), nranks);
  const std::string text = maxConnections;
  const bool isCount = !text.empty() && text.size() <= 4 &&
                       text.find_first_not_of("0123456789") == std::string::npos &&
                       std::stoi(text) > 0;
  if (!isCount)
    return "CUDA_DEVICE_MAX_CONNECTIONS='" + text +
           "' is not a count of hardware work queues: set it to at least " +
           std::to_string(nranks) + ", or unset it (CUDA's default is " +
           std::to_string(kDefaultWorkQueues) + "), before this process's first CUDA call";
  if (nranks > kMostWorkQueues)
    return std::to_string(nranks) +
           " ranks cannot each have a hardware work queue: CUDA gives at "
           "most " +
           std::to_string(kMostWorkQueues) +
           " whatever CUDA_DEVICE_MAX_CONNECTIONS says, and ranks whose streams share a queue can "
           "wait on each other forever. Share one GPU between at most " +
           std::to_string(kMostWorkQueues) + " ranks";
  const int queues = std::stoi(text);
  if (queues >= nranks)
    return "";
  return "CUDA_DEVICE_MAX_CONNECTIONS=" + text + " gives the streams of " + std::to_string(nranks) +
         " ranks " + std::to_string(queues) + " hardware work queue" + (queues == 1 ? "" : "s") +
         ": ranks whose streams share a queue can wait on each other forever. Set it to at "
         "least " +
         std::to_string(nranks) + ", or unset it (CUDA's default is " +
         std::to_string(kDefaultWorkQueues) + "), before this process's first CUDA call";
}

Expected<std::unique_ptr<SharedGpuWorld>>
SharedGpuWorld::create(int nranks, int device, size_t heapBytesPerRank, SharedGpuLaunch launch) {
  Expected<SharedHeapLayout> layout = sharedHeapLayout(nranks, heapBytesPerRank);
  if (!layout)
    return layout.takeError();
  const bool oneLaunch = launch == SharedGpuLaunch::OneLaunch;
  // What CUDA read when it started in this process, unless the program changed it since. One
  // launch on one stream needs one queue.
  if (std::string problem = workQueueProblem(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), nranks);
      !oneLaunch && !problem.empty())
    return worldError(problem + " (or launch every rank as one: SharedGpuLaunch::OneLaunch, "
                                "`collc run --one-gpu --one-launch`)");
  Expected<int> visible = gpuCount();
  if (!visible)
    return visible.takeError();
  if (device < 0 || device >= *visible)
    return worldError("GPU " + std::to_string(device) + " asked for, but " +
                      std::to_string(*visible) + " are visible");

  ScopedDevice restore;
  // Built in place so that, whatever fails below, the destructor frees what was made so far.
  std::unique_ptr<SharedGpuWorld> world(new SharedGpuWorld(device, *layout));
  world->oneLaunch_ = oneLaunch;
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
  for (int r = 0; r < (oneLaunch ? 1 : nranks); ++r) {
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
         gpuName(device_) + (oneLaunch_ ? ") in one launch per call" : ") as co-resident kernels") +
         ", each rank's heap a region of its memory: collectives run on "
         "collc kernels, for correctness only. Timings mean nothing: the ranks divide one GPU's "
         "multiprocessors and memory bandwidth, and nothing crosses a link";
}

} // namespace collc
