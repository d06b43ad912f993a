/* c_allreduce: collc from C (include/collc/collc.h), start to finish.
 *
 *   1. compile the standard one-shot AllReduce spec for 2 ranks, f32, sum (no GPU needed);
 *   2. make a world over GPUs 0 and 1 and an instance of the collective in it (NVRTC JIT);
 *   3. run one AllReduce on each rank's stream, then one in place (in == out), and check both;
 *   4. capture one call per rank into a CUDA graph, replay it, and check again.
 *
 * Run: build/bin/c_allreduce [elements]   (default 1 Mi elements per rank)
 * Without 2 GPUs it stops after step 1 and says why; that is not an error (exit status 0). */
#include "collc/collc.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define NRANKS 2

/* Stops the program with collc's message when a call fails. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    collc_status status_ = (call);                                                                 \
    if (status_ != COLLC_OK) {                                                                     \
      fprintf(stderr, "c_allreduce: %s failed (%s):\n%s\n", #call, collc_status_name(status_),     \
              collc_last_error());                                                                 \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    cudaError_t error_ = (call);                                                                   \
    if (error_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "c_allreduce: %s failed: %s\n", #call, cudaGetErrorString(error_));          \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* Rank r's element i: quarters, so that sums over the ranks are exact in f32. */
static float input_value(int rank, uint64_t i) {
  return (float)(i % 13) * 0.25f - 1.5f + (float)rank;
}

/* Copies every rank's output back and counts the elements that differ from the exact sum. */
static uint64_t count_wrong(const collc_world* world, float* const* outputs, uint64_t count,
                            float* host) {
  uint64_t wrong = 0;
  int rank, device;
  for (rank = 0; rank < NRANKS; ++rank) {
    uint64_t i;
    CHECK(collc_world_device(world, rank, &device));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaMemcpy(host, outputs[rank], count * sizeof(float), cudaMemcpyDeviceToHost));
    for (i = 0; i < count; ++i) {
      float expected = input_value(0, i) + input_value(1, i);
      if (host[i] != expected && wrong++ < 3)
        printf("  rank %d out[%llu] = %g, expected %g\n", rank, (unsigned long long)i, host[i],
               expected);
    }
  }
  return wrong;
}

/* Waits for everything on every rank's GPU: the uploads and memsets below run on the legacy
 * stream, which the world's non-blocking streams do not wait for. */
