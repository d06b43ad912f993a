// The C API's compiled collectives, instances and dispatchers' launches (include/collc/collc.h).
// Compiling, and making a dispatcher (which compiles its variants), live in libcollc_compiler.so:
// pipeline/CApiCompile.cpp.
#include "runtime/BufferOverlap.h"
#include "runtime/CApiSupport.h"
#include "runtime/CallCheck.h"
#include "runtime/HeapSize.h"
#include "runtime/Jit.h"
#include "runtime/NvrtcLibrary.h"

#include <vector>

using namespace collc;
using collc::capi::fail;
using collc::capi::guarded;

namespace {

cudaStream_t streamOrWorlds(const SymmetricWorld& world, int rank, void* stream) {
  return stream ? static_cast<cudaStream_t>(stream) : world.stream(rank);
}

/// A launch's arguments that can be checked without the GPU, so that they are reported as
/// COLLC_INVALID_ARGUMENT; what is left to fail after them is the GPU's.
collc_status checkLaunch(const char* function, const CollectiveInstance& instance, int rank,
                         const void* in, const void* out, void* const* aux, int naux,
                         uint64_t count) {
  const CompiledCollective& compiled = instance.compiled();
  auto invalid = [&](const std::string& why) {
    return fail(COLLC_INVALID_ARGUMENT,
                std::string(function) + ": " + compiled.specName + ": " + why);
  };
  if (!instance.world().isLocal(rank))
    return invalid("rank " + std::to_string(rank) + " is not driven by this process (world of " +
                   std::to_string(instance.world().nranks()) + " ranks)");
  if (!in || !out)
    return invalid("null input or output buffer on rank " + std::to_string(rank));
  if (naux != int(compiled.aux.size()) || (naux > 0 && !aux))
    return invalid("it takes " + std::to_string(compiled.aux.size()) + " aux buffers; the call " +
                   "passes " + std::to_string(naux) + (naux > 0 && !aux ? " (aux is null)" : ""));
  if (count == 0 || count > instance.maxCount())
    return invalid("a call of " + std::to_string(count) + " elements; the instance takes 1 to " +
                   std::to_string(instance.maxCount()) + " (its max_count)");
  return COLLC_OK;
}

/// checkLaunch's verdict where the world checks calls: a call refused here must still take part
/// in the ranks' comparison (which then fails it everywhere), or the others would wait for it.
collc_status checkLaunchTogether(const char* function, CollectiveInstance& instance, int rank,
                                 const void* in, const void* out, void* const* aux, int naux,
                                 uint64_t count) {
  const collc_status status = checkLaunch(function, instance, rank, in, out, aux, naux, count);
  if (status != COLLC_OK && instance.world().checksCalls() && instance.world().isLocal(rank))
    consumeError(instance.agreeOnCall(rank, count, true)); // the local reason is the message
  return status;
}

/// A launch that failed after checkLaunch: overlapping buffers and calls that differ between
/// ranks (the checking mode) are the caller's to fix, the rest is the GPU's.
collc_status launchFailed(const char* function, const CompiledCollective& compiled, const void* in,
                          const void* out, void* const* aux, int naux, uint64_t count,
                          Error error) {
  Error overlap =
      checkBufferOverlap(compiled, in, out, Span<void* const>(aux, aux ? size_t(naux) : 0), count);
  const bool callCheck = error.message().find(kCallCheckMarker) != std::string::npos;
  const collc_status status = overlap || callCheck ? COLLC_INVALID_ARGUMENT : COLLC_CUDA_ERROR;
  consumeError(std::move(overlap));
  return fail(status, function, std::move(error));
}

collc_status launchDispatched(collc_dispatcher* handle, int rank, const void* in, void* out,
                              uint64_t count, void* stream) {
  const char* function = "collc_dispatcher_launch";
  if (!handle || !handle->dispatcher)
    return fail(COLLC_INVALID_ARGUMENT, "collc_dispatcher_launch: dispatcher is null");
  const Dispatcher& dispatcher = *handle->dispatcher;
  if (count == 0 || count > dispatcher.maxCount())
    return fail(COLLC_INVALID_ARGUMENT, "collc_dispatcher_launch: a call of " +
                                            std::to_string(count) +
                                            " elements; the dispatcher takes 1 to " +
                                            std::to_string(dispatcher.maxCount()));
  CollectiveInstance& instance = dispatcher.instanceFor(count);
  if (collc_status status =
          checkLaunchTogether(function, instance, rank, in, out, nullptr, 0, count))
    return status;
  cudaStream_t cudaStream = streamOrWorlds(instance.world(), rank, stream);
  if (Error err = dispatcher.launch(rank, in, out, count, cudaStream))
    return launchFailed(function, instance.compiled(), in, out, nullptr, 0, count, std::move(err));
  return COLLC_OK;
}

} // namespace

