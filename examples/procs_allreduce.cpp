// procs_allreduce: collc with one process per GPU, the way inference engines run.
//
//   1. join the world: rank, size and GPU from the launcher's variables (RANK, WORLD_SIZE,
//      LOCAL_RANK, COLLC_RENDEZVOUS); NCCL connects the processes, CUDA IPC maps the peers'
//      symmetric heaps (collc::ProcessWorld);
//   2. compile the stdlib one-shot AllReduce for that many ranks, bf16 sum, and JIT it for this
//      process's GPU;
//   3. capture 10 calls into a CUDA graph on this rank's stream and replay it;
//   4. run ncclAllReduce on the same data through the world's communicator, and check that collc
//      and NCCL agree, bit for bit, with the exact answer.
//
// Run it either way:
//   build/bin/procs_allreduce --procs 2 [elements]       starts 2 copies of itself, one per GPU
//   COLLC_RENDEZVOUS=file:/tmp/my-job-id torchrun --nproc-per-node 2 --no-python
//       build/bin/procs_allreduce [elements]                  (one command line)
// Without a GPU it says so and stops; that is not an error. It uses the installed C++ API alone
// (<collc/collc.hpp>), and NCCL's header for ncclAllReduce's types.
#include <collc/collc.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <iostream>
#include <nccl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace collc;

namespace {

// Rank r's element i. Quarters up to a few dozen are exact in bf16, and so are their sums over up
// to 8 ranks, so collc, NCCL and the host must all agree exactly.
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

/// --procs N: this program starts N copies of itself, one rank each, with the variables torchrun
/// would set (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) and COLLC_RENDEZVOUS, a file where
/// rank 0 leaves NCCL's unique id for the others; `args` are the copies' arguments. A rank that
/// fails makes its peers' waits fail too (they are bounded), so every copy ends.
int launch(int processes, const std::vector<std::string>& args) {
  Expected<int> gpus = gpuCount(); // main() made sure there is one
  if (!gpus || *gpus < processes) {
    std::cerr << "procs_allreduce: --procs " << processes << " needs " << processes << " GPUs; "
              << (gpus ? std::to_string(*gpus) + " visible" : toString(gpus.takeError())) << "\n";
    return 1;
  }
  char dir[] = "/tmp/procs_allreduce-XXXXXX";
  if (!mkdtemp(dir)) {
    std::perror("procs_allreduce: a folder for the rendezvous");
    return 1;
  }
  const std::string idFile = std::string(dir) + "/nccl-id";
  std::vector<pid_t> children;
  for (int rank = 0; rank < processes; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(processes).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(processes).c_str(), 1);
      setenv("COLLC_RENDEZVOUS", ("file:" + idFile).c_str(), 1);
      std::vector<char*> argv{const_cast<char*>("procs_allreduce")};
      for (const std::string& arg : args)
        argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      std::perror("procs_allreduce: exec");
      _exit(127);
    }
    if (pid < 0) {
      std::perror("procs_allreduce: fork");
      break;
    }
    children.push_back(pid);
  }
  bool allGood = int(children.size()) == processes;
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    allGood = allGood && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  unlink(idFile.c_str());
  rmdir(dir);
  if (!allGood)
    std::cerr << "procs_allreduce: a rank failed (its message is above)\n";
  return allGood ? 0 : 1;
}

/// ncclAllReduce from the NCCL library collc loaded for the world (versionInfo says which file):
/// dlopen of a loaded library returns it again. A program linked with NCCL calls it directly.
using NcclAllReduce = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                       ncclComm_t, cudaStream_t);
Expected<NcclAllReduce> ncclAllReduceOfTheWorld() {
  const VersionInfo versions = versionInfo();
  void* library = versions.ncclPath.empty()
                      ? nullptr
                      : dlopen(versions.ncclPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return makeError("NCCL is not loaded: " + versions.ncclError);
  void* symbol = dlsym(library, "ncclAllReduce");
  if (!symbol)
    return makeError(versions.ncclPath + " has no ncclAllReduce");
  return reinterpret_cast<NcclAllReduce>(symbol);
}

} // namespace

