/* collc's C API: what a host program written in C, or an engine that wants a stable ABI, needs to
 * compile a collective spec, make it ready on its GPUs and launch it on a stream.
 *
 * Plain C99, usable from C++ (extern "C"). It needs no other header: streams are passed as
 * void* (a cudaStream_t), and NCCL communicators as void* (an ncclComm_t).
 *
 * Two libraries implement it, as they do the C++ API:
 *   libcollc.so           everything but compiling: devices, worlds, instances, launches,
 *                         dispatchers' launches (no LLVM);
 *   libcollc_compiler.so  collc_compile, collc_compile_text, collc_compile_options_init_sized
 *                         and collc_dispatcher_create (the compiler inside it); it needs
 *                         libcollc.so.
 * A program that only loads ready-made collectives links libcollc.so alone.
 *
 * Versions: the structs a caller allocates (collc_compile_options, collc_dispatch_options) start
 * with struct_size, which their _init function sets to the size this header gives them. Fields are
 * only ever added at the end, so a library reads a struct of an older collc.h (its missing fields
 * take their defaults) and refuses one it does not know, with a message. COLLC_VERSION is this
 * header's version; collc_version() the library's.
 *
 * Errors: every function returns a collc_status; on failure the calling thread's last error
 * (collc_last_error) says what went wrong and what to do. Pointers are checked: a null handle or
 * output pointer is COLLC_INVALID_ARGUMENT, never a crash. The full reference is docs/c-api.md. */
#ifndef COLLC_COLLC_H
#define COLLC_COLLC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ------------------------------------------------------------------------------- */

#define COLLC_VERSION_MAJOR 0
#define COLLC_VERSION_MINOR 1
#define COLLC_VERSION_PATCH 0
#define COLLC_VERSION_STRING "0.1.0"
/* One number that grows with every release: 0.1.0 is 100, 1.2.3 would be 10203. */
#define COLLC_VERSION                                                                              \
  (COLLC_VERSION_MAJOR * 10000 + COLLC_VERSION_MINOR * 100 + COLLC_VERSION_PATCH)

/* ---- Status and errors ------------------------------------------------------------------- */

typedef enum collc_status {
  COLLC_OK = 0,
  COLLC_INVALID_ARGUMENT = 1, /* a null pointer, a value out of range, a count over the maximum,
                                 buffers that overlap where the collective does not allow it */
  COLLC_SPEC_ERROR = 2,       /* the spec is wrong or not found, or does not compile for the
                                 options: the last error holds the diagnostics (file:line:col) */
  COLLC_CUDA_ERROR = 3,       /* the CUDA runtime, the driver or NVRTC failed, no GPU, no peer
                                 access, a heap too small for the instance */
  COLLC_NCCL_ERROR = 4,       /* NCCL could not be loaded or failed (process-per-GPU worlds) */
  COLLC_UNSUPPORTED = 5,      /* valid, but not something this build or machine can do: a
                                 bundle without the GPU's architecture, an options struct of a
                                 newer collc.h than the library's */
  COLLC_INTERNAL = 6          /* a failure of collc itself: please report it */
} collc_status;

/* The message of the last call that failed on this thread ("" if none has). Calls that succeed
 * leave it as it was. The pointer stays valid until the next failing call on this thread. */
const char* collc_last_error(void);

/* A status's name: "COLLC_SPEC_ERROR"; "unknown status" for a value that is none. */
const char* collc_status_name(collc_status status);

/* The library's version, "0.1.0" (COLLC_VERSION_STRING of the collc.h it was built with). Never
 * null. */
const char* collc_version(void);

/* ---- Vocabulary --------------------------------------------------------------------------- */

typedef enum collc_dtype { COLLC_F32 = 0, COLLC_F16 = 1, COLLC_BF16 = 2 } collc_dtype;
/* The element type of one buffer: the variant's (the first three are collc_dtype's values) or
 * one the spec fixes for it (`out: fp8e4m3[n]`: FP8 E4M3, one byte, as torch.float8_e4m3fn;
 * fp4e2m1: E2M1, two a byte, element 2i in the low nibble of byte i, as
 * torch.float4_e2m1fn_x2, so n elements take ceil(n / 2) bytes). */
