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

// The C values are the registry's (abi/Types.h); RegistryTest checks them against collc.h.
template <typename Enum> bool fromRegistered(int cValue, Enum& out) {
  std::optional<Enum> value = fromCValue<Enum>(cValue);
  if (value)
    out = *value;
  return value.has_value();
}

bool fromC(const collc_dtype& in, DType& out) {
  return fromRegistered(rawValue(in), out);
}

bool fromC(const collc_reduce_op& in, ReduceOp& out) {
  return fromRegistered(rawValue(in), out);
}

bool fromC(const collc_collective& in, CollectiveKind& out) {
  return fromRegistered(rawValue(in), out);
}

collc_collective toC(CollectiveKind kind) {
  return collc_collective(cValueOf(kind));
}

collc_dtype toC(DType dtype) {
  return collc_dtype(cValueOf(dtype));
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

const char* collc_sync_name(collc_sync sync) {
  // The registry's spellings are string literals: null-terminated, for the life of the library.
  std::optional<collc::SyncKind> kind =
      collc::fromCValue<collc::SyncKind>(collc::capi::rawValue(sync));
  return kind ? collc::registered(*kind).name.data() : nullptr;
}

const char* collc_version(void) {
  return COLLC_LIBRARY_VERSION;
}

} // extern "C"
