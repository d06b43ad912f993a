#include "tests/gpu/ProcsChild.h"

#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "runtime/LaunchEnvironment.h"
#include "runtime/NcclLibrary.h"
#include "runtime/ProcessWorld.h"
#include "runtime/Rendezvous.h"
#include "tests/StdlibStrategies.h"
#include "tools/harness/RunHarness.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <llvm/Support/raw_ostream.h>
#include <thread>
#include <unistd.h>

namespace collc::procstest {

namespace {

// The matrix: sizes at the edges of the vectorized paths, odd sizes, and a large one.
const uint64_t kMatrixCounts[] = {1, 7, 8, 9, 1000, 4097, 65536 + 3, 1 << 20};
const size_t kHeapBytes = size_t(512) << 20;

int failures = 0;

void pass(const std::string& name, const std::string& note = "") {
  std::printf("PASS %s%s%s\n", name.c_str(), note.empty() ? "" : ": ", note.c_str());
  std::fflush(stdout);
}
/// Reports a failed case; returns the exit status of a failed scenario.
int fail(const std::string& name, const std::string& why) {
  ++failures;
  std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
  std::fflush(stdout);
  return 1;
}

/// The message without newlines, so that one case stays one line.
std::string oneLine(std::string text) {
  for (char& c : text)
    if (c == '\n')
      c = ' ';
  return text;
}

Expected<std::unique_ptr<ProcessWorld>> joinWorld() {
  ProcessWorldOptions options;
  options.heapBytes = kHeapBytes;
  return ProcessWorld::fromEnvironment(options);
}

/// A compiled and JIT-compiled variant for this world, or why not. Only variants of implemented
/// strategies are asked for (tests/StdlibStrategies.h), so any error is a failure.
struct Variant {
  CompiledCollective compiled;
  std::shared_ptr<const ir::Program> spec; // the run harness's reference
  std::string cubin;
  std::string error;
};

Variant compileVariant(const SymmetricWorld& world, const std::string& spec, SyncKind sync,
                       DType dtype, ReduceOp op) {
  Variant variant;
  Expected<SpecSource> source = loadSpec(spec);
  if (!source) {
    variant.error = toString(source.takeError());
    return variant;
  }
  CompileOptions options;
  options.nranks = world.nranks();
  options.sync = sync;
  options.dtype = dtype;
  options.op = op;
  options.specProgram = &variant.spec;
  std::string diagnostics;
  DiagnosticText os(diagnostics);
  Expected<CompiledCollective> compiled = compileCollective(*source, options, os);
  if (!compiled) {
    variant.error =
        "the compiler refuses it: " + oneLine(os.str() + toString(compiled.takeError()));
    return variant;
  }
  variant.compiled = std::move(*compiled);
  JitOptions jit;
  jit.arch = gpuArch(world.device(world.localRanks()[0]));
  Expected<JitResult> cubin =
      compileCuda(variant.compiled.cudaSource, variant.compiled.kernelName, JitOutput::Cubin, jit);
  if (!cubin) {
    variant.error = "NVRTC: " + oneLine(toString(cubin.takeError()));
    return variant;
  }
  variant.cubin = std::move(cubin->image);
  return variant;
}

std::optional<SyncKind> syncArg(const std::vector<std::string>& args, size_t index) {
  return index < args.size() ? parseSyncKind(args[index]) : std::nullopt;
}

/// matrix SPEC SYNC: every dtype x op x size, three checked calls each.
int matrix(const std::vector<std::string>& args) {
  std::optional<SyncKind> sync = syncArg(args, 2);
  if (args.size() < 3 || !sync)
    return fail("matrix", "usage: matrix SPEC SYNC");
  const std::string spec = args[1];
  auto world = joinWorld();
  if (!world)
    return fail("matrix", oneLine(toString(world.takeError())));
  for (DType dtype : kAllDTypes)
    for (ReduceOp op : kAllReduceOps) {
      if (!tests::strategyApplies(*sync, op))
        continue; // ll128_atomic sums only; CompileTest checks that it refuses max and min
      const std::string variantName =
          spec + " " + args[2] + " " + std::string(name(dtype)) + " " + std::string(name(op));
      Variant variant = compileVariant(**world, spec, *sync, dtype, op);
      if (!variant.error.empty()) {
        return fail(variantName, variant.error);
      }
      auto instance = CollectiveInstance::create(**world, variant.compiled, variant.cubin,
                                                 kMatrixCounts[std::size(kMatrixCounts) - 1]);
      if (!instance) {
        return fail(variantName, oneLine(toString(instance.takeError())));
      }
      for (uint64_t count : kMatrixCounts) {
        const std::string caseName = variantName + " n=" + std::to_string(count);
        RunOptions options;
        options.reference = variant.spec;
        options.count = count;
        options.time = false;
        options.seed = count * 31 + uint64_t(dtype);
        auto report = runAndCheck(**world, **instance, variant.compiled, options);
        if (!report) {
          // The ranks may be out of step now: stop here.
          return fail(caseName, oneLine(toString(report.takeError())));
        }
        if (!report->correct)
          fail(caseName, oneLine(report->firstMismatches));
        else
          pass(caseName);
      }
    }
  return failures ? 1 : 0;
}

/// graph SPEC SYNC: a stress graph of back-to-back calls, and graph timing, in f32 and bf16.
int graph(const std::vector<std::string>& args) {
  std::optional<SyncKind> sync = syncArg(args, 2);
  if (args.size() < 3 || !sync)
    return fail("graph", "usage: graph SPEC SYNC");
  const std::string spec = args[1];
  auto world = joinWorld();
  if (!world)
    return fail("graph", oneLine(toString(world.takeError())));
  for (DType dtype : {DType::F32, DType::BF16}) {
    const std::string variantName = spec + " " + args[2] + " " + std::string(name(dtype)) + " sum";
    Variant variant = compileVariant(**world, spec, *sync, dtype, ReduceOp::Sum);
    if (!variant.error.empty())
      return fail(variantName, variant.error);
    auto instance = CollectiveInstance::create(**world, variant.compiled, variant.cubin, 65536);
    if (!instance)
      return fail(variantName, oneLine(toString(instance.takeError())));
    auto stress = runGraphStress(**world, **instance, variant.compiled, 4096 + 5, 300, 42,
                                 variant.spec.get());
    if (!stress)
      return fail(variantName + " stress", oneLine(toString(stress.takeError())));
    if (!stress->correct || stress->checkedCalls != 300)
      fail(variantName + " stress", oneLine(stress->firstMismatches));
    else
      pass(variantName + " stress",
           "300 calls in one graph, " + std::to_string(stress->usPerOp) + " us per call");
    RunOptions options;
    options.reference = variant.spec;
    options.count = 65536;
    options.graphOps = 20;
    options.replays = 3;
    auto timed = runAndCheck(**world, **instance, variant.compiled, options);
    if (!timed)
      return fail(variantName + " timed", oneLine(toString(timed.takeError())));
    if (!timed->correct || timed->usPerOp <= 0 || timed->usPerOpPerRank.size() != 2)
      fail(variantName + " timed", oneLine(timed->firstMismatches));
    else
      pass(variantName + " timed", std::to_string(timed->usPerOp) + " us/op");
  }
  return failures ? 1 : 0;
}

/// Eager calls and a short graph of `variant` at `count` elements, checked: a PASS or FAIL line.
/// False when the run itself failed (the world cannot go on).
bool checkThroughNccl(ProcessWorld& world, CollectiveInstance& instance, const Variant& variant,
                      const std::string& variantName, uint64_t count) {
  RunOptions options;
  options.reference = variant.spec;
  options.count = count;
  options.graphOps = 10;
  options.replays = 3;
  auto report = runAndCheck(world, instance, variant.compiled, options);
  const std::string caseName = variantName + " n=" + std::to_string(count);
  if (!report) {
    fail(caseName, oneLine(toString(report.takeError())));
    return false;
  }
  if (!report->correct)
    fail(caseName, oneLine(report->firstMismatches));
  else
    pass(caseName, instance.engineDescription() + ", " + std::to_string(report->usPerOp) +
                       " us/op in a graph");
  return true;
}

/// nccl-path: the world spans "nodes" (the parent sets COLLC_TREAT_EACH_GPU_AS_NODE=1), so the
/// instance must be NCCL's, in eager calls and in captured graphs.
int ncclPath(const std::vector<std::string>&) {
  auto world = joinWorld();
  if (!world)
    return fail("nccl-path", oneLine(toString(world.takeError())));
  if (!(*world)->collectivesViaNccl() || (*world)->nodeCount() != 2)
    return fail("nccl-path world", "expected 2 nodes and NCCL: " + (*world)->pathDescription()), 1;
  pass("nccl-path world", (*world)->pathDescription());
  for (auto [dtype, op] :
       {std::pair{DType::BF16, ReduceOp::Sum}, std::pair{DType::F32, ReduceOp::Max}}) {
    const std::string variantName =
        "nccl-path " + std::string(name(dtype)) + " " + std::string(name(op));
    Variant variant = compileVariant(**world, "allreduce_oneshot", SyncKind::Barrier, dtype, op);
    if (!variant.error.empty())
      return fail(variantName, variant.error);
    auto instance = CollectiveInstance::create(**world, variant.compiled, variant.cubin, 1 << 20);
    if (!instance)
      return fail(variantName, oneLine(toString(instance.takeError())));
    if ((*instance)->engine() != CollectiveInstance::Engine::Nccl)
      return fail(variantName, "the instance runs " + (*instance)->engineDescription());
    for (uint64_t count : {uint64_t(1), uint64_t(4097), uint64_t(1) << 20})
      if (!checkThroughNccl(**world, **instance, variant, variantName, count))
        return 1;
  }
  // Every other kind goes to NCCL's same collective (ncclAllGather, ..., grouped ncclSend/ncclRecv
  // for alltoall), checked against that kind's reference.
  for (auto [spec, sync] : {std::pair{"allgather_direct", SyncKind::LL},
                            std::pair{"reducescatter_direct", SyncKind::LL},
                            std::pair{"broadcast_direct", SyncKind::Barrier},
                            std::pair{"reduce_direct", SyncKind::Barrier},
                            std::pair{"alltoall_direct", SyncKind::LL}}) {
    const std::string variantName = std::string("nccl-path ") + spec;
    Variant variant = compileVariant(**world, spec, sync, DType::BF16, ReduceOp::Sum);
    if (!variant.error.empty())
      return fail(variantName, variant.error);
    auto instance = CollectiveInstance::create(**world, variant.compiled, variant.cubin, 1 << 16);
    if (!instance)
      return fail(variantName, oneLine(toString(instance.takeError())));
    for (uint64_t count : {uint64_t(4097), uint64_t(1) << 16})
      if (!checkThroughNccl(**world, **instance, variant, variantName, count))
        return 1;
  }
  return failures ? 1 : 0;
}

/// dead-peer: rank 1 exits after both made the instance; rank 0 then launches and must get an
/// error naming rank 1's exited process, not a hang.
int deadPeer(const std::vector<std::string>&) {
  auto world = joinWorld();
  if (!world)
    return fail("dead-peer", oneLine(toString(world.takeError())));
  ProcessWorld& w = **world;
  Variant variant =
      compileVariant(w, "allreduce_oneshot", SyncKind::Barrier, DType::F32, ReduceOp::Sum);
  if (!variant.error.empty())
    return fail("dead-peer", variant.error);
  auto instance = CollectiveInstance::create(w, variant.compiled, variant.cubin, 4096,
                                             /*timeoutNs=*/1'000'000'000);
  if (!instance)
    return fail("dead-peer", oneLine(toString(instance.takeError())));
  if (Error err = w.barrier("before rank 1 exits"))
    return fail("dead-peer", oneLine(toString(std::move(err))));
  if (w.rank() == 1) {
    std::printf("rank 1 exits now, without a word to its peer\n");
    std::fflush(stdout);
    _exit(0);
  }
  // Until the peer is gone for sure, so that the launch below finds it dead.
  for (int i = 0; i < 200 && w.diagnosePeers().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto in = DeviceBuffer::allocate(w.device(0), 4096 * 4);
  auto out = DeviceBuffer::allocate(w.device(0), 4096 * 4);
  if (!in || !out)
    return fail("dead-peer", "allocation failed");
  const auto start = std::chrono::steady_clock::now();
  Error launched = (*instance)->launch(0, in->get(), out->get(), 4096, w.stream(0));
  Error waited = launched ? std::move(launched) : (*instance)->synchronize({w.stream(0)});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!waited)
    return fail("dead-peer", "the call succeeded without its peer");
  const std::string message = oneLine(toString(std::move(waited)));
  if (message.find("rank 1's process") == std::string::npos ||
      message.find("has exited") == std::string::npos || message.find("hang:") != std::string::npos)
    return fail("dead-peer", "the error does not name the dead peer: " + message);
  pass("dead-peer", "reported in " + std::to_string(seconds) + " s: " + message);
  std::fflush(stdout);
  // The world is broken now; its destructor aborts rather than waits for the dead peer.
  _exit(0);
}

/// kill-peer: rank 1 is killed by a signal; rank 0 would sleep for a minute. The launcher (the
/// parent test) must stop rank 0 and say that rank 1 was killed.
int killPeer(const std::vector<std::string>&) {
  auto world = joinWorld();
  if (!world)
    return fail("kill-peer", oneLine(toString(world.takeError())));
  if ((*world)->rank() == 1)
    raise(SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(60));
  return fail("kill-peer", "rank 0 was not stopped");
}

/// adopt: the application makes its own communicator; the world adopts it and leaves it usable.
int adopt(const std::vector<std::string>&) {
  auto launch = parseLaunchEnvironment(processEnvironment());
  if (!launch || !*launch)
    return fail("adopt", "not launched");
  const LaunchEnvironment& env = **launch;
  auto nccl = ncclLibrary();
  auto address = parseRendezvous(env.rendezvous);
  if (!nccl || !address)
    return fail("adopt", "no NCCL or bad rendezvous");
  ncclUniqueId id;
  if (env.rank == 0 && (*nccl)->getUniqueId(&id) != ncclSuccess)
    return fail("adopt", "ncclGetUniqueId failed");
  auto shared =
      shareFromRankZero(*address, env.rank, env.worldSize,
                        llvm::StringRef(reinterpret_cast<const char*>(&id), sizeof id), 60);
  if (!shared || shared->size() != sizeof id)
    return fail("adopt", "rendezvous failed");
  std::memcpy(&id, shared->data(), sizeof id);
  ncclComm_t comm = nullptr;
  if (cudaSetDevice(env.localRank) != cudaSuccess ||
      (*nccl)->commInitRank(&comm, env.worldSize, id, env.rank) != ncclSuccess)
    return fail("adopt", "the application's ncclCommInitRank failed");
  {
    ProcessWorldOptions options;
    options.heapBytes = size_t(64) << 20;
    auto world = ProcessWorld::adopt(comm, options);
    if (!world)
      return fail("adopt", oneLine(toString(world.takeError())));
    if ((*world)->rank() != env.rank || (*world)->device(env.rank) != env.localRank)
      return fail("adopt", "rank or device not taken from the communicator");
    Variant variant =
        compileVariant(**world, "allreduce_twoshot", SyncKind::Barrier, DType::BF16, ReduceOp::Sum);
    if (!variant.error.empty())
      return fail("adopt", variant.error);
    auto instance = CollectiveInstance::create(**world, variant.compiled, variant.cubin, 65536);
    if (!instance)
      return fail("adopt", oneLine(toString(instance.takeError())));
    RunOptions options2;
    options2.reference = variant.spec;
    options2.count = 65536;
    options2.graphOps = 10;
    options2.replays = 3;
    auto report = runAndCheck(**world, **instance, variant.compiled, options2);
    if (!report)
      return fail("adopt", oneLine(toString(report.takeError())));
    if (!report->correct)
      return fail("adopt", oneLine(report->firstMismatches));
    pass("adopt run", std::to_string(report->usPerOp) + " us/op");
  }
  // The world is gone; the application's communicator must still work.
  void* buffer = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&buffer, 1024) != cudaSuccess || cudaStreamCreate(&stream) != cudaSuccess ||
      cudaMemset(buffer, 0, 1024) != cudaSuccess)
    return fail("adopt", "CUDA setup failed");
  if ((*nccl)->allReduce(buffer, buffer, 256, ncclFloat32, ncclSum, comm, stream) != ncclSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess)
    return fail("adopt", "the communicator no longer works after the world went");
  pass("adopt communicator survives");
  (void)(*nccl)->commDestroy(comm);
  return failures ? 1 : 0;
}

} // namespace

int runChild(const std::vector<std::string>& args) {
  if (args.empty())
    return fail("child", "no scenario");
  const std::string& scenario = args[0];
  if (scenario == "matrix")
    return matrix(args);
  if (scenario == "graph")
    return graph(args);
  if (scenario == "nccl-path")
    return ncclPath(args);
  if (scenario == "dead-peer")
    return deadPeer(args);
  if (scenario == "kill-peer")
    return killPeer(args);
  if (scenario == "adopt")
    return adopt(args);
  return fail("child", "unknown scenario '" + scenario + "'");
}

} // namespace collc::procstest
