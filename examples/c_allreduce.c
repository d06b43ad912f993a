/* c_allreduce: collc from C (include/collc/collc.h), start to finish.
 *
 *   1. compile the standard one-shot AllReduce spec, f32, sum (no GPU needed);
 *   2. make a world and an instance of the collective in it (NVRTC JIT);
 *   3. run one AllReduce on each rank's stream, then one in place (in == out), and check both;
 *   4. capture one call per rank into a CUDA graph, replay it, and check again.
 *
 * Run: build/bin/c_allreduce [elements]   (default 1 Mi elements per rank)
 *   One process drives GPUs 0 and 1 (collc_world_create_local). Without 2 GPUs it stops after
 *   step 1 and says why; that is not an error (exit status 0).
 * Or:  build/bin/c_allreduce --procs N [--share-gpu] [elements]
 *   N processes, one rank each, as an engine runs (collc_world_create_process_flags). They find
 *   each other through an all-gather this program provides (shared memory between the processes
 *   it forks); an engine passes its own process group's. Rank r runs on GPU r, or with
 *   --share-gpu every rank on GPU 0: for correctness only, the processes' contexts are
 *   time-sliced, so each exchange between them waits for a time slice. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "collc/collc.h"

#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 72 /* the most ranks collc runs */
#define CARD_BYTES 1024    /* room for the bytes each all-gather of collc's moves */
#define WAIT_SECONDS 120.0 /* a rank that does not come is an error, never a hang */

/* Stops the program with collc's message when a call fails. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    collc_status status_ = (call);                                                                 \
    if (status_ != COLLC_OK) {                                                                     \
      fprintf(stderr, "%sc_allreduce: %s failed (%s):\n%s\n", prefix, #call,                       \
              collc_status_name(status_), collc_last_error());                                     \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    cudaError_t error_ = (call);                                                                   \
    if (error_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "%sc_allreduce: %s failed: %s\n", prefix, #call,                             \
              cudaGetErrorString(error_));                                                         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static char prefix[32] = ""; /* "[rank 1] " in a process of --procs */

/* Rank r's element i: quarters, so that sums over the ranks are exact in f32. */
static float input_value(int rank, uint64_t i) {
  return (float)(i % 13) * 0.25f - 1.5f + (float)rank;
}

/* ---- The all-gather of the --procs mode: shared memory between the forked processes -------- */

struct exchange {
  volatile int arrived;    /* ranks in the current barrier */
  volatile int generation; /* barriers completed */
  int nranks;
  char data[MAX_PROCS][CARD_BYTES];
};

struct gather_user {
  struct exchange* shared;
  int rank;
};

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Every rank waits here until all have come; 0, or 1 after WAIT_SECONDS. */
static int barrier(struct exchange* ex) {
  const struct timespec pause = {0, 100000};
  const double deadline = seconds_now() + WAIT_SECONDS;
  const int generation = ex->generation;
  __sync_synchronize();
  if (__sync_add_and_fetch(&ex->arrived, 1) == ex->nranks) {
    ex->arrived = 0;
    __sync_synchronize();
    __sync_fetch_and_add(&ex->generation, 1);
    return 0;
  }
  while (ex->generation == generation) {
    if (seconds_now() > deadline)
      return 1;
    nanosleep(&pause, NULL);
  }
  __sync_synchronize();
  return 0;
}

/* collc_allgather_fn: every rank's `bytes` into recv, rank r's at r * bytes. */
static int shared_memory_allgather(const void* send, void* recv, size_t bytes, void* user) {
  struct gather_user* me = (struct gather_user*)user;
  struct exchange* ex = me->shared;
  int r;
  if (bytes > CARD_BYTES)
    return 2;
  memcpy(ex->data[me->rank], send, bytes);
  if (barrier(ex))
    return 1;
  for (r = 0; r < ex->nranks; ++r)
    memcpy((char*)recv + (size_t)r * bytes, ex->data[r], bytes);
  return barrier(ex); /* nobody writes the next round before all have read this one */
}

/* ---- Steps 3 and 4, for the ranks this process drives (both, or its one) --------------------- */

/* Copies every local rank's output back and counts the elements that differ from the exact sum
 * over all `nranks` ranks. */
