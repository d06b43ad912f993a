#include "runtime/LocalWorld.h"

#include "abi/collc_abi.h"
#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"

#include <algorithm>

namespace collc {

namespace {

Error worldError(const std::string& message) {
  return makeError("LocalWorld: " + message);
}

std::string describeDevice(int device) {
  return "GPU " + std::to_string(device) + " (" + gpuName(device) + ")";
}

} // namespace

Expected<DeviceBuffer> DeviceBuffer::allocate(int device, size_t bytes) {
  ScopedDevice restore;
  COLLC_CUDA_TRY(cudaSetDevice(device));
  DeviceBuffer buffer;
  buffer.device_ = device;
  buffer.bytes_ = bytes;
  COLLC_CUDA_TRY(cudaMalloc(&buffer.pointer_, std::max<size_t>(bytes, 1)));
  return buffer;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    std::swap(device_, other.device_);
    std::swap(pointer_, other.pointer_);
    std::swap(bytes_, other.bytes_);
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (!pointer_)
    return;
  // Errors cannot be reported from here; at process exit the runtime may already be unloading.
  ScopedDevice restore;
  if (cudaSetDevice(device_) != cudaSuccess || cudaFree(pointer_) != cudaSuccess)
    (void)cudaGetLastError();
  pointer_ = nullptr;
  bytes_ = 0;
  device_ = -1;
}

Expected<std::unique_ptr<LocalWorld>> LocalWorld::create(std::vector<int> devices,
                                                         size_t heapBytesPerRank) {
  if (devices.empty())
    return worldError("no devices given");
  if (devices.size() > COLLC_MAX_RANKS)
    return worldError(std::to_string(devices.size()) + " devices given; at most " +
                      std::to_string(COLLC_MAX_RANKS) + " ranks are supported (COLLC_MAX_RANKS)");
  if (heapBytesPerRank == 0)
    return worldError("the symmetric heap must not be empty");
  Expected<int> visible = gpuCount();
  if (!visible)
    return visible.takeError();
  for (size_t r = 0; r < devices.size(); ++r) {
    if (devices[r] < 0 || devices[r] >= *visible)
      return worldError("rank " + std::to_string(r) + " asks for GPU " +
                        std::to_string(devices[r]) + ", but " + std::to_string(*visible) +
                        " are visible");
    for (size_t q = 0; q < r; ++q)
      if (devices[q] == devices[r])
        return worldError("ranks " + std::to_string(q) + " and " + std::to_string(r) +
                          " both use GPU " + std::to_string(devices[r]) +
                          "; each rank needs its own GPU");
  }

  ScopedDevice restore;
  // Built in place so that, whatever fails below, the destructor frees what was made so far.
  std::unique_ptr<LocalWorld> world(new LocalWorld(heapBytesPerRank));
  world->devices_ = devices;
  for (size_t r = 0; r < devices.size(); ++r)
    world->ranks_.push_back(static_cast<int>(r));

  for (int from : devices) {
    for (int to : devices) {
      if (from == to)
        continue;
      if (!canAccessPeer(from, to))
        return worldError("peer access from " + describeDevice(from) + " to " + describeDevice(to) +
                          " is not possible (cudaDeviceCanAccessPeer); the GPUs must share "
                          "NVLink or a PCIe switch");
      COLLC_CUDA_TRY(cudaSetDevice(from));
      cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
      // Peer access is process-wide state: an earlier world (or the caller) may have enabled it.
      if (status == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();
        continue;
      }
      if (status != cudaSuccess)
        return joinErrors(worldError("enabling peer access from " + describeDevice(from) + " to " +
                                     describeDevice(to) + " failed"),
                          COLLC_CUDA_CHECK(status));
    }
  }

  for (int device : devices) {
    COLLC_CUDA_TRY(cudaSetDevice(device));
    void* heap = nullptr;
    cudaError_t status = cudaMalloc(&heap, heapBytesPerRank);
    if (status != cudaSuccess)
      return joinErrors(worldError("allocating a symmetric heap of " +
                                   std::to_string(heapBytesPerRank) + " bytes on " +
                                   describeDevice(device) + " failed"),
                        COLLC_CUDA_CHECK(status));
    world->heaps_.push_back(static_cast<char*>(heap));
    // Zeroed once, so that flags and scratch start from a known state however they are used.
    COLLC_CUDA_TRY(cudaMemset(heap, 0, heapBytesPerRank));
    cudaStream_t stream = nullptr;
    COLLC_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    world->streams_.push_back(stream);
  }
  // The memsets ran on the legacy default stream, which the non-blocking rank streams do not wait
  // for; finish them before anyone launches.
  for (int device : devices) {
    COLLC_CUDA_TRY(cudaSetDevice(device));
    COLLC_CUDA_TRY(cudaDeviceSynchronize());
  }
  return world;
}

LocalWorld::~LocalWorld() {
  // Errors cannot be reported from a destructor; clear them so no later call is blamed.
  ScopedDevice restore;
  for (size_t r = 0; r < streams_.size(); ++r)
    if (cudaSetDevice(devices_[r]) != cudaSuccess || cudaStreamDestroy(streams_[r]) != cudaSuccess)
      (void)cudaGetLastError();
  for (size_t r = 0; r < heaps_.size(); ++r)
    if (cudaSetDevice(devices_[r]) != cudaSuccess || cudaFree(heaps_[r]) != cudaSuccess)
      (void)cudaGetLastError();
}

std::string LocalWorld::pathDescription() const {
  return std::to_string(nranks()) +
         " ranks driven by this process, peer access between every pair of GPUs: collectives "
         "run on collc kernels";
}

} // namespace collc
