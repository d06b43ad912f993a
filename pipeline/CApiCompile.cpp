// The C API's compiling half (include/collc/collc.h): collc_compile, collc_compile_text,
// collc_spec_ranks and collc_dispatcher_create, which need the compiler and so live in
// libcollc_compiler.so. A program that only launches what is compiled links libcollc.so alone.
#include "compiler/Compile.h"
#include "pipeline/CompileDispatch.h"
#include "runtime/CApiSupport.h"

#include <sstream>

using namespace collc;
using collc::capi::fail;
using collc::capi::guarded;

namespace {

collc_compile_options compileOptionsDefaults() {
  collc_compile_options defaults{};
  defaults.struct_size = sizeof defaults;
  defaults.dtype = COLLC_F32;
  defaults.op = COLLC_SUM;
  defaults.nranks = 2;
  defaults.root = 0;
  defaults.sync = COLLC_SYNC_DEFAULT;
  defaults.row_length = 0;
  defaults.blocks = 0;
  defaults.threads = 0;
  defaults.vector_bytes = 0;
  defaults.unroll = 0;
  defaults.whole_stores = -1;
  defaults.work_limit = 0;
  return defaults;
}

/// The C options as the compiler's; COLLC_OK or an argument error naming the field.
collc_status toCompileOptions(const char* function, const collc_compile_options* in,
                              CompileOptions& out) {
  collc_compile_options o;
  if (collc_status status =
          collc::capi::readSized(function, "collc_compile_options", in, compileOptionsDefaults(),
                                 collc::capi::kCompileOptionsSizes, o))
    return status;
  auto invalid = [&](const std::string& why) {
    return fail(COLLC_INVALID_ARGUMENT, std::string(function) + ": options: " + why);
  };
  if (!collc::capi::fromC(o.dtype, out.dtype))
    return invalid("dtype " + std::to_string(collc::capi::rawValue(o.dtype)) +
                   " is no collc_dtype");
  if (!collc::capi::fromC(o.op, out.op))
    return invalid("op " + std::to_string(collc::capi::rawValue(o.op)) + " is no collc_reduce_op");
  out.nranks = o.nranks;
  out.root = o.root;
  // The strategies' C values are the registry's (abi/Types.h); 0 is the spec's own.
  const int sync = collc::capi::rawValue(o.sync);
  if (sync == COLLC_SYNC_DEFAULT)
    out.sync.reset();
  else if (std::optional<SyncKind> registered = fromCValue<SyncKind>(sync))
    out.sync = *registered;
  else
    return invalid("sync " + std::to_string(sync) + " is no collc_sync");
  if (o.row_length < 0)
    return invalid("row_length " + std::to_string(o.row_length) + " is negative");
  out.rowLength = o.row_length;
  if (o.blocks < 0 || o.threads < 0)
    return invalid("blocks and threads must be positive, or 0 for the spec's default");
  if (o.blocks > 0)
    out.blocks = o.blocks;
  if (o.threads > 0)
    out.threads = o.threads;
  // The compiler checks the values (vector 2, 4, 8 or 16) against the spec, at the spec's place.
  if (o.vector_bytes < 0 || o.unroll < 0)
    return invalid("vector_bytes and unroll must be positive, or 0 for the spec's default");
  if (o.vector_bytes > 0)
    out.vectorBytes = o.vector_bytes;
  if (o.unroll > 0)
    out.unroll = o.unroll;
  if (o.whole_stores < -1 || o.whole_stores > 1)
    return invalid("whole_stores " + std::to_string(o.whole_stores) +
                   " is none of -1 (the spec's), 0 and 1");
  if (o.whole_stores >= 0)
    out.wholeStores = o.whole_stores;
  if (o.work_limit < 0)
    return invalid("work_limit " + std::to_string(o.work_limit) +
                   " is negative (0: collc's default)");
  out.verifyWorkLimit = o.work_limit;
  return COLLC_OK;
}

/// Compiles `spec` and hands out the result; the diagnostics become the last error.
collc_status compileSpec(const char* function, const SpecSource& spec,
                         const collc_compile_options* options, collc_compiled** out) {
  CompileOptions compileOptions;
  if (collc_status status = toCompileOptions(function, options, compileOptions))
    return status;
  std::ostringstream diagnosticStream;
  Expected<CompiledCollective> compiled = compileCollective(spec, compileOptions, diagnosticStream);
  const std::string diagnostics = diagnosticStream.str();
  if (!compiled) {
    Error error = compiled.takeError();
    const bool specError = error.isSpecError();
    std::string message = std::string(function) + ": " + toString(std::move(error));
    if (!diagnostics.empty())
      message += "\n" + diagnostics;
    while (!message.empty() && message.back() == '\n')
      message.pop_back();
    return fail(specError ? COLLC_SPEC_ERROR : COLLC_INTERNAL, message);
  }
  auto handle = std::make_unique<collc_compiled>();
  handle->compiled = std::move(*compiled);
  *out = handle.release();
  return COLLC_OK;
}

} // namespace

