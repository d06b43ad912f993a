// tuned_app: an AllReduce dispatched by message size, from the tuning table `collc tune` writes.
//
//   tuned_app [TABLE]   TABLE: a tuning table; default $COLLC_TUNING_TABLE, else
//                       ~/.config/collc/tuning.tsv, and where there is none, collc's built-in rule
//
// It compiles every variant the plan may pick (no GPU needed) and prints the plan; where 2 GPUs
// are visible it then runs calls of three sizes through one Dispatcher, each on the variant the
// plan names for it, and checks the sums.
#include <collc/collc.hpp>
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime_api.h>
#include <iostream>
#include <memory>
#include <vector>

int main(int argc, char** argv) {
  // The GPU machine collc is tested on requires NVLink multicast off, set before anything loads
  // NCCL (see the README); leave these three lines out where your machine has no such rule.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
  setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
  collc::ExitOnError check("tuned_app: ");
  const int nranks = 2;
  const uint64_t counts[] = {256, 64 * 1024, 1024 * 1024}; // 1 KiB, 256 KiB, 4 MiB of f32

  collc::DispatchRequest request;
  request.collective = collc::CollectiveKind::AllReduce;
  request.dtype = collc::DType::F32;
  request.op = collc::ReduceOp::Sum;
  request.nranks = nranks;
  request.maxCount = counts[2];
  if (argc > 1)
    request.table = argv[1];
  collc::DispatchProgram program = check(collc::compileDispatchProgram(request));
  std::cout << program.description() << "\n" << program.variants().size() << " variants compiled\n";

  collc::Expected<int> gpus = collc::gpuCount();
  if (!gpus) {
    std::cout << collc::toString(gpus.takeError()) << "; compiled, nothing to run\n";
    return 0;
  }
  if (*gpus < nranks) {
    std::cout << "no GPU pair: " << *gpus << " GPU visible; compiled, nothing to run\n";
    return 0;
  }

  // The heap is sized for every variant's scratch at the largest call.
  std::unique_ptr<collc::LocalWorld> world =
      check(collc::LocalWorld::create({0, 1}, program.heapBytes()));
  std::unique_ptr<collc::Dispatcher> dispatcher =
      check(collc::Dispatcher::create(*world, std::move(program)));

  std::vector<collc::DeviceBuffer> in, out;
  std::vector<cudaStream_t> streams;
  for (int r = 0; r < nranks; ++r) {
    in.push_back(check(collc::DeviceBuffer::allocate(world->device(r), counts[2] * 4)));
    out.push_back(check(collc::DeviceBuffer::allocate(world->device(r), counts[2] * 4)));
    streams.push_back(world->stream(r));
  }
  std::vector<float> host(counts[2]);
  int failures = 0;
  for (uint64_t count : counts) {
    // Rank r contributes r + 1 + i % 5 at element i: small integers, an exact f32 sum.
    for (int r = 0; r < nranks; ++r) {
      for (uint64_t i = 0; i < count; ++i)
        host[i] = float(r + 1 + i % 5);
      check(COLLC_CUDA_CHECK(cudaSetDevice(world->device(r))));
      check(COLLC_CUDA_CHECK(
          cudaMemcpy(in[r].get(), host.data(), count * 4, cudaMemcpyHostToDevice)));
      check(COLLC_CUDA_CHECK(cudaDeviceSynchronize()));
    }
    for (int r = 0; r < nranks; ++r)
      check(dispatcher->launch(r, in[r].get(), out[r].get(), count, streams[r]));
    check(dispatcher->synchronize(streams));
    uint64_t wrong = 0;
    for (int r = 0; r < nranks; ++r) {
      check(COLLC_CUDA_CHECK(cudaSetDevice(world->device(r))));
      check(COLLC_CUDA_CHECK(
          cudaMemcpy(host.data(), out[r].get(), count * 4, cudaMemcpyDeviceToHost)));
      for (uint64_t i = 0; i < count; ++i)
        wrong += host[i] != float(2 * (i % 5) + 3);
    }
    const auto& variant = dispatcher->program().variants()[dispatcher->variantFor(count)];
    std::cout << count * 4 << " bytes: " << variant.variant.text() << ": "
              << (wrong ? "WRONG" : "correct") << "\n";
    failures += wrong != 0;
  }
  return failures ? 1 : 0;
}
