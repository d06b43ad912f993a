#include "runtime/Dispatcher.h"

#include "runtime/Devices.h"
#include "runtime/HeapSize.h"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

namespace collc {

namespace {

Error dispatchError(const std::string& message) {
  return makeError("dispatch: " + message);
}

/// The table the request names, or none. A table named on purpose must exist; the default
/// location may be empty (the built-in rule then applies).
Expected<std::optional<TuningTable>> loadTable(const DispatchRequest& request) {
  if (request.table == "none")
    return std::nullopt;
  const char* fromEnvironment = std::getenv("COLLC_TUNING_TABLE");
  const bool named = !request.table.empty() || (fromEnvironment && *fromEnvironment != '\0');
  const std::string path = request.table.empty() ? defaultTuningTablePath() : request.table;
  std::error_code ec;
  if (path.empty() || (!named && !std::filesystem::exists(path, ec)))
    return std::nullopt;
  auto table = readTuningTable(path);
  if (!table)
    return table.takeError();
  return std::optional<TuningTable>(std::move(*table));
}

} // namespace

Expected<DispatchProgram> DispatchProgram::plan(
    const DispatchRequest& request,
    std::function<std::optional<std::pair<int, int>>(const std::string&)> declaredRanks) {
  if (request.maxCount == 0)
    return dispatchError("maxCount must be at least 1 element");
  if (request.nranks < 1)
    return dispatchError("nranks must be at least 1");
  auto table = loadTable(request);
  if (!table)
    return table.takeError();

  DispatchProgram program;
  program.request_ = request;
  Expected<int> gpus = gpuCount();
  const bool haveGpu = bool(gpus);
  consumeError(gpus.takeError());
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
  query.maxBytes = sizeMul(request.maxCount, sizeOf(request.dtype));
  if (haveGpu)
    query.multiprocessors = multiprocessorCount(0);
  query.declaredRanks = std::move(declaredRanks);
  program.plan_ = chooseDispatchPlan(*table ? &**table : nullptr, query);
  program.query_ = query;
  program.table_ = std::move(*table);
  return program;
}

Error DispatchProgram::setVariants(std::vector<DispatchVariant> variants) {
  if (variants.size() != plan_.variants.size())
    return dispatchError(fmt::format("the plan has {} variants, but {} were handed in",
                                     plan_.variants.size(), variants.size()));
  for (size_t i = 0; i < variants.size(); ++i) {
    const DispatchVariant& given = variants[i];
    const CompiledCollective& compiled = given.compiled;
    auto fail = [&](const std::string& why) {
      return dispatchError("variant " + plan_.variants[i].text() + ": " + why);
    };
    if (given.variant != plan_.variants[i])
      return fail("handed in as " + given.variant.text());
    if (compiled.kind != request_.collective)
      return fail(
          fmt::format("it is an {}, not an {}", name(compiled.kind), name(request_.collective)));
    if (compiled.dtype != request_.dtype || compiled.op != request_.op ||
        compiled.nranks != request_.nranks)
      return fail(fmt::format("compiled for {} {} and {} ranks, not {} {} and {}",
                              name(compiled.dtype), name(compiled.op), compiled.nranks,
                              name(request_.dtype), name(request_.op), request_.nranks));
    if (given.cubin.empty())
      return fail("no cubin");
  }
  variants_ = std::move(variants);
  return Error::success();
}

uint64_t DispatchProgram::heapBytes() const {
  uint64_t bytes = 0;
  for (const DispatchVariant& variant : variants_)
    bytes = sizeAdd(bytes, heapBytesFor(variant.compiled, request_.maxCount));
  return bytes;
}

std::string DispatchProgram::description() const {
  return plan_.source + "\n" + describePlan(plan_);
}

Expected<std::unique_ptr<Dispatcher>>
Dispatcher::create(SymmetricWorld& world, DispatchProgram program, uint64_t timeoutNs) {
  if (program.request().nranks != world.nranks())
    return dispatchError(fmt::format("compiled for {} ranks, but the world has {}",
                                     program.request().nranks, world.nranks()));
  if (program.variants().size() != program.plan().variants.size() || program.variants().empty())
    return dispatchError("the program's variants are not compiled (DispatchProgram::setVariants)");
  std::unique_ptr<Dispatcher> dispatcher(new Dispatcher(std::move(program)));
  for (const DispatchVariant& variant : dispatcher->program_.variants()) {
    auto instance = CollectiveInstance::create(world, variant.compiled, variant.cubin,
                                               dispatcher->maxCount(), timeoutNs);
    if (!instance)
      return joinErrors(dispatchError("variant " + variant.variant.text()), instance.takeError());
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

Error Dispatcher::launch(int rank, const void* in, void* out, uint64_t count,
                         cudaStream_t stream) const {
  if (count > maxCount())
    return dispatchError(fmt::format(
        "a call of {} elements; the dispatcher was made for at most {}", count, maxCount()));
  return instances_[variantFor(count)]->launch(rank, in, out, count, stream);
}

Error Dispatcher::synchronize(Span<const cudaStream_t> streams, double extraSeconds) const {
  // The streams are the same for every instance: the first wait does the waiting, the others
  // only read their watchdogs.
  for (const auto& instance : instances_)
    if (Error err = instance->synchronize(streams, extraSeconds))
      return err;
  return Error::success();
}

Dispatcher::~Dispatcher() {
  // Newest first, so that each instance gives its heap region back to the world.
  while (!instances_.empty())
    instances_.pop_back();
}

std::string localTopologyName(const std::vector<int>& devices) {
  auto gpus = gpuCount();
  if (!gpus) {
    consumeError(gpus.takeError());
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
