// What the C API's two halves share (include/collc/collc.h): the handles' contents, the calling
// thread's last error, and the C enums as collc's own. The compiling half lives in
// libcollc_compiler.so (pipeline/CApiCompile.cpp), the rest in libcollc.so; the last error is kept
// by libcollc.so alone, so that both halves report into the same place. Not installed.
#ifndef COLLC_RUNTIME_CAPISUPPORT_H
#define COLLC_RUNTIME_CAPISUPPORT_H

#include "abi/CompiledCollective.h"
#include "abi/Types.h"
#include "collc/collc.h"
#include "runtime/BundleFile.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Dispatcher.h"
#include "runtime/Status.h"
#include "runtime/SymmetricWorld.h"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>

struct collc_world {
  std::unique_ptr<collc::SymmetricWorld> world;
  /// Instances and dispatchers made in it: the world may not go before they do.
  std::atomic<int> users{0};
};

struct collc_compiled {
  collc::CompiledCollective compiled;
  /// Loaded from a bundle: instances take its cubins instead of compiling with NVRTC.
  std::optional<collc::LoadedBundle> bundle;
};

struct collc_instance {
  collc_world* world = nullptr;
  std::unique_ptr<collc::CollectiveInstance> instance;
};

struct collc_dispatcher {
  collc_world* world = nullptr;
  std::unique_ptr<collc::Dispatcher> dispatcher;
  std::string description;
};

namespace collc::capi {

/// Makes `message` the calling thread's last error and returns `status`.
collc_status fail(collc_status status, std::string message);

/// fail() with the message of `error` (which must be a failure) after `function`'s name.
inline collc_status fail(collc_status status, const char* function, Error error) {
  return fail(status, std::string(function) + ": " + toString(std::move(error)));
}

/// Runs `body` (which returns a collc_status), turning any exception into COLLC_INTERNAL: nothing
/// may unwind into a C caller.
template <class Body> collc_status guarded(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(COLLC_INTERNAL, std::string(function) + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(COLLC_INTERNAL, std::string(function) + ": internal error: " + e.what());
  } catch (...) {
    return fail(COLLC_INTERNAL, std::string(function) + ": internal error: unknown exception");
  }
}

/// The int a C caller stored in an enum field. C lets any int sit there; C++ makes loading a value
/// outside the enumerators' range undefined, so the field is read as the int it holds.
template <class Enum> int rawValue(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int), "a C enum is an int");
  int value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

/// Checks `size`, the struct_size of a caller's `type` struct, against the sizes the struct has had
/// (`known`, oldest first, the current one last): COLLC_OK, or the status that refuses it with a
/// message naming `function`, the size and what to do.
collc_status checkStructSize(const char* function, const char* type, size_t size,
                             const size_t* known, size_t nknown);

/// A caller's versioned struct as this library's: its first struct_size bytes (a struct of an older
/// collc.h is a prefix of the current one: fields are only appended) over `defaults`, which the
/// fields it lacks keep. Null `in`: the defaults.
template <class T, size_t N>
collc_status readSized(const char* function, const char* type, const T* in, const T& defaults,
                       const size_t (&known)[N], T& out) {
  static_assert(std::is_trivially_copyable_v<T>, "a C struct");
  out = defaults;
  if (!in)
    return COLLC_OK;
  size_t size = 0;
  std::memcpy(&size, in, sizeof size); // every version starts with struct_size
  if (collc_status status = checkStructSize(function, type, size, known, N))
    return status;
  std::memcpy(static_cast<void*>(&out), in, size);
  out.struct_size = sizeof(T);
  return COLLC_OK;
}

/// The _init_sized functions: the first `size` bytes of `defaults` (their struct_size set to
/// `size`) into the caller's struct, after checking that `size` is one the struct has had.
template <class T, size_t N>
collc_status initSized(const char* function, const char* type, T* out, size_t size,
                       const T& defaults, const size_t (&known)[N]) {
  static_assert(std::is_trivially_copyable_v<T>, "a C struct");
  if (!out)
    return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": options is null");
  if (collc_status status = checkStructSize(function, type, size, known, N))
    return status;
  T filled = defaults;
  filled.struct_size = size;
  std::memcpy(static_cast<void*>(out), &filled, size);
  return COLLC_OK;
}

/// The sizes of collc_dispatch_options, oldest first.
inline constexpr size_t kDispatchOptionsSizes[] = {sizeof(collc_dispatch_options)};
/// The sizes of collc_compile_options, oldest first: without vector_bytes, unroll and
/// whole_stores (the first layout with struct_size), then with them, then with work_limit.
inline constexpr size_t kCompileOptionsSizes[] = {offsetof(collc_compile_options, vector_bytes),
                                                  offsetof(collc_compile_options, work_limit),
                                                  sizeof(collc_compile_options)};
// The older structs ended where vector_bytes and work_limit start: no padding between them. (The
// one before work_limit was padded to the struct's alignment, which is work_limit's own.)
static_assert(offsetof(collc_compile_options, vector_bytes) % alignof(collc_compile_options) == 0);
static_assert(alignof(int64_t) == alignof(collc_compile_options));

/// The C enums as collc's; false for a value outside the enum (the caller reports it). By
/// reference, so that a value out of range is never loaded as the enum.
bool fromC(const collc_dtype& in, DType& out);
bool fromC(const collc_reduce_op& in, ReduceOp& out);
bool fromC(const collc_collective& in, CollectiveKind& out);
collc_collective toC(CollectiveKind kind);
collc_dtype toC(DType dtype);

/// The NVRTC target for the GPU of the world's first local rank ("" if it cannot be told).
std::string worldArch(const SymmetricWorld& world);

} // namespace collc::capi

#endif // COLLC_RUNTIME_CAPISUPPORT_H