typedef enum collc_element_type {
  COLLC_ELEMENT_F32 = 0,
  COLLC_ELEMENT_F16 = 1,
  COLLC_ELEMENT_BF16 = 2,
  COLLC_ELEMENT_FP8E4M3 = 3,
  COLLC_ELEMENT_FP4E2M1 = 4
} collc_element_type;
typedef enum collc_reduce_op { COLLC_SUM = 0, COLLC_MAX = 1, COLLC_MIN = 2 } collc_reduce_op;
typedef enum collc_sync {
  COLLC_SYNC_DEFAULT = 0, /* the spec's own `sync` clause */
  COLLC_SYNC_BARRIER = 1,
  COLLC_SYNC_SENTINEL = 2,
  COLLC_SYNC_LL = 3,
  COLLC_SYNC_LL128 = 4, /* refused by the compiler while it is not trusted (dsl/README.md) */
  COLLC_SYNC_LL128_ATOMIC = 5
} collc_sync;
/* A strategy's spelling in specs and on the command line: "ll128_atomic"; null for
 * COLLC_SYNC_DEFAULT and for a value that names none. The registered values are 1, 2, ... up to
 * the first that gives null. */
const char* collc_sync_name(collc_sync sync);
typedef enum collc_collective {
  COLLC_ALLREDUCE = 0,
  COLLC_ALLGATHER = 1,
  COLLC_REDUCESCATTER = 2,
  COLLC_BROADCAST = 3,
  COLLC_REDUCE = 4,
  COLLC_ALLTOALL = 5
} collc_collective;

/* ---- Handles (opaque; each has its destroy function) --------------------------------------- */

typedef struct collc_world collc_world;           /* symmetric memory over the ranks' GPUs */
typedef struct collc_compiled collc_compiled;     /* one compiled variant of a spec (no GPU) */
typedef struct collc_instance collc_instance;     /* a compiled collective ready in a world */
typedef struct collc_dispatcher collc_dispatcher; /* dispatch by message size */

/* ---- Devices ------------------------------------------------------------------------------- */

/* The number of visible GPUs in *count. With none, *count is 0 and the status COLLC_CUDA_ERROR,
 * with a last error that starts with "no GPU: " and says why. */
collc_status collc_device_count(int* count);

/* ---- Worlds -------------------------------------------------------------------------------- */

/* One process drives ranks 0..ndevices-1, rank r on GPU devices[r]: peer access between every
 * pair, a zeroed symmetric heap of heap_bytes on each (0: 256 MiB), one stream per rank. */
collc_status collc_world_create_local(const int* devices, int ndevices, uint64_t heap_bytes,
                                      collc_world** out);

/* `nranks` ranks as co-resident kernels on one GPU, each rank's heap a region of its memory (0:
 * 256 MiB each): for testing collectives at many ranks on a machine with one GPU. Correctness
 * only: the ranks share the GPU's multiprocessors and memory, so timings mean nothing. Each
 * rank's stream needs a hardware work queue of its own: COLLC_UNSUPPORTED where the program's
 * CUDA_DEVICE_MAX_CONNECTIONS gives fewer than nranks (unset, CUDA's 8 are enough), and for more
 * than 32 ranks (CUDA gives at most 32 queues). */
collc_status collc_world_create_shared_gpu(int device, int nranks, uint64_t heap_bytes,
                                           collc_world** out);

/* All-gathers `bytes` bytes from every rank: recv receives nranks * bytes, rank r's at
 * r * bytes. Returns 0 on success, anything else on failure. Called collectively: every rank
 * calls it the same number of times with the same `bytes`. */
typedef int (*collc_allgather_fn)(const void* send, void* recv, size_t bytes, void* user);

/* One process per GPU: this process is `rank` of `nranks` on GPU `device`. The processes find each
 * other through the caller's all-gather (an engine's own process group: no rendezvous server):
 * it is called once, to hand rank 0's NCCL unique id to every rank; NCCL (loaded at run time)
 * then carries the bootstrap and every later host-side exchange. Collective: every rank calls it
 * at about the same time. heap_bytes: as collc_world_create_local, the same on every rank. */
collc_status collc_world_create_process(int rank, int nranks, int device, uint64_t heap_bytes,
                                        collc_allgather_fn allgather, void* user,
                                        collc_world** out);

/* Options of collc_world_create_process_flags, or'd together. */
/* Ranks may share a GPU: for correctness only (the processes' contexts are time-sliced, so each
 * flag exchange between them waits for a time slice, about 2.3 ms on an H200). Such a world
 * needs no NCCL: its host exchanges go through shared memory, so every rank must be on one host;
 * peers' heaps on the same GPU are reached through CUDA IPC. Without it two ranks on one GPU are
 * refused. */