extern "C" {

collc_status collc_set_nvrtc_library(const char* path) {
  return guarded("collc_set_nvrtc_library", [&] {
    setDefaultNvrtcLibrary(path ? path : "");
    return COLLC_OK;
  });
}

int collc_compiled_in_place(const collc_compiled* compiled) {
  return compiled && compiled->compiled.inPlace ? 1 : 0;
}

collc_status collc_compiled_info(const collc_compiled* compiled, collc_collective* kind,
                                 collc_dtype* dtype, int* nranks, int* naux) {
  return guarded("collc_compiled_info", [&] {
    if (!compiled)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_info: compiled is null");
    // Each output is optional: ask only for what you need.
    const CompiledCollective& c = compiled->compiled;
    if (kind)
      *kind = collc::capi::toC(c.kind);
    if (dtype)
      *dtype = collc::capi::toC(c.dtype);
    if (nranks)
      *nranks = c.nranks;
    if (naux)
      *naux = int(c.aux.size());
    return COLLC_OK;
  });
}

collc_status collc_compiled_buffer_type(const collc_compiled* compiled, int buffer,
                                        collc_element_type* type) {
  return guarded("collc_compiled_buffer_type", [&] {
    if (!compiled || !type)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_buffer_type: null compiled or type");
    const CompiledCollective& c = compiled->compiled;
    if (buffer < -1 || buffer >= int(c.aux.size()))
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_buffer_type: buffer " +
                                              std::to_string(buffer) +
                                              " is neither the output (-1) nor one of the " +
                                              std::to_string(c.aux.size()) + " aux buffers");
    const ElementType element = buffer < 0 ? c.outputType() : c.auxType(size_t(buffer));
    *type = static_cast<collc_element_type>(cValueOf(element));
    return COLLC_OK;
  });
}

collc_status collc_compiled_buffer_counts(const collc_compiled* compiled, uint64_t count,
                                          uint64_t* input_count, uint64_t* output_count) {
  return guarded("collc_compiled_buffer_counts", [&] {
    if (!compiled || !input_count || !output_count)
      return fail(COLLC_INVALID_ARGUMENT,
                  "collc_compiled_buffer_counts: null compiled, input_count or output_count");
    const uint64_t in = compiled->compiled.inputCount(count);
    const uint64_t out = compiled->compiled.outputCount(count);
    if (!fitsSize(in) || !fitsSize(out))
      return fail(COLLC_INVALID_ARGUMENT,
                  "collc_compiled_buffer_counts: a call of " + std::to_string(count) +
                      " elements has buffers of more than 2^63 - 1 elements");
    *input_count = in;
    *output_count = out;
    return COLLC_OK;
  });
}

collc_status collc_compiled_aux_count(const collc_compiled* compiled, int buffer, uint64_t count,
                                      uint64_t* elements) {
  return guarded("collc_compiled_aux_count", [&] {
    if (!compiled || !elements)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_aux_count: null compiled or elements");
    const CompiledCollective& c = compiled->compiled;
    if (buffer < 0 || buffer >= int(c.aux.size()))
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_aux_count: buffer " +
                                              std::to_string(buffer) + " is not one of the " +
                                              std::to_string(c.aux.size()) + " aux buffers");
    const uint64_t elems = c.aux[size_t(buffer)].elements(count);
    if (!fitsSize(elems))
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_aux_count: a call of " +
                                              std::to_string(count) + " elements has '" +
                                              c.aux[size_t(buffer)].name +
                                              "' of more than 2^63 - 1 elements");
    *elements = elems;
    return COLLC_OK;
  });
}

