// Helpers for calling the CUDA runtime: status codes become Error values that say which call
// failed and where, so that a failure on the GPU machine can be diagnosed from its log alone.
#ifndef COLLC_RUNTIME_CUDACHECK_H
#define COLLC_RUNTIME_CUDACHECK_H

#include "runtime/Status.h"

#include <cstring>
#include <cuda_runtime_api.h>
#include <string>
#include <utility>

namespace collc {

/// "runtime/LocalWorld.cpp" from a full __FILE__ path: short enough to read, long enough to find.
inline const char* shortSourcePath(const char* file) {
  const char* last = std::strrchr(file, '/');
  if (!last)
    return file;
  for (const char* p = last - 1; p >= file; --p)
    if (*p == '/')
      return p + 1;
  return file;
}

/// Success for cudaSuccess; otherwise an error such as
/// "cudaMalloc(&ptr, bytes) failed at runtime/LocalWorld.cpp:42: cudaErrorMemoryAllocation: out of
/// memory". The failed call's error is cleared from cudaGetLastError so that it is not blamed on a
/// later call.
inline Error cudaStatusToError(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess)
    return Error::success();
  (void)cudaGetLastError();
  return makeError(std::string(call) + " failed at " + shortSourcePath(file) + ":" +
                   std::to_string(line) + ": " + cudaGetErrorName(status) + ": " +
                   cudaGetErrorString(status));
}

/// Makes a device current for a scope and restores the caller's current device afterwards, so that
/// runtime calls never leave a surprise behind in the calling thread.
class ScopedDevice {
public:
  ScopedDevice() {
    if (cudaGetDevice(&saved_) != cudaSuccess) {
      (void)cudaGetLastError();
      saved_ = -1;
    }
  }
  ~ScopedDevice() {
    if (saved_ >= 0 && cudaSetDevice(saved_) != cudaSuccess)
      (void)cudaGetLastError();
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

private:
  int saved_ = -1;
};

/// The per-launch form of ScopedDevice: makes `device` current only where it is not already (the
/// common case: the caller's stream is on its current GPU), and then restores the caller's. Two
/// cudaSetDevice calls fewer per launch; the runtime's calls make the current device's context
/// ready themselves either way.
class DeviceForCall {
public:
  explicit DeviceForCall(int device) {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) {
      (void)cudaGetLastError();
      current = -1;
    }
    if (current == device)
      return;
    saved_ = current;
    switched_ = true;
    status_ = cudaSetDevice(device);
  }
  ~DeviceForCall() {
    if (switched_ && saved_ >= 0 && cudaSetDevice(saved_) != cudaSuccess)
      (void)cudaGetLastError();
  }
  DeviceForCall(const DeviceForCall&) = delete;
  DeviceForCall& operator=(const DeviceForCall&) = delete;
  /// cudaSetDevice's status where it was called; cudaSuccess where the device was current.
  cudaError_t status() const { return status_; }

private:
  int saved_ = -1;
  bool switched_ = false;
  cudaError_t status_ = cudaSuccess;
};

} // namespace collc

/// An Error expression for one CUDA call: `if (auto err = COLLC_CUDA_CHECK(cudaFree(p)))`.
#define COLLC_CUDA_CHECK(call) ::collc::cudaStatusToError((call), #call, __FILE__, __LINE__)

/// Returns the error from the enclosing function (Error or Expected<T>) if `call`
/// fails.
#define COLLC_CUDA_TRY(call)                                                                       \
  do {                                                                                             \
    if (::collc::Error collcCudaError = COLLC_CUDA_CHECK(call))                                    \
      return ::collc::Error(std::move(collcCudaError));                                            \
  } while (false)

#endif // COLLC_RUNTIME_CUDACHECK_H