#define COLLC_WORLD_SHARE_GPU 1u
/* Checking mode: every collc_launch first compares its collective (kernel, type, operator,
 * root) and count with every rank's through a host exchange; where they differ the launch fails
 * on every rank (COLLC_INVALID_ARGUMENT) with each rank's call named, and nothing runs. A host
 * exchange per launch; launches captured into a graph are checked when captured. */
#define COLLC_WORLD_CHECK_CALLS 2u

/* As collc_world_create_process, with `flags` (COLLC_WORLD_SHARE_GPU | COLLC_WORLD_CHECK_CALLS,
 * or 0): every rank must pass the same flags (a rank that does not is named in the error). With
 * COLLC_WORLD_SHARE_GPU the all-gather is called once too, to hand over the world's id. */
collc_status collc_world_create_process_flags(int rank, int nranks, int device, uint64_t heap_bytes,
                                              unsigned flags, collc_allgather_fn allgather,
                                              void* user, collc_world** out);

/* Bytes of an NCCL unique id (NCCL_UNIQUE_ID_BYTES). */
#define COLLC_NCCL_UNIQUE_ID_BYTES 128

/* A fresh NCCL unique id into id[0..COLLC_NCCL_UNIQUE_ID_BYTES), for the caller to hand to every
 * rank (ncclGetUniqueId). bytes must be at least COLLC_NCCL_UNIQUE_ID_BYTES. */
collc_status collc_nccl_unique_id(void* id, size_t bytes);

/* As collc_world_create_process, with an NCCL unique id every rank already has (bytes ==
 * COLLC_NCCL_UNIQUE_ID_BYTES). The world's communicator is its own, destroyed with it. */
collc_status collc_world_create_process_nccl_id(int rank, int nranks, int device, const void* id,
                                                size_t bytes, uint64_t heap_bytes,
                                                collc_world** out);

/* A world on the caller's NCCL communicator (an ncclComm_t): rank, size and GPU come from it.
 * The communicator stays the caller's (not destroyed with the world); the world uses it for its
 * own exchanges, never at the same time as another thread of the caller does. Collective. */
collc_status collc_world_adopt_nccl_comm(void* comm, uint64_t heap_bytes, collc_world** out);

collc_status collc_world_nranks(const collc_world* world, int* nranks);
collc_status collc_world_heap_bytes(const collc_world* world, uint64_t* bytes);
/* The ranks this process drives: all of them in a local world, one in a process world. ranks
 * may be null to ask only for the number (*nlocal); else it holds `capacity` ints. */
collc_status collc_world_local_ranks(const collc_world* world, int* ranks, int capacity,
                                     int* nlocal);
/* The GPU and the stream (a cudaStream_t) of a rank this process drives. */
collc_status collc_world_device(const collc_world* world, int rank, int* device);
collc_status collc_world_stream(const collc_world* world, int rank, void** stream);
/* Frees the heaps and streams (a process world first waits, bounded, for its peers). Refused
 * (COLLC_INVALID_ARGUMENT, nothing freed) while an instance or dispatcher still uses the world.
 * Nothing may still run on the world's memory. Null: nothing to do, COLLC_OK. */
collc_status collc_world_destroy(collc_world* world);

/* ---- Compiling (libcollc_compiler.so) ------------------------------------------------------ */

typedef struct collc_compile_options {
  size_t struct_size; /* sizeof(collc_compile_options) of the caller's collc.h: set by _init */
  collc_dtype dtype;  /* default COLLC_F32 */
  collc_reduce_op op; /* default COLLC_SUM */
  int nranks;         /* default 2 */
  int root;           /* the root rank of a broadcast or reduce; default 0 */
  collc_sync sync;    /* default COLLC_SYNC_DEFAULT: the spec's */
  int64_t row_length; /* a spec with `rows NAME`: the row length; 0: the spec's default */
  int blocks;         /* thread blocks per rank; 0: the spec's `launch` default */
  int threads;        /* threads per block; 0: the spec's `launch` default */
  int vector_bytes; /* bytes per memory operation: 2, 4, 8 or 16; 0: the spec's `launch` default */
  int unroll;       /* vectors per thread per loop iteration; 0: the spec's `launch` default */
  int whole_stores; /* 1: every whole vector stored with one instruction of its width; 0: not;
                       -1 (default): the spec's `launch` choice, else 0 */
  int64_t work_limit; /* steps of work the proofs may take; 0 (default): collc's 50000000. A larger
                         one proves what the default refuses as too costly, in the time it takes */
} collc_compile_options;

/* Fills *options with the defaults above, struct_size included. Call it first, then change what
 * you need. It passes the library the size of this header's struct, through: */