collc_status collc_compiled_heap_bytes(const collc_compiled* compiled, uint64_t max_count,
                                       uint64_t* bytes) {
  return guarded("collc_compiled_heap_bytes", [&] {
    if (!compiled || !bytes)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_heap_bytes: null compiled or bytes");
    if (std::string problem = sizesProblem(compiled->compiled, max_count); !problem.empty())
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_heap_bytes: " + problem);
    *bytes = heapBytesFor(compiled->compiled, max_count);
    return COLLC_OK;
  });
}

const char* collc_compiled_kernel_name(const collc_compiled* compiled) {
  if (!compiled) {
    fail(COLLC_INVALID_ARGUMENT, "collc_compiled_kernel_name: compiled is null");
    return nullptr;
  }
  return compiled->compiled.kernelName.c_str();
}

const char* collc_compiled_cuda_source(const collc_compiled* compiled) {
  if (!compiled) {
    fail(COLLC_INVALID_ARGUMENT, "collc_compiled_cuda_source: compiled is null");
    return nullptr;
  }
  return compiled->compiled.cudaSource.c_str();
}

collc_status collc_compiled_destroy(collc_compiled* compiled) {
  delete compiled;
  return COLLC_OK;
}

collc_status collc_compiled_load_bundle(const char* path, collc_compiled** out) {
  return guarded("collc_compiled_load_bundle", [&] {
    if (!out)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_load_bundle: out is null");
    *out = nullptr;
    if (!path)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_load_bundle: path is null");
    Expected<LoadedBundle> bundle = loadBundle(path);
    if (!bundle)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compiled_load_bundle", bundle.takeError());
    auto handle = std::make_unique<collc_compiled>();
    handle->compiled = bundle->compiled();
    handle->bundle = std::move(*bundle);
    *out = handle.release();
    return COLLC_OK;
  });
}

collc_status collc_instance_create(collc_world* world, const collc_compiled* compiled,
                                   uint64_t max_count, collc_instance** out) {
  const char* function = "collc_instance_create";
  return guarded(function, [&] {
    if (!out)
      return fail(COLLC_INVALID_ARGUMENT, "collc_instance_create: out is null");
    *out = nullptr;
    if (!world || !world->world || !compiled)
      return fail(COLLC_INVALID_ARGUMENT, "collc_instance_create: null world or compiled");
    const CompiledCollective& c = compiled->compiled;
    if (max_count == 0)
      return fail(COLLC_INVALID_ARGUMENT, "collc_instance_create: max_count must be at least 1");
    if (c.nranks != world->world->nranks())
      return fail(COLLC_INVALID_ARGUMENT, "collc_instance_create: " + c.specName +
                                              " was compiled for " + std::to_string(c.nranks) +
                                              " ranks; the world has " +
                                              std::to_string(world->world->nranks()));
    JitOptions jit;
    jit.arch = collc::capi::worldArch(*world->world);
    jit.familyTargetWhereUsed = true; // the GPU's own arch: NVRTC may take its family's
    if (jit.arch.empty())
      return fail(COLLC_CUDA_ERROR,
                  "collc_instance_create: cannot tell the architecture of the world's GPU");
    // A bundle brings its cubins; anything else is compiled here with NVRTC.
    std::string image;
    if (compiled->bundle) {
      Expected<std::string> cubin = compiled->bundle->cubinFor(jit.arch);
      if (!cubin)
        return fail(COLLC_UNSUPPORTED, function, cubin.takeError());
      image = std::move(*cubin);
    } else {
      Expected<JitResult> cubin = compileCuda(c.cudaSource, c.kernelName, JitOutput::Cubin, jit);
      if (!cubin)
        return fail(COLLC_CUDA_ERROR, function, cubin.takeError());
      image = std::move(cubin->image);
    }
    Expected<std::unique_ptr<CollectiveInstance>> instance =
        CollectiveInstance::create(*world->world, c, image, max_count);
    if (!instance)
      return fail(COLLC_CUDA_ERROR, function, instance.takeError());
    auto handle = std::make_unique<collc_instance>();
    handle->world = world;
    handle->instance = std::move(*instance);
    ++world->users;
    *out = handle.release();
    return COLLC_OK;
  });
}

