// allreduce_app: the smallest program that compiles a spec and runs it.
//
//   allreduce_app [SPEC]    SPEC: a stdlib name or a .coll path (default allreduce_oneshot)
//
// It compiles the AllReduce spec for 2 ranks (f32, sum), JIT-compiles it to a cubin
// with NVRTC, and, where 2 GPUs are visible, runs one call on them and checks the sum. Without
// GPUs the compile is all it can do: it says so and exits 0. It uses the installed C++ API alone
// (<collc/collc.hpp>, the compiler's part in <collc/compiler/Compile.h>).
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
  // Any collc error ends the program with its message; a spec error's diagnostics (file:line:col)
  // were printed to stderr already.
  collc::ExitOnError check("allreduce_app: ");
  const int nranks = 2;
  const uint64_t count = 4096;

  collc::SpecSource spec = check(collc::loadSpec(argc > 1 ? argv[1] : "allreduce_oneshot"));
  collc::CompileOptions options;
  options.nranks = nranks;
  options.dtype = collc::DType::F32;
  options.op = collc::ReduceOp::Sum;
  collc::CompiledCollective compiled = check(collc::compileCollective(spec, options, std::cerr));

  if (compiled.kind != collc::CollectiveKind::AllReduce) {
    std::cerr << "allreduce_app: " << compiled.specName << " is of kind "
              << collc::name(compiled.kind) << "; this program checks AllReduce results\n";
    return 1;
  }

  collc::JitOptions jit; // sm_90 unless a GPU says otherwise
  collc::Expected<int> gpus = collc::gpuCount();
  if (gpus && *gpus >= nranks)
    jit.arch = collc::gpuArch(0);
  collc::JitResult cubin = check(
      collc::compileCuda(compiled.cudaSource, compiled.kernelName, collc::JitOutput::Cubin, jit));
  std::cout << "collc " << collc::versionInfo().collc << ": " << compiled.specName << " for "
            << nranks << " ranks, kernel " << compiled.kernelName << ", cubin "
            << cubin.image.size() << " bytes for " << jit.arch
            << (cubin.cacheHit ? " (from the cache)" : "") << "\n";

  if (!gpus) {
    std::cout << collc::toString(gpus.takeError()) << "; compiled to cubin, nothing to run\n";
    return 0;
  }
  if (*gpus < nranks) {
    std::cout << "no GPU pair: " << *gpus << " GPU visible; compiled to cubin, nothing to run\n";
    return 0;
  }

  // GPUs 0 and 1, peer access both ways, a 64 MiB symmetric heap on each for the scratch.
  std::unique_ptr<collc::LocalWorld> world =
      check(collc::LocalWorld::create({0, 1}, size_t(64) << 20));
  std::unique_ptr<collc::CollectiveInstance> allreduce =
      check(collc::CollectiveInstance::create(*world, compiled, cubin.image, count));

  // Rank r contributes r + 1 + i % 7 at element i: small integers, so the f32 sum is exact.
  std::vector<collc::DeviceBuffer> in, out;
  std::vector<cudaStream_t> streams;
  std::vector<float> host(count);
  for (int r = 0; r < nranks; ++r) {
    in.push_back(check(collc::DeviceBuffer::allocate(world->device(r), count * sizeof(float))));
    out.push_back(check(collc::DeviceBuffer::allocate(world->device(r), count * sizeof(float))));
    for (uint64_t i = 0; i < count; ++i)
      host[i] = float(r + 1 + i % 7);
    check(COLLC_CUDA_CHECK(cudaSetDevice(world->device(r))));
    check(COLLC_CUDA_CHECK(
        cudaMemcpy(in[r].get(), host.data(), count * sizeof(float), cudaMemcpyHostToDevice)));
    // A pageable cudaMemcpy may return before the data lands, and the world's streams do not
    // wait for the legacy stream: finish the upload before the launch.
    check(COLLC_CUDA_CHECK(cudaDeviceSynchronize()));
    streams.push_back(world->stream(r));
  }
  // Each rank's part on its own stream; the kernels wait for each other on the GPUs.
  for (int r = 0; r < nranks; ++r)
    check(allreduce->launch(r, in[r].get(), out[r].get(), count, streams[r]));
  // Bounded: a rank that waits forever becomes an error naming it, not a hang.
  check(allreduce->synchronize(streams));

  uint64_t wrong = 0;
  for (int r = 0; r < nranks; ++r) {
    check(COLLC_CUDA_CHECK(cudaSetDevice(world->device(r))));
    check(COLLC_CUDA_CHECK(
        cudaMemcpy(host.data(), out[r].get(), count * sizeof(float), cudaMemcpyDeviceToHost)));
    for (uint64_t i = 0; i < count; ++i)
      wrong += host[i] != float(2 * (i % 7) + 3); // (1 + i%7) + (2 + i%7)
  }
  std::cout << "ran on " << collc::gpuName(world->device(0)) << " x " << nranks << ": "
            << (wrong ? "WRONG" : "correct") << " (" << count << " elements per rank)\n";
  return wrong ? 1 : 0;
}