collc_status collc_compile_options_init_sized(collc_compile_options* options, size_t struct_size);
static inline collc_status collc_compile_options_init(collc_compile_options* options) {
  return collc_compile_options_init_sized(options, sizeof(collc_compile_options));
}

/* Parses, checks, proves and lowers a spec for one variant: spec_name_or_path is a stdlib name
 * ("allreduce_oneshot") or the path of a .coll file. options may be null for the defaults. On
 * COLLC_SPEC_ERROR the last error holds the diagnostics (file:line:col: error: ...). No GPU
 * needed. */
collc_status collc_compile(const char* spec_name_or_path, const collc_compile_options* options,
                           collc_compiled** out);
/* The same for spec text held in memory; `name` is what diagnostics call it ("my.coll"; null:
 * "<text>"). */
collc_status collc_compile_text(const char* name, const char* text,
                                const collc_compile_options* options, collc_compiled** out);

/* The rank counts a spec declares (`ranks MIN..MAX`), from its front end alone: no proof runs, no
 * GPU is needed. spec_name_or_path as for collc_compile. COLLC_SPEC_ERROR with the diagnostics
 * where the spec does not parse or check. */
collc_status collc_spec_ranks(const char* spec_name_or_path, int* min_ranks, int* max_ranks);

/* Loads a bundle (`collc emit SPEC --emit=bundle --arch=sm_90,... -o FILE`: one compiled variant
 * and its cubins) into a compiled collective, in libcollc.so: no compiler and no NVRTC. Instances
 * made from it take the cubin of their GPU's architecture (COLLC_UNSUPPORTED, naming the
 * architectures the bundle has, where it has none). A missing, damaged or foreign file is
 * COLLC_INVALID_ARGUMENT with what is wrong. */
collc_status collc_compiled_load_bundle(const char* path, collc_compiled** out);

/* ---- A compiled collective ------------------------------------------------------------------ */

/* 1 if a launch may pass the same memory as input and output (in == out): the verifier proved
 * the in-place call; else 0. Any other overlap of the buffers is refused at launch. */
int collc_compiled_in_place(const collc_compiled* compiled);
/* Its kind, element type, rank count, and the number of aux buffers a launch passes (a fused
 * epilogue's residual, weight, ...; 0 for plain collectives). */
collc_status collc_compiled_info(const collc_compiled* compiled, collc_collective* kind,
                                 collc_dtype* dtype, int* nranks, int* naux);
/* The element type of the output (buffer -1) or of aux buffer `buffer` (0 .. naux - 1): the
 * variant's dtype, or the one the spec fixes (a quantized output, its scale). The input is
 * always the variant's dtype. */
collc_status collc_compiled_buffer_type(const collc_compiled* compiled, int buffer,
                                        collc_element_type* type);
/* Elements of each rank's input and output buffer for a call of `count` (count, or
 * count * nranks, by kind: an all-gather's output holds every rank's count). */
collc_status collc_compiled_buffer_counts(const collc_compiled* compiled, uint64_t count,
                                          uint64_t* input_count, uint64_t* output_count);
/* Elements of aux buffer `buffer` (0 .. naux - 1) for a call of `count`: its declared size (a
 * residual's count, a weight's row length, a per-token scale's count / row length), so that the
 * caller allocates each aux buffer (of collc_compiled_buffer_type's type) large enough. */
collc_status collc_compiled_aux_count(const collc_compiled* compiled, int buffer, uint64_t count,
                                      uint64_t* elements);
/* Symmetric heap per rank that one instance made for up to max_count elements takes: to size a
 * world before creating it. */
collc_status collc_compiled_heap_bytes(const collc_compiled* compiled, uint64_t max_count,
                                       uint64_t* bytes);
/* The kernel's name and its generated CUDA source; owned by the handle. Null for a null handle. */
const char* collc_compiled_kernel_name(const collc_compiled* compiled);
const char* collc_compiled_cuda_source(const collc_compiled* compiled);
collc_status collc_compiled_destroy(collc_compiled* compiled);

/* ---- Instances ----------------------------------------------------------------------------- */

/* The NVRTC library that instances and dispatchers created from now on JIT-compile with: a file
 * path ("/opt/x/libnvrtc.so.13") or a name the loader searches for. NULL or "": back to
 * $COLLC_NVRTC_LIBRARY, else the search of docs/c-api.md. Process-wide, as the loaded NVRTC is.
 * It loads nothing: a library that does not load fails the compiles that need it, naming it,
 * with no other taken in its place. Instances of a bundle need no NVRTC. */
collc_status collc_set_nvrtc_library(const char* path);

