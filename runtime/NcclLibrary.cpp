#include "runtime/NcclLibrary.h"

#include "runtime/CudaCheck.h"
#include "runtime/NcclTypes.h"

#include <cstdlib>
#include <dlfcn.h>
#include <link.h>
#include <memory>

namespace collc {

namespace {

Error ncclError(const std::string& message) {
  return makeError(message);
}

/// The file behind a dlopen handle, or `fallback` if the loader will not say.
std::string loadedPath(void* handle, const char* fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
    return map->l_name;
  return fallback;
}

template <typename Function> void resolve(void* handle, const char* symbol, Function& function) {
  function = reinterpret_cast<Function>(dlsym(handle, symbol));
}

/// Loads NCCL once; the result (library or error message) is kept for the process's lifetime.
struct Loaded {
  NcclLibrary library;
  std::string error; // empty when `library` is usable
};

std::unique_ptr<Loaded> load() {
  auto loaded = std::make_unique<Loaded>();
  void* handle = nullptr;
  std::string errors;
  for (const char* name : {"libnccl.so.2", "libnccl.so"}) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      loaded->library.path = loadedPath(handle, name);
      break;
    }
    const char* why = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (why ? why : name);
  }
  if (!handle) {
    loaded->error = "NCCL not found: " + errors;
    return loaded;
  }

  NcclLibrary& lib = loaded->library;
  std::string missing;
  auto required = [&](const char* symbol, auto& function) {
    resolve(handle, symbol, function);
    if (!function)
      missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
  required("ncclGetVersion", lib.getVersion);
  required("ncclGetErrorString", lib.getErrorString);
  required("ncclCommInitAll", lib.commInitAll);
  required("ncclCommDestroy", lib.commDestroy);
  required("ncclCommAbort", lib.commAbort);
  required("ncclCommGetAsyncError", lib.commGetAsyncError);
  required("ncclAllReduce", lib.allReduce);
  required("ncclGroupStart", lib.groupStart);
  required("ncclGroupEnd", lib.groupEnd);
  required("ncclGetUniqueId", lib.getUniqueId);
  required("ncclCommInitRank", lib.commInitRank);
  required("ncclAllGather", lib.allGather);
  required("ncclBroadcast", lib.broadcast);
  required("ncclCommCount", lib.commCount);
  required("ncclCommCuDevice", lib.commCuDevice);
  required("ncclCommUserRank", lib.commUserRank);
  resolve(handle, "ncclGetLastError", lib.getLastError);
  resolve(handle, "ncclMemAlloc", lib.memAlloc);
  resolve(handle, "ncclMemFree", lib.memFree);
  resolve(handle, "ncclCommWindowRegister", lib.commWindowRegister);
  resolve(handle, "ncclCommWindowDeregister", lib.commWindowDeregister);
  // Optional as well: a library without them still runs AllReduce, and requireCollective() says
  // what is missing when another kind asks for them.
  resolve(handle, "ncclReduceScatter", lib.reduceScatter);
  resolve(handle, "ncclReduce", lib.reduce);
  resolve(handle, "ncclSend", lib.send);
  resolve(handle, "ncclRecv", lib.recv);
  if (!missing.empty()) {
    // The handle stays open: closing a library NCCL may have started threads in is not worth it.
    loaded->error = "NCCL at " + lib.path + " lacks " + missing + " (too old, or not NCCL)";
    return loaded;
  }
  if (lib.getVersion(&lib.versionCode) != ncclSuccess) {
    loaded->error = "NCCL at " + lib.path + ": ncclGetVersion failed";
    return loaded;
  }
  return loaded;
}

const Loaded& loadedOnce() {
  // A function-local static: initialized exactly once, even with concurrent first callers.
  static const std::unique_ptr<Loaded> loaded = load();
  return *loaded;
}

} // namespace

