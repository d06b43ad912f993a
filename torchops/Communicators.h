// The communicators the op library serves: what each collc.torch.Communicator tells it when made
// (rank, GPU, max_bytes), the instances its calls made, and the stream of its last call (the
// stream rule of docs/python.md). The Python side registers and closes them through the C
// functions of TorchOpsApi.cpp; the ops look them up by the handle they carry.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct collc_instance;

namespace collc::torchops {

/// One instance of a communicator: the key it was made for and whether in == out is proved.
struct ReadyInstance {
  std::string kind, dtype, op;
  int64_t root = 0, rowLength = 0;
  collc_instance* handle = nullptr;
  bool inPlace = false;
};

struct Communicator {
  int64_t handle = 0;
  int rank = 0, nranks = 0, device = 0;
  uint64_t maxBytes = 0;
  bool closed = false;
  // Guards what follows: calls of one communicator may come from several threads.
  std::mutex mutex;
  void* lastStream = nullptr; // the stream of the previous call; null before the first
  std::vector<ReadyInstance> instances;
};

/// Makes an instance (Python: Communicator._instance, collective on first use). Returns 0 and
/// sets *instance and *inPlace, or nonzero with the collc status name and the message written.
using InstanceFactory = int (*)(int64_t comm, const char* kind, const char* dtype, const char* op,
                                int64_t root, int64_t rowLength, void** instance, int* inPlace,
                                char* status, size_t statusCapacity, char* message,
                                size_t messageCapacity);

void registerCommunicator(int64_t handle, int rank, int nranks, int device, uint64_t maxBytes);
/// The communicator's instances are closed by its owner after this; later calls are refused.
void closeCommunicator(int64_t handle);
void forgetCommunicator(int64_t handle);
/// The stream of the last call of `handle` (null before its first, or for no communicator).
void* lastStream(int64_t handle);
void setInstanceFactory(InstanceFactory factory);

/// The communicator of `handle`; throws (collc.Error's message) where there is none or it was
/// closed.
std::shared_ptr<Communicator> communicator(int64_t handle);

/// What a call needs of an instance.
struct InstanceRef {
  collc_instance* handle = nullptr;
  bool inPlace = false;
};

/// The instance for this key, made through the factory on its first use (outside every lock:
/// making it is collective and calls back into Python).
InstanceRef instance(Communicator& comm, const char* kind, const char* dtype, const std::string& op,
                     int64_t root = 0, int64_t rowLength = 0);

/// Registers every op's CUDA and CPU kernels with torch's dispatcher, once: "" on success, else
/// torch's reason (a kernel that does not match its schema), with nothing left registered.
std::string registerAllKernels();

} // namespace collc::torchops