static uint64_t count_wrong(const collc_world* world, const int* ranks, int nlocal, int nranks,
                            float* const* outputs, uint64_t count, float* host) {
  uint64_t wrong = 0;
  int k, device;
  for (k = 0; k < nlocal; ++k) {
    uint64_t i;
    CHECK(collc_world_device(world, ranks[k], &device));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaMemcpy(host, outputs[k], count * sizeof(float), cudaMemcpyDeviceToHost));
    for (i = 0; i < count; ++i) {
      float expected = 0;
      int r;
      for (r = 0; r < nranks; ++r)
        expected += input_value(r, i);
      if (host[i] != expected && wrong++ < 3)
        printf("%s  rank %d out[%llu] = %g, expected %g\n", prefix, ranks[k], (unsigned long long)i,
               host[i], expected);
    }
  }
  return wrong;
}

/* Waits for everything on every local rank's GPU: the uploads and memsets below run on the
 * legacy stream, which the world's non-blocking streams do not wait for. */
static void synchronize_devices(const collc_world* world, const int* ranks, int nlocal) {
  int k, device;
  for (k = 0; k < nlocal; ++k) {
    CHECK(collc_world_device(world, ranks[k], &device));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
}

/* Steps 3 and 4 in `world`; returns the number of wrong elements. */
static uint64_t run_calls(collc_world* world, const collc_compiled* compiled, uint64_t count) {
  collc_instance* allreduce = NULL;
  int ranks[MAX_PROCS], nlocal = 0, nranks = 0, k, device;
  float* inputs[MAX_PROCS];
  float* outputs[MAX_PROCS];
  void* streams[MAX_PROCS];
  cudaGraphExec_t graphs[MAX_PROCS];
  uint64_t wrong = 0, i;
  float* host;

  CHECK(collc_world_nranks(world, &nranks));
  CHECK(collc_world_local_ranks(world, ranks, MAX_PROCS, &nlocal));
  CHECK(collc_instance_create(world, compiled, count, &allreduce));

  /* User buffers are ordinary device memory on each rank's GPU; only scratch is symmetric. */
  host = (float*)malloc(count * sizeof(float));
  if (!host) {
    fprintf(stderr, "%sc_allreduce: out of memory\n", prefix);
    exit(1);
  }
  for (k = 0; k < nlocal; ++k) {
    CHECK(collc_world_device(world, ranks[k], &device));
    CHECK(collc_world_stream(world, ranks[k], &streams[k]));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaMalloc((void**)&inputs[k], count * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void**)&outputs[k], count * sizeof(float)));
    for (i = 0; i < count; ++i)
      host[i] = input_value(ranks[k], i);
    CUDA_CHECK(cudaMemcpy(inputs[k], host, count * sizeof(float), cudaMemcpyHostToDevice));
  }
  synchronize_devices(world, ranks, nlocal);

  /* 3. One call: each rank's part on its own stream; one thread may launch every local rank in
   *    turn, because the kernels wait for each other on the GPUs. collc_instance_synchronize is
   *    a bounded cudaStreamSynchronize: a rank that waits too long for a peer becomes an error
   *    naming it, not a hang. */
  for (k = 0; k < nlocal; ++k)
    CHECK(collc_launch(allreduce, ranks[k], inputs[k], outputs[k], NULL, 0, count, streams[k]));
  CHECK(collc_instance_synchronize(allreduce, NULL, 0));
  wrong = count_wrong(world, ranks, nlocal, nranks, outputs, count, host);
  printf("%seager call: %s on %d rank(s) of %d (%llu elements)\n", prefix,
         wrong ? "WRONG" : "correct", nlocal, nranks, (unsigned long long)count);

  /* In place, where the verifier proved it: the output buffer is also the input. */
  if (collc_compiled_in_place(compiled)) {
    for (k = 0; k < nlocal; ++k) {
      CHECK(collc_world_device(world, ranks[k], &device));
      CUDA_CHECK(cudaSetDevice(device));
      CUDA_CHECK(
          cudaMemcpy(outputs[k], inputs[k], count * sizeof(float), cudaMemcpyDeviceToDevice));
    }
    synchronize_devices(world, ranks, nlocal);
    for (k = 0; k < nlocal; ++k)
      CHECK(collc_launch(allreduce, ranks[k], outputs[k], outputs[k], NULL, 0, count, streams[k]));
    CHECK(collc_instance_synchronize(allreduce, NULL, 0));
    wrong += count_wrong(world, ranks, nlocal, nranks, outputs, count, host);
    printf("%sin-place call: %s\n", prefix, wrong ? "WRONG" : "correct");
  }

  /* 4. One call per rank captured into a CUDA graph: launches do no host-side bookkeeping, so
   *    the graph replays correctly any number of times. */
  for (k = 0; k < nlocal; ++k) {
    cudaGraph_t graph = NULL;
    CHECK(collc_world_device(world, ranks[k], &device));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaMemset(outputs[k], 0xFF, count * sizeof(float))); /* NaN everywhere */
    CUDA_CHECK(cudaStreamBeginCapture((cudaStream_t)streams[k], cudaStreamCaptureModeThreadLocal));
    CHECK(collc_launch(allreduce, ranks[k], inputs[k], outputs[k], NULL, 0, count, streams[k]));
    CUDA_CHECK(cudaStreamEndCapture((cudaStream_t)streams[k], &graph));
    CUDA_CHECK(cudaGraphInstantiate(&graphs[k], graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  synchronize_devices(world, ranks, nlocal);
  for (k = 0; k < nlocal; ++k) {
    CHECK(collc_world_device(world, ranks[k], &device));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaGraphLaunch(graphs[k], (cudaStream_t)streams[k]));
  }
  CHECK(collc_instance_synchronize(allreduce, NULL, 0));
  wrong += count_wrong(world, ranks, nlocal, nranks, outputs, count, host);
  printf("%sgraph replay: %s\n", prefix, wrong ? "WRONG" : "correct");

  for (k = 0; k < nlocal; ++k) {
    CHECK(collc_world_device(world, ranks[k], &device));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaGraphExecDestroy(graphs[k]));
    CUDA_CHECK(cudaFree(inputs[k]));
    CUDA_CHECK(cudaFree(outputs[k]));
  }
  free(host);
  /* Instances first: a world refuses to go while an instance still uses it. */
  CHECK(collc_instance_destroy(allreduce));
  return wrong;
}

