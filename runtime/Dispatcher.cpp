#include "runtime/Dispatcher.h"

#include "compiler/Compile.h"
#include "runtime/Devices.h"
#include "runtime/HeapSize.h"
#include "runtime/Jit.h"

#include <cstdlib>
#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

namespace collc {

namespace {

llvm::Error dispatchError(const llvm::Twine& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "dispatch: " + message.str());
}

/// The table the request names, or none. A table named on purpose must exist; the default
/// location may be empty (the built-in rule then applies).
llvm::Expected<std::optional<TuningTable>> loadTable(const DispatchRequest& request) {
  if (request.table == "none")
    return std::nullopt;
  const char* fromEnvironment = std::getenv("COLLC_TUNING_TABLE");
  const bool named = !request.table.empty() || (fromEnvironment && *fromEnvironment != '\0');
  const std::string path = request.table.empty() ? defaultTuningTablePath() : request.table;
  if (path.empty() || (!named && !llvm::sys::fs::exists(path)))
    return std::nullopt;
  auto table = readTuningTable(path);
  if (!table)
    return table.takeError();
  return std::optional<TuningTable>(std::move(*table));
}

llvm::Expected<DispatchVariant> compileVariant(const TunedVariant& variant,
                                               const DispatchRequest& request,
                                               const std::string& arch) {
  auto fail = [&](const std::string& why) {
    return dispatchError("variant " + variant.text() + ": " + why);
  };
  auto spec = loadSpec(variant.spec);
  if (!spec)
    return fail(llvm::toString(spec.takeError()));
  CompileOptions options;
  options.dtype = request.dtype;
  options.op = request.op;
  options.nranks = request.nranks;
  variant.applyTo(options);
  std::string diagnostics;
  llvm::raw_string_ostream diag(diagnostics);
  auto compiled = compileCollective(*spec, options, diag);
  if (!compiled) {
    llvm::consumeError(compiled.takeError());
    return fail("the compiler refused it:\n" + diag.str());
  }
  if (compiled->kind != request.collective)
    return fail(
        fmt::format("it is an {}, not an {}", name(compiled->kind), name(request.collective)));
  JitOptions jit;
  jit.arch = arch;
  auto cubin = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
  if (!cubin)
    return fail("NVRTC: " + llvm::toString(cubin.takeError()));
  return DispatchVariant{variant, std::move(*compiled), std::move(cubin->image)};
}

} // namespace

llvm::Expected<DispatchProgram> DispatchProgram::compile(const DispatchRequest& request) {
  if (request.maxCount == 0)
    return dispatchError("maxCount must be at least 1 element");
  if (request.nranks < 1)
    return dispatchError("nranks must be at least 1");
  auto table = loadTable(request);
  if (!table)
    return table.takeError();

  DispatchProgram program;
  program.request_ = request;
  const bool haveGpu = bool(llvm::expectedToOptional(gpuCount()));
  DispatchQuery query;
  query.key.gpu = !request.gpu.empty() ? request.gpu
                  : haveGpu            ? gpuModelKey(gpuName(0))
                                       : "unknown";
  if (!request.topology.empty()) {
    query.key.topology = request.topology;
  } else {
    std::vector<int> devices;
    for (int r = 0; r < request.nranks; ++r)
      devices.push_back(r);
    query.key.topology = localTopologyName(devices);
  }
  query.key.nranks = request.nranks;
  query.key.collective = request.collective;
  query.key.dtype = request.dtype;
  query.key.op = request.op;
  query.spec = request.spec;
  query.maxBytes = request.maxCount * sizeOf(request.dtype);
  if (haveGpu)
    query.multiprocessors = multiprocessorCount(0);
  program.plan_ = chooseDispatchPlan(*table ? &**table : nullptr, query);
  program.query_ = query;
  program.table_ = std::move(*table);

  std::string arch = request.arch;
  if (arch.empty())
    arch = haveGpu ? gpuArch(0) : "";
  if (arch.empty())
    arch = "sm_90";
  for (const TunedVariant& variant : program.plan_.variants) {
    auto compiled = compileVariant(variant, request, arch);
    if (!compiled)
      return llvm::joinErrors(compiled.takeError(),
                              dispatchError("the plan came from " + program.plan_.source));
    program.variants_.push_back(std::move(*compiled));
  }
  return program;
}

uint64_t DispatchProgram::heapBytes() const {
  uint64_t bytes = 0;
  for (const DispatchVariant& variant : variants_)
    bytes += heapBytesFor(variant.compiled, request_.maxCount);
  return bytes;
}

std::string DispatchProgram::description() const {
  return plan_.source + "\n" + describePlan(plan_);
}

llvm::Expected<std::unique_ptr<Dispatcher>>
Dispatcher::create(SymmetricWorld& world, DispatchProgram program, uint64_t timeoutNs) {
  if (program.request().nranks != world.nranks())
    return dispatchError(fmt::format("compiled for {} ranks, but the world has {}",
                                     program.request().nranks, world.nranks()));
  std::unique_ptr<Dispatcher> dispatcher(new Dispatcher(std::move(program)));
  for (const DispatchVariant& variant : dispatcher->program_.variants()) {
    auto instance = CollectiveInstance::create(world, variant.compiled, variant.cubin,
                                               dispatcher->maxCount(), timeoutNs);
    if (!instance)
      return llvm::joinErrors(dispatchError("variant " + variant.variant.text()),
                              instance.takeError());
    dispatcher->instances_.push_back(std::move(*instance));
  }
  return dispatcher;
}

size_t Dispatcher::variantFor(uint64_t count) const {
  const uint64_t elementBytes = sizeOf(program_.request().dtype);
  const uint64_t bytes =
      count > kNoUpperBound / elementBytes ? kNoUpperBound : count * elementBytes;
  return program_.plan().variantFor(bytes);
}

llvm::Error Dispatcher::launch(int rank, const void* in, void* out, uint64_t count,
                               cudaStream_t stream) const {
  if (count > maxCount())
    return dispatchError(fmt::format(
        "a call of {} elements; the dispatcher was made for at most {}", count, maxCount()));
  return instances_[variantFor(count)]->launch(rank, in, out, count, stream);
}

llvm::Error Dispatcher::synchronize(llvm::ArrayRef<cudaStream_t> streams,
                                    double extraSeconds) const {
  // The streams are the same for every instance: the first wait does the waiting, the others
  // only read their watchdogs.
  for (const auto& instance : instances_)
    if (llvm::Error err = instance->synchronize(streams, extraSeconds))
      return err;
  return llvm::Error::success();
}

Dispatcher::~Dispatcher() {
  // Newest first, so that each instance gives its heap region back to the world.
  while (!instances_.empty())
    instances_.pop_back();
}

std::string localTopologyName(const std::vector<int>& devices) {
  auto gpus = gpuCount();
  if (!gpus) {
    llvm::consumeError(gpus.takeError());
    return "unknown";
  }
  bool atomics = true;
  for (int a : devices)
    for (int b : devices) {
      if (a == b)
        continue;
      if (a >= *gpus || b >= *gpus || !canAccessPeer(a, b))
        return "no-p2p";
      int native = 0;
      if (cudaDeviceGetP2PAttribute(&native, cudaDevP2PAttrNativeAtomicSupported, a, b) !=
              cudaSuccess ||
          !native)
        atomics = false;
    }
  return atomics ? "nvlink-p2p" : "pcie-p2p";
}

} // namespace collc
