// jit_allreduce: collc from C++, start to finish.
//
//   1. compile the standard one-shot AllReduce spec for this machine's ranks, bf16, sum;
//   2. JIT-compile the generated CUDA to a cubin with NVRTC (cached on disk);
//   3. make a LocalWorld: one process driving every visible GPU, peer access, symmetric heap;
//   4. run one AllReduce eagerly on every rank's stream and check it;
//   5. capture 10 calls per rank into a CUDA graph, replay it, and check again.
//
// Run: build/bin/jit_allreduce [elements]   (default 1 Mi elements per rank)
// Without a GPU it stops after step 2 and says why; that is not an error. It uses the installed
// C++ API alone (<collc/collc.hpp>).
#include <algorithm>
#include <chrono>
#include <collc/collc.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime_api.h>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

using namespace collc;

namespace {

// Rank r's element i. Quarters up to a few dozen are exact in bf16, and so are their sums over up
// to 8 ranks, so the device result must equal the host's exactly.
float inputValue(int rank, uint64_t i) {
  return static_cast<float>(i % 13) * 0.25f - 1.5f + rank;
}

// bf16 is the upper half of an f32. The values here are exact in bf16, so dropping the lower half
// loses nothing.
uint16_t toBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return uint16_t(bits >> 16);
}
float fromBf16(uint16_t half) {
  const uint32_t bits = uint32_t(half) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// A figure with one decimal, as printf's "%.1f" writes it.
std::string oneDecimal(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

float expectedSum(int nranks, uint64_t i) {
  float sum = 0;
  for (int r = 0; r < nranks; ++r)
    sum += inputValue(r, i);
  return sum;
}

/// Copies every rank's output back and counts elements that differ from the host reference.
uint64_t countWrong(LocalWorld& world, const std::vector<DeviceBuffer>& outputs, uint64_t count,
                    ExitOnError& check) {
  uint64_t wrong = 0;
  std::vector<uint16_t> host(count);
  for (int r = 0; r < world.nranks(); ++r) {
    check(COLLC_CUDA_CHECK(cudaSetDevice(world.device(r))));
    check(COLLC_CUDA_CHECK(
        cudaMemcpy(host.data(), outputs[r].get(), count * 2, cudaMemcpyDeviceToHost)));
    for (uint64_t i = 0; i < count; ++i)
      if (fromBf16(host[i]) != expectedSum(world.nranks(), i) && wrong++ < 3)
        std::cout << "  rank " << r << " out[" << i << "] = " << fromBf16(host[i]) << ", expected "
                  << expectedSum(world.nranks(), i) << "\n";
  }
  return wrong;
}

} // namespace

int main(int argc, char** argv) {
  // The GPU machine collc is tested on requires NVLink multicast off, set before anything loads
  // NCCL (see the README); leave these three lines out where your machine has no such rule.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
  setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
  ExitOnError check("jit_allreduce: ");
  const uint64_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : uint64_t(1) << 20;
  if (count == 0) {
    std::cerr << "usage: jit_allreduce [elements per rank, > 0]\n";
    return 2;
  }

  // How many ranks: one per visible GPU. With fewer than 2 we still compile (for 2 ranks, for
  // Hopper) to show that everything up to the GPU works, then stop.
  std::string noRun;
  int nranks = 2;
  if (Expected<int> gpus = gpuCount(); !gpus)
    noRun = toString(gpus.takeError());
  else if (*gpus < 2)
    noRun = "only 1 GPU visible (" + gpuName(0) + "); an AllReduce needs 2 or more";
  else
    nranks = std::min(*gpus, COLLC_MAX_RANKS);

  // 1. The spec, by stdlib name (a path to a .coll file works too), compiled for our choices.
  //    Diagnostics, if any, go to stderr as file:line:col: error: ...
  SpecSource spec = check(loadSpec("allreduce_oneshot"));
  CompileOptions options;
  options.dtype = DType::BF16;
  options.op = ReduceOp::Sum;
  options.nranks = nranks;
  CompiledCollective compiled = check(compileCollective(spec, options, std::cerr));
  std::cout << "compiled " << compiled.specName << " for " << nranks << " ranks, bf16 sum: kernel "
            << compiled.kernelName << ", " << compiled.launch.blocks << " blocks x "
            << compiled.launch.threads << " threads, sync " << name(compiled.sync) << "\n";

  // 2. NVRTC: the generated source to a cubin for the GPU we will run on. The disk cache makes the
  //    second run of this program skip the compile.
  JitOptions jit;
  jit.arch = noRun.empty() ? gpuArch(0) : "sm_90";
  JitResult cubin =
      check(compileCuda(compiled.cudaSource, compiled.kernelName, JitOutput::Cubin, jit));
  std::cout << "JIT: " << cubin.image.size() << "-byte cubin for " << jit.arch << " in "
            << oneDecimal(cubin.milliseconds) << " ms"
            << (cubin.cacheHit ? " (from the cache)" : "") << "\n";
  if (!noRun.empty()) {
    std::cout << noRun
              << "\nnothing to run here; the compile above is all a GPU-less machine "
                 "can do.\n";
    return 0;
  }

  // 3. The world: rank r on GPU r, peer access between all of them, and a symmetric heap from
  //    which the collective takes its scratch buffers and flags.
  std::vector<int> devices(nranks);
  std::iota(devices.begin(), devices.end(), 0);
  std::unique_ptr<LocalWorld> world = check(LocalWorld::create(devices, size_t(256) << 20));
  for (int r = 0; r < nranks; ++r)
    std::cout << "rank " << r << ": GPU " << world->device(r) << " " << gpuName(world->device(r))
              << "\n";
  // Loads the cubin on every GPU and sizes scratch for calls of up to `count` elements.
  std::unique_ptr<CollectiveInstance> allreduce =
      check(CollectiveInstance::create(*world, compiled, cubin.image, count));

  // User buffers are ordinary device memory on each rank's GPU; only scratch is symmetric.
  std::vector<DeviceBuffer> inputs, outputs;
  std::vector<uint16_t> host(count);
  for (int r = 0; r < nranks; ++r) {
    inputs.push_back(check(DeviceBuffer::allocate(world->device(r), count * 2)));
    outputs.push_back(check(DeviceBuffer::allocate(world->device(r), count * 2)));
    for (uint64_t i = 0; i < count; ++i)
      host[i] = toBf16(inputValue(r, i));
    check(COLLC_CUDA_CHECK(cudaSetDevice(world->device(r))));
    check(COLLC_CUDA_CHECK(
        cudaMemcpy(inputs[r].get(), host.data(), count * 2, cudaMemcpyHostToDevice)));
  }
  // cudaMemcpy from pageable memory may return before the data has landed, and the world's
  // streams do not wait for the legacy stream: finish the uploads before any rank launches.
  for (int r = 0; r < nranks; ++r) {
    check(COLLC_CUDA_CHECK(cudaSetDevice(world->device(r))));
    check(COLLC_CUDA_CHECK(cudaDeviceSynchronize()));
  }
  std::vector<cudaStream_t> streams;
  streams.reserve(nranks);
  for (int r = 0; r < nranks; ++r)
    streams.push_back(world->stream(r));

  // 4. One call: each rank's part goes on its own stream. Launching them one after another from
  //    one thread is fine: the kernels wait for each other on the devices, not on the host.
  for (int r = 0; r < nranks; ++r)
    check(allreduce->launch(r, inputs[r].get(), outputs[r].get(), count, streams[r]));
  // Like cudaStreamSynchronize on every stream, but bounded: a rank that waits forever for a peer
  // becomes an error naming the rank, block and step instead of a hung process.
  check(allreduce->synchronize(streams));
  uint64_t wrong = countWrong(*world, outputs, count, check);
  std::cout << "eager call: " << (wrong ? "WRONG" : "correct") << " on all " << nranks << " ranks ("
            << count << " elements)\n";

  // 5. A CUDA graph per rank with 10 calls in a row. The calls' epochs live on the device, so the
  //    graph can be replayed any number of times with no host work in between.
  const int callsPerGraph = 10;
  std::vector<cudaGraphExec_t> graphs(nranks);
  for (int r = 0; r < nranks; ++r) {
    check(COLLC_CUDA_CHECK(cudaSetDevice(world->device(r))));
    check(COLLC_CUDA_CHECK(cudaMemset(outputs[r].get(), 0xFF, count * 2))); // NaN everywhere
    check(COLLC_CUDA_CHECK(cudaStreamBeginCapture(streams[r], cudaStreamCaptureModeThreadLocal)));
    for (int call = 0; call < callsPerGraph; ++call)
      check(allreduce->launch(r, inputs[r].get(), outputs[r].get(), count, streams[r]));
    cudaGraph_t graph = nullptr;
    check(COLLC_CUDA_CHECK(cudaStreamEndCapture(streams[r], &graph)));
    check(COLLC_CUDA_CHECK(cudaGraphInstantiate(&graphs[r], graph, 0)));
    check(COLLC_CUDA_CHECK(cudaGraphDestroy(graph)));
  }
  // The memsets above ran on the legacy stream, which the world's non-blocking streams ignore.
  for (int r = 0; r < nranks; ++r) {
    check(COLLC_CUDA_CHECK(cudaSetDevice(world->device(r))));
    check(COLLC_CUDA_CHECK(cudaDeviceSynchronize()));
  }
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < nranks; ++r) {
    check(COLLC_CUDA_CHECK(cudaSetDevice(world->device(r))));
    check(COLLC_CUDA_CHECK(cudaGraphLaunch(graphs[r], streams[r])));
  }
  check(allreduce->synchronize(streams));
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  wrong = countWrong(*world, outputs, count, check);
  std::cout << "graph of " << callsPerGraph << " calls per rank: " << (wrong ? "WRONG" : "correct")
            << ", " << oneDecimal(us / callsPerGraph)
            << " us per call (first replay, host clock; see `collc run` for real timing)\n";

  for (cudaGraphExec_t graph : graphs)
    check(COLLC_CUDA_CHECK(cudaGraphExecDestroy(graph)));
  return wrong ? 1 : 0;
}
