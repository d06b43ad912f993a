// NCCL, loaded on first use. libcollc.so does not link NCCL: the library is opened with dlopen the
// first time something asks for it, so the CLI and everything short of a baseline measurement work
// on a machine without NCCL. The types come from <nccl.h> at compile time; the functions from
// whichever libnccl.so.2 the loader finds at run time (NCCL keeps its C ABI stable within 2.x).
#ifndef COLLC_RUNTIME_NCCLLIBRARY_H
#define COLLC_RUNTIME_NCCLLIBRARY_H

#include "abi/Types.h"
#include "runtime/NcclCollective.h"
#include "runtime/Status.h"

#include <cstddef>
#include <nccl.h>
#include <string>

namespace collc {

/// The NCCL functions collc calls, resolved from the loaded library. The required ones are never
/// null in a library that ncclLibrary() returns; the optional ones are null in NCCL releases that
/// predate them (ask requireSymmetric() before using them).
struct NcclLibrary {
  // Required (present since NCCL 2.4).
  ncclResult_t (*getVersion)(int* version) = nullptr;
  const char* (*getErrorString)(ncclResult_t result) = nullptr;
  ncclResult_t (*commInitAll)(ncclComm_t* comms, int ndev, const int* devlist) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t comm) = nullptr;
  ncclResult_t (*commAbort)(ncclComm_t comm) = nullptr;
  ncclResult_t (*commGetAsyncError)(ncclComm_t comm, ncclResult_t* asyncError) = nullptr;
  ncclResult_t (*allReduce)(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream) = nullptr;
  ncclResult_t (*groupStart)() = nullptr;
  ncclResult_t (*groupEnd)() = nullptr;
  // One process per GPU (runtime/ProcessWorld.h): bootstrap, host-side exchanges, adoption of a
  // communicator the application made.
  ncclResult_t (*getUniqueId)(ncclUniqueId* uniqueId) = nullptr;
  ncclResult_t (*commInitRank)(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                               int rank) = nullptr;
  ncclResult_t (*allGather)(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm,
                            cudaStream_t stream) = nullptr;
  ncclResult_t (*broadcast)(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm,
                            cudaStream_t stream) = nullptr;
  ncclResult_t (*commCount)(const ncclComm_t comm, int* count) = nullptr;
  ncclResult_t (*commCuDevice)(const ncclComm_t comm, int* device) = nullptr;
  ncclResult_t (*commUserRank)(const ncclComm_t comm, int* rank) = nullptr;

  // Optional: ncclGetLastError (2.13), ncclMemAlloc / ncclMemFree (2.19), the window functions
  // (2.27). The other collectives' calls, which the baseline needs only for their kinds (ask
  // requireCollective()): ncclReduceScatter and ncclReduce (2.0), ncclSend / ncclRecv (2.7).
  const char* (*getLastError)(ncclComm_t comm) = nullptr;
  ncclResult_t (*memAlloc)(void** ptr, size_t size) = nullptr;
  ncclResult_t (*memFree)(void* ptr) = nullptr;
  ncclResult_t (*commWindowRegister)(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                     int winFlags) = nullptr;
  ncclResult_t (*commWindowDeregister)(ncclComm_t comm, ncclWindow_t win) = nullptr;
  ncclResult_t (*reduceScatter)(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                cudaStream_t stream) = nullptr;
  ncclResult_t (*reduce)(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream) = nullptr;
  ncclResult_t (*send)(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream) = nullptr;
  ncclResult_t (*recv)(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream) = nullptr;

  int versionCode = 0; // as ncclGetVersion reports it: 22803 for 2.28.3
  std::string path;    // the file the loader opened, for reports

  /// "2.28.3", from versionCode.
  std::string versionString() const;
  /// Success if ncclMemAlloc, ncclMemFree, ncclCommWindowRegister and ncclCommWindowDeregister
  /// are all there; otherwise an error naming the missing ones, this library's version and path,
  /// and the NCCL release that has them (2.27).
  Error requireSymmetric() const;
  /// Success if every function that NCCL's version of `kind` calls is there (runtime/
  /// NcclCollective.h); otherwise an error naming the missing ones, the kind, this library's
  /// version and path, and the NCCL release that brought them.
  Error requireCollective(CollectiveKind kind) const;
  /// Enqueues one rank's part of `collective` of `count` elements on `comm` (a communicator of
  /// `nranks` ranks) and `stream`, from `in` to `out`, sized as ncclCallShape() says: one NCCL
  /// call, or for alltoall ncclGroupStart, ncclSend and ncclRecv for every rank, ncclGroupEnd.
  /// Safe inside stream capture and inside an enclosing group. An error when a function is
  /// missing (requireCollective()) or a call fails.
  Error enqueue(const NcclCollective& collective, uint64_t count, int nranks, const void* in,
                void* out, ncclComm_t comm, cudaStream_t stream) const;
  /// Success for ncclSuccess; otherwise "<call> failed at <file>:<line>: <NCCL's error string>",
  /// with ncclGetLastError's detail when the library has it (`comm` may be null).
  Error check(ncclResult_t result, const char* call, const char* file, int line,
              ncclComm_t comm = nullptr) const;
};

/// The process-wide NCCL: dlopen("libnccl.so.2"), then "libnccl.so", on first call (thread-safe);
/// later calls return the same object, or the same failure: "NCCL not found: <dlerror>", or
/// "NCCL at <path> lacks <function>". The library stays loaded until the process exits. Loading
/// leaves the environment alone: NCCL_* variables are the host program's to set.
Expected<const NcclLibrary*> ncclLibrary();

/// The loaded NCCL's version ("2.28.3"), or "not found" when it cannot be loaded.
std::string ncclVersionString();

} // namespace collc

/// An Error expression for one call through an NcclLibrary: `COLLC_NCCL_CHECK(lib,
/// lib.groupEnd())`.
#define COLLC_NCCL_CHECK(lib, call) (lib).check((call), #call, __FILE__, __LINE__)
/// The same with a communicator whose ncclGetLastError detail the message should carry.
#define COLLC_NCCL_CHECK_COMM(lib, comm, call)                                                     \
  (lib).check((call), #call, __FILE__, __LINE__, (comm))

/// Returns the error from the enclosing function (Error or Expected<T>) if `call`
/// fails.
#define COLLC_NCCL_TRY(lib, call)                                                                  \
  do {                                                                                             \
    if (::collc::Error collcNcclError = COLLC_NCCL_CHECK(lib, call))                               \
      return ::collc::Error(std::move(collcNcclError));                                            \
  } while (false)

#endif // COLLC_RUNTIME_NCCLLIBRARY_H