/* JIT-compiles the collective with NVRTC for the GPU of the world's first local rank (cached on
 * disk), loads it on every GPU this process drives and takes its scratch from the world's heap
 * for calls of up to max_count elements. `compiled` may be destroyed afterwards (the instance
 * keeps a copy). In a process world this is collective: every rank creates the same instances
 * in the same order. */
collc_status collc_instance_create(collc_world* world, const collc_compiled* compiled,
                                   uint64_t max_count, collc_instance** out);

/* Enqueues rank's part of one call on `stream` (a cudaStream_t of that rank's GPU; null: the
 * world's stream of that rank): count elements (1..max_count) from `in` to `out`, device memory
 * sized by collc_compiled_buffer_counts. aux holds naux device pointers, naux as
 * collc_compiled_info says (null and 0 for plain collectives).
 * In place: in == out is allowed exactly where collc_compiled_in_place says 1; any other overlap
 * of in, out and aux is refused with COLLC_INVALID_ARGUMENT (the kernel was proved for distinct
 * buffers only).
 * Every rank must make the same calls in the same order; the ranks wait for each other on the
 * GPUs, not on the host, so one thread may launch every rank in turn. No host synchronization,
 * no allocation: safe inside CUDA graph capture, and replays of the graph are correct. Launches
 * for different ranks may come from different threads at once.
 * One stream per rank: an eager call on another stream than the rank's last eager call of this
 * instance first waits for that call (an event recorded after each eager call), so two calls
 * never overlap. A call made while its stream is captured is not ordered so (the wait would end
 * the capture): order graph replays, and eager calls beside them, yourself. */
collc_status collc_launch(collc_instance* instance, int rank, const void* in, void* out,
                          void* const* aux, int naux, uint64_t count, void* stream);

/* Waits until the given streams (streams[i] for the world's i-th local rank; null: the world's
 * own streams) are idle, bounded by the watchdog's timeout, then checks the instance's
 * watchdogs: a rank that waited too long for a peer becomes an error naming it, and so does a
 * call an `ll` or `ll128_atomic` instance refused (it runs 2^32 - 1 calls; docs/api.md). */
collc_status collc_instance_synchronize(collc_instance* instance, void* const* streams,
                                        int nstreams);
collc_status collc_instance_max_count(const collc_instance* instance, uint64_t* max_count);
/* Nothing launched from it may still run or be replayed from a graph. Null: COLLC_OK. */
collc_status collc_instance_destroy(collc_instance* instance);

/* ---- Dispatch by size ---------------------------------------------------------------------- */

typedef struct collc_dispatch_options {
  size_t struct_size;          /* sizeof(collc_dispatch_options) of the caller's collc.h: set by
                                  _init */
  collc_collective collective; /* default COLLC_ALLREDUCE */
  const char* spec;            /* a stdlib name or path: choose among its variants only; null: every
                                  stdlib spec of `collective` */
  collc_dtype dtype;           /* default COLLC_BF16 */
  collc_reduce_op op;          /* default COLLC_SUM */
  uint64_t max_count;          /* the largest call, elements per rank; must be set (> 0) */
  const char* table;           /* a tuning table (`collc tune`); null: the built-in rule; "": the
                                  default path ($COLLC_TUNING_TABLE, ...; docs/tuning.md) */
} collc_dispatch_options;

/* Fills *options with the defaults above, struct_size included (as collc_compile_options_init). */
collc_status collc_dispatch_options_init_sized(collc_dispatch_options* options, size_t struct_size);
static inline collc_status collc_dispatch_options_init(collc_dispatch_options* options) {
  return collc_dispatch_options_init_sized(options, sizeof(collc_dispatch_options));
}

/* Makes the plan, compiles each variant it may pick for the world's GPU and creates their
 * instances in the world (libcollc_compiler.so). Collective in a process world. */
collc_status collc_dispatcher_create(collc_world* world, const collc_dispatch_options* options,
                                     collc_dispatcher** out);
/* As collc_launch, with no aux buffers, running the variant the plan names for count; in place
 * where that variant allows it (refused otherwise, as by collc_launch). */
collc_status collc_dispatcher_launch(collc_dispatcher* dispatcher, int rank, const void* in,
                                     void* out, uint64_t count, void* stream);
/* Where the plan came from and which variant runs for which sizes (owned by the handle). */
const char* collc_dispatcher_description(const collc_dispatcher* dispatcher);
collc_status collc_dispatcher_destroy(collc_dispatcher* dispatcher);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* COLLC_COLLC_H */