collc_status collc_launch(collc_instance* instance, int rank, const void* in, void* out,
                          void* const* aux, int naux, uint64_t count, void* stream) {
  const char* function = "collc_launch";
  return guarded(function, [&] {
    if (!instance || !instance->instance)
      return fail(COLLC_INVALID_ARGUMENT, "collc_launch: instance is null");
    CollectiveInstance& ready = *instance->instance;
    if (collc_status status = checkLaunchTogether(function, ready, rank, in, out, aux, naux, count))
      return status;
    cudaStream_t cudaStream = streamOrWorlds(ready.world(), rank, stream);
    if (Error err =
            ready.launch(rank, in, out, Span<void* const>(aux, size_t(naux)), count, cudaStream))
      return launchFailed(function, ready.compiled(), in, out, aux, naux, count, std::move(err));
    return COLLC_OK;
  });
}

collc_status collc_instance_synchronize(collc_instance* instance, void* const* streams,
                                        int nstreams) {
  const char* function = "collc_instance_synchronize";
  return guarded(function, [&] {
    if (!instance || !instance->instance)
      return fail(COLLC_INVALID_ARGUMENT, "collc_instance_synchronize: instance is null");
    const SymmetricWorld& world = instance->instance->world();
    const std::vector<int>& local = world.localRanks();
    std::vector<cudaStream_t> waitOn;
    if (!streams) {
      for (int rank : local)
        waitOn.push_back(world.stream(rank));
    } else {
      if (nstreams != int(local.size()))
        return fail(COLLC_INVALID_ARGUMENT,
                    "collc_instance_synchronize: " + std::to_string(nstreams) +
                        " streams; this process drives " + std::to_string(local.size()) +
                        " ranks (one stream each, in collc_world_local_ranks order)");
      for (int i = 0; i < nstreams; ++i)
        waitOn.push_back(static_cast<cudaStream_t>(streams[i]));
    }
    if (Error err = instance->instance->synchronize(waitOn))
      return fail(COLLC_CUDA_ERROR, function, std::move(err));
    return COLLC_OK;
  });
}

collc_status collc_instance_max_count(const collc_instance* instance, uint64_t* max_count) {
  return guarded("collc_instance_max_count", [&] {
    if (!instance || !instance->instance || !max_count)
      return fail(COLLC_INVALID_ARGUMENT, "collc_instance_max_count: null instance or max_count");
    *max_count = instance->instance->maxCount();
    return COLLC_OK;
  });
}

collc_status collc_instance_destroy(collc_instance* instance) {
  return guarded("collc_instance_destroy", [&] {
    if (!instance)
      return COLLC_OK;
    collc_world* world = instance->world;
    instance->instance.reset();
    if (world)
      --world->users;
    delete instance;
    return COLLC_OK;
  });
}

collc_status collc_dispatch_options_init_sized(collc_dispatch_options* options,
                                               size_t struct_size) {
  collc_dispatch_options defaults{};
  defaults.struct_size = sizeof defaults;
  defaults.collective = COLLC_ALLREDUCE;
  defaults.spec = nullptr;
  defaults.dtype = COLLC_BF16;
  defaults.op = COLLC_SUM;
  defaults.max_count = 0;
  defaults.table = nullptr;
  return collc::capi::initSized("collc_dispatch_options_init", "collc_dispatch_options", options,
                                struct_size, defaults, collc::capi::kDispatchOptionsSizes);
}

collc_status collc_dispatcher_launch(collc_dispatcher* dispatcher, int rank, const void* in,
                                     void* out, uint64_t count, void* stream) {
  return guarded("collc_dispatcher_launch",
                 [&] { return launchDispatched(dispatcher, rank, in, out, count, stream); });
}

const char* collc_dispatcher_description(const collc_dispatcher* dispatcher) {
  if (!dispatcher) {
    fail(COLLC_INVALID_ARGUMENT, "collc_dispatcher_description: dispatcher is null");
    return nullptr;
  }
  return dispatcher->description.c_str();
}

collc_status collc_dispatcher_destroy(collc_dispatcher* dispatcher) {
  return guarded("collc_dispatcher_destroy", [&] {
    if (!dispatcher)
      return COLLC_OK;
    collc_world* world = dispatcher->world;
    dispatcher->dispatcher.reset();
    if (world)
      --world->users;
    delete dispatcher;
    return COLLC_OK;
  });
}

} // extern "C"
