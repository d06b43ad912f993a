// The C API's status, last error, version and enum conversions (include/collc/collc.h).
#include "runtime/CApiSupport.h"
#include "runtime/Devices.h"

namespace collc::capi {

namespace {

constexpr bool sameText(const char* a, const char* b) {
  return *a == *b && (*a == '\0' || sameText(a + 1, b + 1));
}
static_assert(sameText(COLLC_LIBRARY_VERSION, COLLC_VERSION_STRING),
              "include/collc/collc.h's COLLC_VERSION_* must be the project's version "
              "(CMakeLists.txt)");

// Per thread, so that one thread's failure is never reported to another.
thread_local std::string lastError;
} // namespace

collc_status fail(collc_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

collc_status checkStructSize(const char* function, const char* type, size_t size,
                             const size_t* known, size_t nknown) {
  for (size_t i = 0; i < nknown; ++i)
    if (size == known[i])
      return COLLC_OK;
  std::string sizes;
  for (size_t i = 0; i < nknown; ++i)
    sizes += (i == 0 ? "" : i + 1 == nknown ? " or " : ", ") + std::to_string(known[i]);
  const size_t current = known[nknown - 1];
  std::string message = std::string(function) + ": the " + type + " struct's struct_size is " +
                        std::to_string(size) + " bytes; ";
  if (size > current)
    return fail(COLLC_UNSUPPORTED,
                message + "this library (collc " COLLC_LIBRARY_VERSION ") knows " + sizes +
                    ": the program was built with a newer collc.h than the library, or did not "
                    "fill the struct with its _init function");
  return fail(COLLC_INVALID_ARGUMENT, message + "a " + type + " has " + sizes +
                                          ": fill the struct with its _init function first");
}

bool fromC(const collc_dtype& in, DType& out) {
  switch (rawValue(in)) {
  case COLLC_F32:
    out = DType::F32;
    return true;
  case COLLC_F16:
    out = DType::F16;
    return true;
  case COLLC_BF16:
    out = DType::BF16;
    return true;
  }
  return false;
}

bool fromC(const collc_reduce_op& in, ReduceOp& out) {
  switch (rawValue(in)) {
  case COLLC_SUM:
    out = ReduceOp::Sum;
    return true;
  case COLLC_MAX:
    out = ReduceOp::Max;
    return true;
  case COLLC_MIN:
    out = ReduceOp::Min;
    return true;
  }
  return false;
}

bool fromC(const collc_collective& in, CollectiveKind& out) {
  switch (rawValue(in)) {
  case COLLC_ALLREDUCE:
    out = CollectiveKind::AllReduce;
    return true;
  case COLLC_ALLGATHER:
    out = CollectiveKind::AllGather;
    return true;
  case COLLC_REDUCESCATTER:
    out = CollectiveKind::ReduceScatter;
    return true;
  case COLLC_BROADCAST:
    out = CollectiveKind::Broadcast;
    return true;
  case COLLC_REDUCE:
    out = CollectiveKind::Reduce;
    return true;
  case COLLC_ALLTOALL:
    out = CollectiveKind::AllToAll;
    return true;
  }
  return false;
}

collc_collective toC(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return COLLC_ALLREDUCE;
  case CollectiveKind::AllGather:
    return COLLC_ALLGATHER;
  case CollectiveKind::ReduceScatter:
    return COLLC_REDUCESCATTER;
  case CollectiveKind::Broadcast:
    return COLLC_BROADCAST;
  case CollectiveKind::Reduce:
    return COLLC_REDUCE;
  case CollectiveKind::AllToAll:
    return COLLC_ALLTOALL;
  }
  return COLLC_ALLREDUCE;
}

collc_dtype toC(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return COLLC_F32;
  case DType::F16:
    return COLLC_F16;
  case DType::BF16:
    return COLLC_BF16;
  }
  return COLLC_F32;
}

std::string worldArch(const SymmetricWorld& world) {
  const std::vector<int>& local = world.localRanks();
  return local.empty() ? std::string() : gpuArch(world.device(local.front()));
}

} // namespace collc::capi

extern "C" {

const char* collc_last_error(void) {
  return collc::capi::lastError.c_str();
}

const char* collc_status_name(collc_status status) {
  switch (status) {
  case COLLC_OK:
    return "COLLC_OK";
  case COLLC_INVALID_ARGUMENT:
    return "COLLC_INVALID_ARGUMENT";
  case COLLC_SPEC_ERROR:
    return "COLLC_SPEC_ERROR";
  case COLLC_CUDA_ERROR:
    return "COLLC_CUDA_ERROR";
  case COLLC_NCCL_ERROR:
    return "COLLC_NCCL_ERROR";
  case COLLC_UNSUPPORTED:
    return "COLLC_UNSUPPORTED";
  case COLLC_INTERNAL:
    return "COLLC_INTERNAL";
  }
  return "unknown status";
}

const char* collc_version(void) {
  return COLLC_LIBRARY_VERSION;
}

} // extern "C"