std::string NcclLibrary::versionString() const {
  int major, minor, patch;
  // NCCL_VERSION(X, Y, Z) is X*1000 + Y*100 + Z up to 2.8 and X*10000 + Y*100 + Z from 2.9 on.
  if (versionCode >= 10000) {
    major = versionCode / 10000;
    minor = versionCode / 100 % 100;
  } else {
    major = versionCode / 1000;
    minor = versionCode / 100 % 10;
  }
  patch = versionCode % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

Error NcclLibrary::requireSymmetric() const {
  std::string missing;
  auto need = [&](const void* function, const char* symbol) {
    if (!function)
      missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
  need(reinterpret_cast<const void*>(memAlloc), "ncclMemAlloc");
  need(reinterpret_cast<const void*>(memFree), "ncclMemFree");
  need(reinterpret_cast<const void*>(commWindowRegister), "ncclCommWindowRegister");
  need(reinterpret_cast<const void*>(commWindowDeregister), "ncclCommWindowDeregister");
  if (missing.empty())
    return Error::success();
  return ncclError("NCCL " + versionString() + " at " + path +
                   " has no symmetric-memory windows (missing " + missing +
                   "; they came with NCCL 2.27): only plain buffers can be measured");
}

Error NcclLibrary::requireCollective(CollectiveKind kind) const {
  std::string missing;
  int count = 0;
  const char* release = "2.4";
  auto need = [&](const void* function, const char* symbol, const char* since) {
    if (function)
      return;
    missing += std::string(missing.empty() ? "" : ", ") + symbol;
    ++count;
    release = since;
  };
  switch (kind) {
  case CollectiveKind::AllReduce:
    need(reinterpret_cast<const void*>(allReduce), "ncclAllReduce", "2.4");
    break;
  case CollectiveKind::AllGather:
    need(reinterpret_cast<const void*>(allGather), "ncclAllGather", "2.4");
    break;
  case CollectiveKind::ReduceScatter:
    need(reinterpret_cast<const void*>(reduceScatter), "ncclReduceScatter", "2.4");
    break;
  case CollectiveKind::Broadcast:
    need(reinterpret_cast<const void*>(broadcast), "ncclBroadcast", "2.4");
    break;
  case CollectiveKind::Reduce:
    need(reinterpret_cast<const void*>(reduce), "ncclReduce", "2.4");
    break;
  case CollectiveKind::AllToAll:
    need(reinterpret_cast<const void*>(send), "ncclSend", "2.7");
    need(reinterpret_cast<const void*>(recv), "ncclRecv", "2.7");
    break;
  }
  if (missing.empty())
    return Error::success();
  return ncclError("NCCL " + versionString() + " at " + path + " lacks " + missing + " (NCCL " +
                   release + " and later have " + (count > 1 ? "them" : "it") + "): cannot run " +
                   std::string(name(kind)) + " through NCCL");
}

Error NcclLibrary::enqueue(const NcclCollective& collective, uint64_t count, int nranks,
                           const void* in, void* out, ncclComm_t comm, cudaStream_t stream) const {
  if (Error err = requireCollective(collective.kind))
    return err;
  const NcclCallShape shape = ncclCallShape(collective.kind, count, nranks);
  const size_t n = shape.ncclCount;
  const ncclDataType_t type = ncclTypeOf(collective.dtype);
  const ncclRedOp_t op = ncclOpOf(collective.op);
  const int root = collective.root;
  switch (collective.kind) {
  case CollectiveKind::AllReduce:
    return COLLC_NCCL_CHECK_COMM(*this, comm, allReduce(in, out, n, type, op, comm, stream));
  case CollectiveKind::AllGather:
    return COLLC_NCCL_CHECK_COMM(*this, comm, allGather(in, out, n, type, comm, stream));
  case CollectiveKind::ReduceScatter:
    return COLLC_NCCL_CHECK_COMM(*this, comm, reduceScatter(in, out, n, type, op, comm, stream));
  case CollectiveKind::Broadcast:
    return COLLC_NCCL_CHECK_COMM(*this, comm, broadcast(in, out, n, type, root, comm, stream));
  case CollectiveKind::Reduce:
    return COLLC_NCCL_CHECK_COMM(*this, comm, reduce(in, out, n, type, op, root, comm, stream));
  case CollectiveKind::AllToAll:
    break;
  }
  // Block p of the input goes to rank p, block p of the output comes from it (the rank itself
  // included: NCCL copies that one locally). One group, so that no send waits for its recv.
  const size_t blockBytes = n * sizeOf(collective.dtype);
  COLLC_NCCL_TRY(*this, groupStart());
  Error err = Error::success();
  for (int peer = 0; peer < nranks && !err; ++peer) {
    const void* sendBlock = static_cast<const char*>(in) + peer * blockBytes;
    void* recvBlock = static_cast<char*>(out) + peer * blockBytes;
    err = COLLC_NCCL_CHECK_COMM(*this, comm, send(sendBlock, n, type, peer, comm, stream));
    if (!err)
      err = COLLC_NCCL_CHECK_COMM(*this, comm, recv(recvBlock, n, type, peer, comm, stream));
  }
  // Ended even after a failure: NCCL then drops what the group holds.
  return joinErrors(std::move(err), COLLC_NCCL_CHECK(*this, groupEnd()));
}

Error NcclLibrary::check(ncclResult_t result, const char* call, const char* file, int line,
                         ncclComm_t comm) const {
  if (result == ncclSuccess)
    return Error::success();
  std::string message = std::string(call) + " failed at " + shortSourcePath(file) + ":" +
                        std::to_string(line) + ": " + getErrorString(result);
  // ncclGetLastError keeps the last failure's detail (per thread); "" when there is none.
  if (getLastError) {
    const char* detail = getLastError(comm);
    if (detail && *detail)
      message += std::string(" (") + detail + ")";
  }
  return ncclError(message);
}

Expected<const NcclLibrary*> ncclLibrary() {
  const Loaded& loaded = loadedOnce();
  if (!loaded.error.empty())
    return ncclError(loaded.error);
  return &loaded.library;
}

std::string ncclVersionString() {
  Expected<const NcclLibrary*> lib = ncclLibrary();
  if (!lib) {
    consumeError(lib.takeError());
    return "not found";
  }
  return (*lib)->versionString();
}

} // namespace collc
