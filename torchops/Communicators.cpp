#include "torchops/Communicators.h"

#include "torchops/Errors.h"

#include <unordered_map>

namespace collc::torchops {
namespace {

std::mutex registryMutex;
std::unordered_map<int64_t, std::shared_ptr<Communicator>>& registry() {
  static auto* communicators = new std::unordered_map<int64_t, std::shared_ptr<Communicator>>();
  return *communicators; // never destroyed: ops may still run while the process exits
}
InstanceFactory factory = nullptr;

} // namespace

void registerCommunicator(int64_t handle, int rank, int nranks, int device, uint64_t maxBytes) {
  auto comm = std::make_shared<Communicator>();
  comm->handle = handle;
  comm->rank = rank;
  comm->nranks = nranks;
  comm->device = device;
  comm->maxBytes = maxBytes;
  std::lock_guard<std::mutex> lock(registryMutex);
  registry()[handle] = std::move(comm);
}

void closeCommunicator(int64_t handle) {
  std::shared_ptr<Communicator> comm;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto found = registry().find(handle);
    if (found == registry().end())
      return;
    comm = found->second;
  }
  std::lock_guard<std::mutex> lock(comm->mutex);
  comm->closed = true;
  comm->instances.clear();
}

void forgetCommunicator(int64_t handle) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().erase(handle);
}

void* lastStream(int64_t handle) {
  std::shared_ptr<Communicator> comm;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto found = registry().find(handle);
    if (found == registry().end())
      return nullptr;
    comm = found->second;
  }
  std::lock_guard<std::mutex> lock(comm->mutex);
  return comm->lastStream;
}

void setInstanceFactory(InstanceFactory made) {
  std::lock_guard<std::mutex> lock(registryMutex);
  factory = made;
}

std::shared_ptr<Communicator> communicator(int64_t handle) {
  std::shared_ptr<Communicator> comm;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto found = registry().find(handle);
    if (found != registry().end())
      comm = found->second;
  }
  if (!comm)
    raise("no live collc communicator " + std::to_string(handle));
  return comm;
}

InstanceRef instance(Communicator& comm, const char* kind, const char* dtype, const std::string& op,
                     int64_t root, int64_t rowLength) {
  auto matches = [&](const ReadyInstance& ready) {
    return ready.kind == kind && ready.dtype == dtype && ready.op == op && ready.root == root &&
           ready.rowLength == rowLength;
  };
  InstanceFactory make = nullptr;
  {
    std::lock_guard<std::mutex> lock(comm.mutex);
    if (comm.closed)
      raise("this communicator was closed");
    for (const ReadyInstance& ready : comm.instances)
      if (matches(ready))
        return {ready.handle, ready.inPlace};
  }
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    make = factory;
  }
  if (!make)
    raise("collc's torch op library has no instance factory: import collc.torch to load it",
          "COLLC_INTERNAL");
  char status[64] = {0};
  char message[4096] = {0};
  void* handle = nullptr;
  int inPlace = 0;
  if (make(comm.handle, kind, dtype, op.c_str(), root, rowLength, &handle, &inPlace, status,
           sizeof status, message, sizeof message) != 0 ||
      !handle)
    raise(message[0] ? message : "making the instance failed",
          status[0] ? status : "COLLC_INTERNAL");
  ReadyInstance made{kind,        dtype, op, root, rowLength, static_cast<collc_instance*>(handle),
                     inPlace != 0};
  std::lock_guard<std::mutex> lock(comm.mutex);
  if (comm.closed)
    raise("this communicator was closed");
  for (const ReadyInstance& ready : comm.instances)
    if (matches(ready))
      return {ready.handle, ready.inPlace}; // made by another thread meanwhile
  comm.instances.push_back(made);
  return {made.handle, made.inPlace};
}

} // namespace collc::torchops
