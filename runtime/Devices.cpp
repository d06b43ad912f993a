#include "runtime/Devices.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

namespace collc {

namespace {

// The CUDA runtime reports both "libcuda.so.1 is missing" and "the driver is too old" as
// cudaErrorInsufficientDriver. Whether it managed to load the driver tells the two apart.
bool driverLibraryLoaded() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!handle)
    return false;
  dlclose(handle);
  return true;
}

Error noGpu(const std::string& why) {
  return makeError(fmt::format("no GPU: {}", why));
}

} // namespace

Expected<int> gpuCount() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess)
    (void)cudaGetLastError();
  switch (status) {
  case cudaSuccess:
    if (count > 0)
      return count;
    return noGpu("no CUDA device (the driver reports none)");
  case cudaErrorNoDevice:
    return noGpu("no CUDA device (the driver is loaded but reports none; check "
                 "CUDA_VISIBLE_DEVICES)");
  case cudaErrorInsufficientDriver:
    if (!driverLibraryLoaded())
      return noGpu("no CUDA driver found (libcuda.so.1 could not be loaded)");
    return noGpu("the CUDA driver is older than this CUDA runtime needs "
                 "(cudaErrorInsufficientDriver)");
  default:
    return noGpu(std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(status) + ": " +
                 cudaGetErrorString(status));
  }
}

std::string gpuName(int device) {
  cudaDeviceProp properties;
  cudaError_t status = cudaGetDeviceProperties(&properties, device);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return "<unknown device " + std::to_string(device) + ": " + cudaGetErrorName(status) + ">";
  }
  return properties.name;
}

int multiprocessorCount(int device) {
  int count = 0;
  if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

int computeCapability(int device) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return major * 10 + minor;
}

std::string gpuArch(int device) {
  const int capability = computeCapability(device);
  return capability == 0 ? "" : "sm_" + std::to_string(capability);
}

bool hasProgrammaticLaunch(int device) {
  return computeCapability(device) >= 90;
}

bool canAccessPeer(int from, int to) {
  int possible = 0;
  if (cudaDeviceCanAccessPeer(&possible, from, to) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return possible != 0;
}

} // namespace collc