/* Step 1: the spec by stdlib name (a path to a .coll file works too). A wrong spec would fail with
 * COLLC_SPEC_ERROR and its diagnostics (file:line:col: error: ...) in collc_last_error(). */
static collc_compiled* compile_allreduce(int nranks) {
  collc_compile_options options;
  collc_compiled* compiled = NULL;
  CHECK(collc_compile_options_init(&options));
  options.dtype = COLLC_F32;
  options.op = COLLC_SUM;
  options.nranks = nranks;
  CHECK(collc_compile("allreduce_oneshot", &options, &compiled));
  printf("%scompiled allreduce_oneshot for %d ranks, f32 sum: kernel %s, in place %s\n", prefix,
         nranks, collc_compiled_kernel_name(compiled),
         collc_compiled_in_place(compiled) ? "allowed" : "refused");
  return compiled;
}

/* One rank of the --procs mode, in its own process. */
static int run_rank(struct exchange* shared, int rank, int nranks, int share_gpu, uint64_t count) {
  struct gather_user user;
  collc_compiled* compiled;
  collc_world* world = NULL;
  uint64_t heap_bytes = 0, wrong;
  int gpus = 0;

  sprintf(prefix, "[rank %d] ", rank);
  compiled = compile_allreduce(nranks);
  if (collc_device_count(&gpus) != COLLC_OK) {
    printf("%s%s\n%snothing to run here.\n", prefix, collc_last_error(), prefix);
    return 3; /* the parent tells "no GPU" from a failure */
  }
  if (!share_gpu && gpus < nranks) {
    printf("%sneeds %d GPUs (%d visible), or --share-gpu; nothing to run.\n", prefix, nranks, gpus);
    return 3;
  }
  /* 2. This process is `rank`; the all-gather hands the world's id from rank 0 to the others. */
  user.shared = shared;
  user.rank = rank;
  CHECK(collc_compiled_heap_bytes(compiled, count, &heap_bytes));
  CHECK(collc_world_create_process_flags(rank, nranks, share_gpu ? 0 : rank, heap_bytes,
                                         share_gpu ? COLLC_WORLD_SHARE_GPU : 0u,
                                         shared_memory_allgather, &user, &world));
  wrong = run_calls(world, compiled, count);
  /* Collective: the ranks wait (bounded) for each other, so no peer still uses this heap. */
  CHECK(collc_world_destroy(world));
  CHECK(collc_compiled_destroy(compiled));
  return wrong ? 1 : 0;
}