int main(int argc, char** argv) {
  // The GPU machine collc is tested on requires NVLink multicast off, set before anything loads
  // NCCL (see the README); leave these three lines out where your machine has no such rule.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
  setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
  std::vector<std::string> args(argv + 1, argv + argc), rankArgs; // the copies': no --procs
  int procs = 0;
  uint64_t count = uint64_t(1) << 20;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--procs" && i + 1 < args.size()) {
      procs = std::atoi(args[++i].c_str());
    } else {
      count = std::strtoull(args[i].c_str(), nullptr, 0);
      rankArgs.push_back(args[i]);
    }
  }
  if (count == 0 || procs < 0) {
    std::cerr << "usage: procs_allreduce [--procs N] [elements per rank, > 0]\n";
    return 2;
  }
  if (Expected<int> gpus = gpuCount(); !gpus) {
    std::cout << toString(gpus.takeError()) << "\nnothing to run here.\n";
    return 0;
  }
  if (procs > 0)
    return launch(procs, rankArgs);

  // 1. The world. Every call from here on that involves the other processes is collective: each
  //    process makes it, in the same order.
  ProcessWorldOptions worldOptions;
  worldOptions.heapBytes = size_t(64) << 20;
  Expected<std::unique_ptr<ProcessWorld>> created = ProcessWorld::fromEnvironment(worldOptions);
  if (!created) {
    std::cerr << "procs_allreduce: " << toString(created.takeError()) << "\n"
              << "(start it with --procs N, or under torchrun / mpirun with COLLC_RENDEZVOUS "
                 "set)\n";
    return 1;
  }
  ProcessWorld& world = **created;
  const int rank = world.rank(), nranks = world.nranks();
  const std::string me = "rank " + std::to_string(rank) + ": ";
  ExitOnError check("procs_allreduce: " + me);
  cudaStream_t stream = world.stream(rank);
  check(COLLC_CUDA_CHECK(cudaSetDevice(world.device(rank))));

  // 2. The spec for this many ranks, JIT-compiled for this process's GPU (cached on disk).
  SpecSource spec = check(loadSpec("allreduce_oneshot"));
  CompileOptions options;
  options.dtype = DType::BF16;
  options.op = ReduceOp::Sum;
  options.nranks = nranks;
  CompiledCollective compiled = check(compileCollective(spec, options, std::cerr));
  JitOptions jit;
  jit.arch = gpuArch(world.device(rank));
  JitResult cubin =
      check(compileCuda(compiled.cudaSource, compiled.kernelName, JitOutput::Cubin, jit));
  std::unique_ptr<CollectiveInstance> allreduce =
      check(CollectiveInstance::create(world, compiled, cubin.image, count));
  if (rank == 0)
    std::cout << nranks << " processes, " << count << " bf16 elements each; "
              << allreduce->engineDescription() << "\n";

  // User buffers are ordinary device memory of this rank's GPU; only scratch is symmetric.
  DeviceBuffer in = check(DeviceBuffer::allocate(world.device(rank), count * 2));
  DeviceBuffer out = check(DeviceBuffer::allocate(world.device(rank), count * 2));
  DeviceBuffer ncclOut = check(DeviceBuffer::allocate(world.device(rank), count * 2));
  std::vector<uint16_t> host(count);
  for (uint64_t i = 0; i < count; ++i)
    host[i] = toBf16(inputValue(rank, i));
  check(COLLC_CUDA_CHECK(
      cudaMemcpyAsync(in.get(), host.data(), count * 2, cudaMemcpyHostToDevice, stream)));
  check(COLLC_CUDA_CHECK(cudaMemsetAsync(out.get(), 0xFF, count * 2, stream))); // NaN
  // Like cudaStreamSynchronize, but bounded, and it names a peer that died.
  check(allreduce->synchronize({stream}));
  // Peers write into this rank's scratch as soon as they launch: everyone's data must be ready.
  check(world.barrier("inputs ready"));

  // 3. Ten calls in one CUDA graph. The epochs live on the device, so the graph can be replayed
  //    any number of times with no host work in between.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  check(COLLC_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal)));
  for (int call = 0; call < 10; ++call)
    check(allreduce->launch(rank, in.get(), out.get(), count, stream));
  check(COLLC_CUDA_CHECK(cudaStreamEndCapture(stream, &graph)));
  check(COLLC_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0)));
  check(COLLC_CUDA_CHECK(cudaGraphDestroy(graph)));
  check(COLLC_CUDA_CHECK(cudaGraphLaunch(exec, stream)));
  check(allreduce->synchronize({stream}));

  // 4. NCCL on the same data, through the world's communicator.
  NcclAllReduce ncclAllReduce = check(ncclAllReduceOfTheWorld());
  if (ncclResult_t result = ncclAllReduce(in.get(), ncclOut.get(), count, ncclBfloat16, ncclSum,
                                          world.ncclComm(), stream);
      result != ncclSuccess)
    check(makeError("ncclAllReduce failed with NCCL result " + std::to_string(int(result))));
  check(allreduce->synchronize({stream}));

  std::vector<uint16_t> collcResult(count), ncclResult(count);
  check(COLLC_CUDA_CHECK(
      cudaMemcpyAsync(collcResult.data(), out.get(), count * 2, cudaMemcpyDeviceToHost, stream)));
  check(COLLC_CUDA_CHECK(cudaMemcpyAsync(ncclResult.data(), ncclOut.get(), count * 2,
                                         cudaMemcpyDeviceToHost, stream)));
  check(allreduce->synchronize({stream}));
  uint64_t wrong = 0, differ = 0;
  for (uint64_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int r = 0; r < nranks; ++r)
      expected += inputValue(r, i);
    if (fromBf16(collcResult[i]) != expected && wrong++ < 3)
      std::cout << me << "out[" << i << "] = " << fromBf16(collcResult[i]) << ", expected "
                << expected << "\n";
    differ += collcResult[i] != ncclResult[i];
  }
  std::cout << me << "graph of 10 calls " << (wrong ? "WRONG" : "correct") << "; "
            << (differ ? std::to_string(differ) + " elements differ from ncclAllReduce"
                       : std::string("identical to ncclAllReduce, bit for bit"))
            << "\n";

  // Every rank's verdict, so that rank 0 can speak for the world.
  std::vector<uint64_t> verdicts(nranks);
  verdicts[rank] = wrong + differ;
  check(world.allGatherRanks("verdicts", verdicts, 1));
  bool allGood = true;
  for (uint64_t v : verdicts)
    allGood = allGood && v == 0;
  if (rank == 0)
    std::cout << (allGood ? "all ranks correct and equal to NCCL\n" : "SOME RANKS WRONG\n");
  check(COLLC_CUDA_CHECK(cudaGraphExecDestroy(exec)));
  return allGood ? 0 : 1;
}