extern "C" {

collc_status collc_compile_options_init_sized(collc_compile_options* options, size_t struct_size) {
  return collc::capi::initSized("collc_compile_options_init", "collc_compile_options", options,
                                struct_size, compileOptionsDefaults(),
                                collc::capi::kCompileOptionsSizes);
}

collc_status collc_compile(const char* spec_name_or_path, const collc_compile_options* options,
                           collc_compiled** out) {
  const char* function = "collc_compile";
  return guarded(function, [&] {
    if (!out)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compile: out is null");
    *out = nullptr;
    if (!spec_name_or_path)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compile: spec_name_or_path is null");
    Expected<SpecSource> spec = loadSpec(spec_name_or_path);
    if (!spec)
      return fail(COLLC_SPEC_ERROR, function, spec.takeError());
    return compileSpec(function, *spec, options, out);
  });
}

collc_status collc_compile_text(const char* name, const char* text,
                                const collc_compile_options* options, collc_compiled** out) {
  const char* function = "collc_compile_text";
  return guarded(function, [&] {
    if (!out)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compile_text: out is null");
    *out = nullptr;
    if (!text)
      return fail(COLLC_INVALID_ARGUMENT, "collc_compile_text: text is null");
    SpecSource spec{name ? name : "<text>", text};
    return compileSpec(function, spec, options, out);
  });
}

collc_status collc_spec_ranks(const char* spec_name_or_path, int* min_ranks, int* max_ranks) {
  const char* function = "collc_spec_ranks";
  return guarded(function, [&] {
    if (!spec_name_or_path || !min_ranks || !max_ranks)
      return fail(COLLC_INVALID_ARGUMENT,
                  "collc_spec_ranks: spec_name_or_path, min_ranks and max_ranks must not be null");
    Expected<std::pair<int, int>> ranks = declaredRanks(std::string_view(spec_name_or_path));
    if (!ranks)
      return fail(COLLC_SPEC_ERROR, function, ranks.takeError());
    *min_ranks = ranks->first;
    *max_ranks = ranks->second;
    return COLLC_OK;
  });
}

collc_status collc_dispatcher_create(collc_world* world, const collc_dispatch_options* options,
                                     collc_dispatcher** out) {
  const char* function = "collc_dispatcher_create";
  return guarded(function, [&] {
    if (!out)
      return fail(COLLC_INVALID_ARGUMENT, "collc_dispatcher_create: out is null");
    *out = nullptr;
    if (!options)
      return fail(COLLC_INVALID_ARGUMENT, "collc_dispatcher_create: options is null");
    collc_dispatch_options defaults, o;
    collc_dispatch_options_init(&defaults);
    // The struct's size first: a struct this library cannot read says so before anything else.
    if (collc_status status =
            collc::capi::readSized(function, "collc_dispatch_options", options, defaults,
                                   collc::capi::kDispatchOptionsSizes, o))
      return status;
    if (!world || !world->world)
      return fail(COLLC_INVALID_ARGUMENT, "collc_dispatcher_create: world is null");
    DispatchRequest request;
    if (!collc::capi::fromC(o.collective, request.collective) ||
        !collc::capi::fromC(o.dtype, request.dtype) || !collc::capi::fromC(o.op, request.op))
      return fail(COLLC_INVALID_ARGUMENT,
                  "collc_dispatcher_create: options: collective, dtype or op is out of range");
    if (o.max_count == 0)
      return fail(COLLC_INVALID_ARGUMENT,
                  "collc_dispatcher_create: options: max_count must be set (the largest call)");
    request.spec = o.spec ? o.spec : "";
    request.nranks = world->world->nranks();
    request.maxCount = o.max_count;
    // Null: the built-in rule alone; "": the default table path, as the C++ API's empty string.
    request.table = o.table ? o.table : "none";
    request.arch = collc::capi::worldArch(*world->world);
    Expected<DispatchProgram> program = compileDispatchProgram(request);
    if (!program)
      return fail(COLLC_SPEC_ERROR, function, program.takeError());
    std::string description = program->description();
    Expected<std::unique_ptr<Dispatcher>> dispatcher =
        Dispatcher::create(*world->world, std::move(*program));
    if (!dispatcher)
      return fail(COLLC_CUDA_ERROR, function, dispatcher.takeError());
    auto handle = std::make_unique<collc_dispatcher>();
    handle->world = world;
    handle->dispatcher = std::move(*dispatcher);
    handle->description = std::move(description);
    ++world->users;
    *out = handle.release();
    return COLLC_OK;
  });
}

} // extern "C"