/* The --procs mode: forks the ranks before anything touches CUDA, and waits for them, bounded. */
static int run_processes(int nranks, int share_gpu, uint64_t count) {
  struct exchange* shared;
  pid_t children[MAX_PROCS];
  int status[MAX_PROCS], r, running = nranks, failed = 0, skipped = 0;
  const double deadline = seconds_now() + 4 * WAIT_SECONDS;
  const struct timespec pause = {0, 10000000};

  shared = (struct exchange*)mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    perror("c_allreduce: mmap");
    return 1;
  }
  memset(shared, 0, sizeof *shared);
  shared->nranks = nranks;
  fflush(stdout);
  for (r = 0; r < nranks; ++r) {
    children[r] = fork();
    if (children[r] < 0) {
      perror("c_allreduce: fork");
      return 1;
    }
    if (children[r] == 0) {
      int code = run_rank(shared, r, nranks, share_gpu, count);
      fflush(stdout);
      _exit(code);
    }
    status[r] = -1;
  }
  while (running > 0) {
    for (r = 0; r < nranks; ++r) {
      int wstatus = 0;
      if (status[r] == -1 && waitpid(children[r], &wstatus, WNOHANG) == children[r]) {
        status[r] = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
        --running;
      }
    }
    if (running > 0 && seconds_now() > deadline) {
      fprintf(stderr, "c_allreduce: the ranks did not finish within %.0f s; stopping them\n",
              4 * WAIT_SECONDS);
      for (r = 0; r < nranks; ++r)
        if (status[r] == -1)
          kill(children[r], SIGKILL);
      return 1;
    }
    nanosleep(&pause, NULL);
  }
  for (r = 0; r < nranks; ++r) {
    if (status[r] == 3)
      ++skipped;
    else if (status[r] != 0) {
      printf("rank %d failed (exit status %d)\n", r, status[r]);
      ++failed;
    }
  }
  if (skipped == nranks)
    return 0; /* no GPU here: the compile is all this machine can do */
  printf("%d processes%s: %s\n", nranks, share_gpu ? " on one GPU" : "",
         failed || skipped ? "FAILED" : "every rank correct");
  return failed || skipped ? 1 : 0;
}

int main(int argc, char** argv) {
  uint64_t count = (uint64_t)1 << 20;
  int procs = 0, share_gpu = 0, i, gpus = 0, nlocal = 2;
  const int devices[2] = {0, 1};
  collc_compiled* compiled;
  collc_world* world = NULL;
  uint64_t heap_bytes = 0, wrong;

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc)
      procs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--share-gpu") == 0)
      share_gpu = 1;
    else
      count = strtoull(argv[i], NULL, 0);
  }
  if (count == 0 || (procs != 0 && (procs < 2 || procs > MAX_PROCS)) || (share_gpu && !procs)) {
    fprintf(stderr,
            "usage: c_allreduce [--procs N (2..%d) [--share-gpu]] [elements per rank, > "
            "0]\n",
            MAX_PROCS);
    return 2;
  }
  printf("collc %s\n", collc_version());
  if (procs)
    return run_processes(procs, share_gpu, count);

  compiled = compile_allreduce(nlocal);
  if (collc_device_count(&gpus) != COLLC_OK) {
    printf("%s\nnothing to run here; the compile above is all a GPU-less machine can do.\n",
           collc_last_error());
    collc_compiled_destroy(compiled);
    return 0;
  }
  if (gpus < nlocal) {
    printf("needs 2 GPUs (%d visible); nothing to run.\n", gpus);
    collc_compiled_destroy(compiled);
    return 0;
  }
  /* 2. Rank r on GPU r, with a symmetric heap just large enough for this instance. */
  CHECK(collc_compiled_heap_bytes(compiled, count, &heap_bytes));
  CHECK(collc_world_create_local(devices, nlocal, heap_bytes, &world));
  wrong = run_calls(world, compiled, count);
  CHECK(collc_world_destroy(world));
  CHECK(collc_compiled_destroy(compiled));
  return wrong ? 1 : 0;
}
