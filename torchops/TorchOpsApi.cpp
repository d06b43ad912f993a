// The C functions collc.torch calls through ctypes (no Python ABI in this library): it registers
// each Communicator, hands over the factory that makes instances, and reads which torch this
// library was built for without loading it.
#include "torchops/Communicators.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#ifndef COLLC_TORCH_VERSION
#error "COLLC_TORCH_VERSION (the torch version this library is built against) must be defined"
#endif

extern "C" {

// Read from the file's bytes by collc.torch before it loads the library: a library built for
// another torch is never loaded (its C++ ABI and operator registrations would not match).
__attribute__((used, visibility("default"))) extern const char collc_torch_ops_built_for[] =
    "collc-torch-ops built for torch " COLLC_TORCH_VERSION;

// Registers the kernels with torch's dispatcher (after the schemas are defined). Returns 0, or 1
// with torch's reason written into message[0..capacity).
__attribute__((visibility("default"))) int collc_torch_ops_register_kernels(char* message,
                                                                            size_t capacity) {
  const std::string why = collc::torchops::registerAllKernels();
  if (why.empty())
    return 0;
  if (message && capacity > 0) {
    const size_t n = std::min(why.size(), capacity - 1);
    std::memcpy(message, why.data(), n);
    message[n] = '\0';
  }
  return 1;
}

__attribute__((visibility("default"))) void
collc_torch_ops_register(int64_t handle, int rank, int nranks, int device, uint64_t max_bytes) {
  collc::torchops::registerCommunicator(handle, rank, nranks, device, max_bytes);
}

__attribute__((visibility("default"))) void collc_torch_ops_close(int64_t handle) {
  collc::torchops::closeCommunicator(handle);
}

// The stream of the communicator's last call (null before its first, or where it is unknown):
// Communicator.synchronize waits for it.
__attribute__((visibility("default"))) void* collc_torch_ops_last_stream(int64_t handle) {
  return collc::torchops::lastStream(handle);
}

__attribute__((visibility("default"))) void collc_torch_ops_forget(int64_t handle) {
  collc::torchops::forgetCommunicator(handle);
}

__attribute__((visibility("default"))) void
collc_torch_ops_set_instance_factory(collc::torchops::InstanceFactory factory) {
  collc::torchops::setInstanceFactory(factory);
}

} // extern "C"
