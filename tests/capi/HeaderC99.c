/* include/collc/collc.h on its own, compiled as C99 and as C++ (tests/capi/CMakeLists.txt). Each
 * pointer below must match its function's declaration exactly, so a changed prototype fails. */
#include "collc/collc.h"

const char* (*const last_error)(void) = collc_last_error;
const char* (*const version)(void) = collc_version;
const char* (*const sync_name)(collc_sync) = collc_sync_name;
collc_status (*const device_count)(int*) = collc_device_count;
collc_status (*const world_create_local)(const int*, int, uint64_t,
                                         collc_world**) = collc_world_create_local;
collc_status (*const world_create_process)(int, int, int, uint64_t, collc_allgather_fn, void*,
                                           collc_world**) = collc_world_create_process;
collc_status (*const world_heap_bytes)(const collc_world*, uint64_t*) = collc_world_heap_bytes;
collc_status (*const world_nranks)(const collc_world*, int*) = collc_world_nranks;
collc_status (*const world_destroy)(collc_world*) = collc_world_destroy;
collc_status (*const compile)(const char*, const collc_compile_options*,
                              collc_compiled**) = collc_compile;
collc_status (*const compile_options_init_sized)(collc_compile_options*,
                                                 size_t) = collc_compile_options_init_sized;
collc_status (*const dispatch_options_init_sized)(collc_dispatch_options*,
                                                  size_t) = collc_dispatch_options_init_sized;
collc_status (*const compile_text)(const char*, const char*, const collc_compile_options*,
                                   collc_compiled**) = collc_compile_text;
int (*const compiled_in_place)(const collc_compiled*) = collc_compiled_in_place;
collc_status (*const instance_create)(collc_world*, const collc_compiled*, uint64_t,
                                      collc_instance**) = collc_instance_create;
collc_status (*const launch)(collc_instance*, int, const void*, void*, void* const*, int, uint64_t,
                             void*) = collc_launch;
collc_status (*const dispatcher_create)(collc_world*, const collc_dispatch_options*,
                                        collc_dispatcher**) = collc_dispatcher_create;
collc_status (*const dispatcher_launch)(collc_dispatcher*, int, const void*, void*, uint64_t,
                                        void*) = collc_dispatcher_launch;

/* The version is a number the preprocessor can compare. */
#if COLLC_VERSION < 100 || COLLC_VERSION_MAJOR < 0
#error "COLLC_VERSION is not a version number"
#endif

/* The options structs are plain C structs a caller fills in, their size first. */
int header_options_are_plain(void) {
  collc_compile_options compile_options;
  collc_dispatch_options dispatch_options;
  if (collc_compile_options_init(&compile_options) != COLLC_OK ||
      collc_dispatch_options_init(&dispatch_options) != COLLC_OK ||
      compile_options.struct_size != sizeof compile_options)
    return -1;
  compile_options.dtype = COLLC_BF16;
  compile_options.sync = COLLC_SYNC_LL;
  dispatch_options.collective = COLLC_ALLREDUCE;
  dispatch_options.max_count = 1;
  return (int)compile_options.dtype + (int)compile_options.sync + (int)dispatch_options.collective +
         (int)dispatch_options.max_count + COLLC_OK;
}
