// tuned_allreduce: an AllReduce dispatched by message size, as an inference engine would use it.
//
//   1. compileDispatchProgram reads the tuning table that `collc tune` wrote
//   ($COLLC_TUNING_TABLE,
//      else ~/.config/collc/tuning.tsv; without one, collc's built-in rule), makes the plan and
//      JIT-compiles every variant it may pick. No GPU needed for this step.
//   2. Dispatcher::create loads them all up front in a LocalWorld (one process, every GPU).
//   3. Calls of several sizes, each running its size's variant: eagerly, then captured in one
//      CUDA graph (the choice is made at capture time; replays do no host work), checked.
//
// Run: build/bin/tuned_allreduce [largest elements per rank]   (default 4 Mi, bf16)
// Without a GPU it stops after step 1 and says why; that is not an error.
#include <algorithm>
#include <collc/collc.hpp>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime_api.h>
#include <iostream>
#include <numeric>
#include <vector>

using namespace collc;

namespace {

// Quarters are exact in bf16, and so are their sums over a few ranks.
float inputValue(int rank, uint64_t i) {
  return static_cast<float>(i % 11) * 0.25f - 1.0f + rank;
}

// A bf16 is the upper half of a float's bits: exact for the values above, so no rounding.
uint16_t floatToBf16(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

float bf16ToFloat(uint16_t half) {
  const uint32_t bits = uint32_t(half) << 16;
  float value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// One call's buffers, per rank.
struct Call {
  uint64_t count = 0;
  std::vector<DeviceBuffer> in, out;
};

uint64_t countWrong(const LocalWorld& world, const Call& call, ExitOnError& check) {
  uint64_t wrong = 0;
  std::vector<uint16_t> host(call.count);
  for (int r = 0; r < world.nranks(); ++r) {
    check(COLLC_CUDA_CHECK(
        cudaMemcpy(host.data(), call.out[r].get(), call.count * 2, cudaMemcpyDeviceToHost)));
    for (uint64_t i = 0; i < call.count; ++i) {
      float expected = 0;
      for (int q = 0; q < world.nranks(); ++q)
        expected += inputValue(q, i);
      wrong += bf16ToFloat(host[i]) != expected;
    }
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
  ExitOnError check("tuned_allreduce: ");
  const uint64_t maxCount = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : uint64_t(4) << 20;
  if (maxCount < 4) {
    std::cerr << "usage: tuned_allreduce [largest elements per rank, >= 4]\n";
    return 2;
  }
  int nranks = 2;
  std::string noRun;
  if (Expected<int> gpus = gpuCount(); !gpus)
    noRun = toString(gpus.takeError());
  else if (*gpus < 2)
    noRun = "only 1 GPU visible; an AllReduce needs 2 or more";
  else
    nranks = std::min(*gpus, COLLC_MAX_RANKS);

  // 1. The plan and its variants. The key the table is searched with (GPU model, topology) is
  //    found from the GPUs; without them, give it (here: what an H200 pair would say).
  DispatchRequest request;
  request.collective = CollectiveKind::AllReduce;
  request.dtype = DType::BF16;
  request.op = ReduceOp::Sum;
  request.nranks = nranks;
  request.maxCount = maxCount;
  if (!noRun.empty()) {
    request.gpu = "NVIDIA_H200";
    request.topology = "nvlink-p2p";
  }
  DispatchProgram program = check(compileDispatchProgram(request));
  std::cout << "plan: " << program.description();
  if (!noRun.empty()) {
    std::cout << noRun
              << "\nnothing to run here; the plan and its compiles are all a "
                 "GPU-less machine can do.\n";
    return 0;
  }

  // 2. The world, with heap for every variant's scratch, and the dispatcher in it.
  std::vector<int> devices(static_cast<size_t>(nranks));
  std::iota(devices.begin(), devices.end(), 0);
  auto world = check(LocalWorld::create(devices, program.heapBytes() + (size_t(1) << 20)));
  auto allreduce = check(Dispatcher::create(*world, std::move(program)));

  // Sizes from a decode step's few KiB up to the largest call.
  std::vector<Call> calls;
  for (uint64_t count : {uint64_t(2048), uint64_t(64) << 10, maxCount / 4, maxCount}) {
    Call call;
    call.count = std::max<uint64_t>(1, count);
    std::vector<uint16_t> host(call.count);
    for (int r = 0; r < nranks; ++r) {
      call.in.push_back(check(DeviceBuffer::allocate(world->device(r), call.count * 2)));
      call.out.push_back(check(DeviceBuffer::allocate(world->device(r), call.count * 2)));
      for (uint64_t i = 0; i < call.count; ++i)
        host[i] = floatToBf16(inputValue(r, i));
      check(COLLC_CUDA_CHECK(
          cudaMemcpy(call.in[r].get(), host.data(), call.count * 2, cudaMemcpyHostToDevice)));
    }
    calls.push_back(std::move(call));
  }
  for (int r = 0; r < nranks; ++r) { // the uploads land before any rank's stream reads them
    check(COLLC_CUDA_CHECK(cudaSetDevice(world->device(r))));
    check(COLLC_CUDA_CHECK(cudaDeviceSynchronize()));
  }
  std::vector<cudaStream_t> streams;
  for (int r = 0; r < nranks; ++r)
    streams.push_back(world->stream(r));

  // 3a. Eager calls: each size runs the variant its range names.
  for (const Call& call : calls) {
    for (int r = 0; r < nranks; ++r)
      check(allreduce->launch(r, call.in[r].get(), call.out[r].get(), call.count, streams[r]));
    check(allreduce->synchronize(streams));
    const DispatchVariant& ran = allreduce->program().variants()[allreduce->variantFor(call.count)];
    uint64_t wrong = countWrong(*world, call, check);
    std::cout << call.count * 2 << " bytes: " << ran.variant.text() << ": "
              << (wrong ? "WRONG" : "correct") << "\n";
    if (wrong)
      return 1;
  }

  // 3b. The same calls captured in one graph per rank, replayed twice.
  std::vector<cudaGraphExec_t> graphs(static_cast<size_t>(nranks), nullptr);
  for (int r = 0; r < nranks; ++r) {
    check(COLLC_CUDA_CHECK(cudaStreamBeginCapture(streams[r], cudaStreamCaptureModeThreadLocal)));
    for (const Call& call : calls)
      check(allreduce->launch(r, call.in[r].get(), call.out[r].get(), call.count, streams[r]));
    cudaGraph_t graph = nullptr;
    check(COLLC_CUDA_CHECK(cudaStreamEndCapture(streams[r], &graph)));
    check(COLLC_CUDA_CHECK(cudaGraphInstantiate(&graphs[r], graph, 0)));
    check(COLLC_CUDA_CHECK(cudaGraphDestroy(graph)));
  }
  for (int replay = 0; replay < 2; ++replay) {
    for (int r = 0; r < nranks; ++r)
      check(COLLC_CUDA_CHECK(cudaGraphLaunch(graphs[r], streams[r])));
    check(allreduce->synchronize(streams));
  }
  uint64_t wrong = 0;
  for (const Call& call : calls)
    wrong += countWrong(*world, call, check);
  for (cudaGraphExec_t graph : graphs)
    check(COLLC_CUDA_CHECK(cudaGraphExecDestroy(graph)));
  std::cout << "graph of " << calls.size()
            << " dispatched calls, replayed twice: " << (wrong ? "WRONG" : "correct") << "\n";
  return wrong ? 1 : 0;
}