static void synchronize_devices(const collc_world* world) {
  int rank, device;
  for (rank = 0; rank < NRANKS; ++rank) {
    CHECK(collc_world_device(world, rank, &device));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
}

int main(int argc, char** argv) {
  const uint64_t count = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)1 << 20;
  collc_compile_options options;
  collc_compiled* compiled = NULL;
  collc_world* world = NULL;
  collc_instance* allreduce = NULL;
  const int devices[NRANKS] = {0, 1};
  float* inputs[NRANKS];
  float* outputs[NRANKS];
  void* streams[NRANKS];
  cudaGraphExec_t graphs[NRANKS];
  uint64_t heap_bytes = 0, wrong = 0, i;
  float* host;
  int gpus = 0, rank, device;

  if (count == 0) {
    fprintf(stderr, "usage: c_allreduce [elements per rank, > 0]\n");
    return 2;
  }
  printf("collc %s\n", collc_version());

  /* 1. The spec by stdlib name (a path to a .coll file works too). A wrong spec would fail with
   *    COLLC_SPEC_ERROR and its diagnostics (file:line:col: error: ...) in collc_last_error(). */
  CHECK(collc_compile_options_init(&options));
  options.dtype = COLLC_F32;
  options.op = COLLC_SUM;
  options.nranks = NRANKS;
  CHECK(collc_compile("allreduce_oneshot", &options, &compiled));
  printf("compiled allreduce_oneshot for %d ranks, f32 sum: kernel %s, in place %s\n", NRANKS,
         collc_compiled_kernel_name(compiled),
         collc_compiled_in_place(compiled) ? "allowed" : "refused");

  if (collc_device_count(&gpus) != COLLC_OK) {
    printf("%s\nnothing to run here; the compile above is all a GPU-less machine can do.\n",
           collc_last_error());
    collc_compiled_destroy(compiled);
    return 0;
  }
  if (gpus < NRANKS) {
    printf("needs 2 GPUs (%d visible); nothing to run.\n", gpus);
    collc_compiled_destroy(compiled);
    return 0;
  }

  /* 2. Rank r on GPU r, with a symmetric heap just large enough for this instance. */
  CHECK(collc_compiled_heap_bytes(compiled, count, &heap_bytes));
  CHECK(collc_world_create_local(devices, NRANKS, heap_bytes, &world));
  CHECK(collc_instance_create(world, compiled, count, &allreduce));

  /* User buffers are ordinary device memory on each rank's GPU; only scratch is symmetric. */
  host = (float*)malloc(count * sizeof(float));
  if (!host) {
    fprintf(stderr, "c_allreduce: out of memory\n");
    return 1;
  }
  for (rank = 0; rank < NRANKS; ++rank) {
    CHECK(collc_world_device(world, rank, &device));
    CHECK(collc_world_stream(world, rank, &streams[rank]));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaMalloc((void**)&inputs[rank], count * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void**)&outputs[rank], count * sizeof(float)));
    for (i = 0; i < count; ++i)
      host[i] = input_value(rank, i);
    CUDA_CHECK(cudaMemcpy(inputs[rank], host, count * sizeof(float), cudaMemcpyHostToDevice));
  }
  synchronize_devices(world);

  /* 3. One call: each rank's part on its own stream, from one thread; the kernels wait for each
   *    other on the GPUs. collc_instance_synchronize is a bounded cudaStreamSynchronize: a rank
   *    that waits too long for a peer becomes an error naming it, not a hang. */
  for (rank = 0; rank < NRANKS; ++rank)
    CHECK(
        collc_launch(allreduce, rank, inputs[rank], outputs[rank], NULL, 0, count, streams[rank]));
  CHECK(collc_instance_synchronize(allreduce, NULL, 0));
  wrong = count_wrong(world, outputs, count, host);
  printf("eager call: %s on both ranks (%llu elements)\n", wrong ? "WRONG" : "correct",
         (unsigned long long)count);

  /* In place, where the verifier proved it: the output buffer is also the input. */
  if (collc_compiled_in_place(compiled)) {
    for (rank = 0; rank < NRANKS; ++rank) {
      CHECK(collc_world_device(world, rank, &device));
      CUDA_CHECK(cudaSetDevice(device));
      CUDA_CHECK(
          cudaMemcpy(outputs[rank], inputs[rank], count * sizeof(float), cudaMemcpyDeviceToDevice));
    }
    synchronize_devices(world);
    for (rank = 0; rank < NRANKS; ++rank)
      CHECK(collc_launch(allreduce, rank, outputs[rank], outputs[rank], NULL, 0, count,
                         streams[rank]));
    CHECK(collc_instance_synchronize(allreduce, NULL, 0));
    wrong += count_wrong(world, outputs, count, host);
    printf("in-place call: %s\n", wrong ? "WRONG" : "correct");
  }

  /* 4. One call per rank captured into a CUDA graph: launches do no host-side bookkeeping, so
   *    the graph replays correctly any number of times. */
  for (rank = 0; rank < NRANKS; ++rank) {
    cudaGraph_t graph = NULL;
    CHECK(collc_world_device(world, rank, &device));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaMemset(outputs[rank], 0xFF, count * sizeof(float))); /* NaN everywhere */
    CUDA_CHECK(
        cudaStreamBeginCapture((cudaStream_t)streams[rank], cudaStreamCaptureModeThreadLocal));
    CHECK(
        collc_launch(allreduce, rank, inputs[rank], outputs[rank], NULL, 0, count, streams[rank]));
    CUDA_CHECK(cudaStreamEndCapture((cudaStream_t)streams[rank], &graph));
    CUDA_CHECK(cudaGraphInstantiate(&graphs[rank], graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  synchronize_devices(world);
  for (rank = 0; rank < NRANKS; ++rank) {
    CHECK(collc_world_device(world, rank, &device));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaGraphLaunch(graphs[rank], (cudaStream_t)streams[rank]));
  }
  CHECK(collc_instance_synchronize(allreduce, NULL, 0));
  wrong += count_wrong(world, outputs, count, host);
  printf("graph replay: %s\n", wrong ? "WRONG" : "correct");

  for (rank = 0; rank < NRANKS; ++rank) {
    CHECK(collc_world_device(world, rank, &device));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaGraphExecDestroy(graphs[rank]));
    CUDA_CHECK(cudaFree(inputs[rank]));
    CUDA_CHECK(cudaFree(outputs[rank]));
  }
  free(host);
  /* Instances first: a world refuses to go while an instance still uses it. */
  CHECK(collc_instance_destroy(allreduce));
  CHECK(collc_world_destroy(world));
  CHECK(collc_compiled_destroy(compiled));
  return wrong ? 1 : 0;
}
