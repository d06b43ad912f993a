#include "tools/bench/FusedNormBench.h"

#include "compiler/RowEpilogue.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/CudaCheck.h"
#include "runtime/LoadedKernel.h"
#include "tools/bench/PlainRmsNorm.h"
#include "tools/harness/HostData.h"
#include "tools/harness/InterpretedReference.h"
#include "tools/harness/RankGraphs.h"
#include "tools/harness/RunHarness.h"

#include <algorithm>
#include <random>

namespace collc {

namespace {

// As the run harness: a generous bound on one operation, so long graphs are not taken for hangs.
constexpr double kSecondsPerOpAllowance = 0.01;

Error benchError(const std::string& message) {
  return makeError("bench allreduce_rmsnorm: " + message);
}

/// The unfused pipeline's buffers of one local rank: the AllReduce writes `sum`, which the plain
/// kernel reads with the residual and the weight (in the fused spec's aux order).
struct UnfusedRank {
  DeviceBuffer in, sum, out;
  std::vector<DeviceBuffer> aux;
};

/// Host data of one call: every rank's input, and every rank's aux buffers.
struct HostCall {
  std::vector<std::vector<char>> in;               // [rank]
  std::vector<std::vector<std::vector<char>>> aux; // [rank][aux buffer]
};

HostCall randomCall(const CompiledCollective& fused, uint64_t count, int nranks, uint64_t seed,
                    uint64_t round) {
  const unsigned elementBytes = sizeOf(fused.dtype);
  HostCall call;
  for (int r = 0; r < nranks; ++r) {
    std::mt19937_64 rng(rankInputSeed(seed, round, r));
    call.in.emplace_back(count * elementBytes);
    fillRandom(fused.dtype, call.in.back().data(), count, rng);
    std::vector<std::vector<char>> aux;
    for (const AuxBuffer& buffer : fused.aux) {
      aux.emplace_back(buffer.elements(count) * elementBytes);
      if (!buffer.written)
        fillRandom(fused.dtype, aux.back().data(), buffer.elements(count), rng);
    }
    call.aux.push_back(std::move(aux));
  }
  return call;
}

/// The fused kernel through the run harness: checked calls, then the timed graph.
Expected<double> timeFused(LocalWorld& world, const JittedCollective& fused, uint64_t count,
                           const FusedNormBenchSettings& settings) {
  auto instance =
      CollectiveInstance::create(world, fused.compiled, fused.image, count, settings.timeoutNs);
  if (!instance)
    return instance.takeError();
  RunOptions options;
  options.reference = fused.spec;
  options.count = count;
  options.graphOps = settings.graphOps;
  options.replays = settings.replays;
  options.seed = settings.seed;
  auto report = runAndCheck(world, **instance, fused.compiled, options);
  if (!report)
    return report.takeError();
  if (!report->correct)
    return benchError("the fused kernel is WRONG at " + std::to_string(count) + " elements:\n" +
                      report->firstMismatches);
  return report->usPerOp;
}

/// allreduce_oneshot then the plain kernel: checked once eagerly, then timed like the fused one.
Expected<double> timeUnfused(LocalWorld& world, const JittedCollective& fused,
                             const JittedCollective& allReduce, const LoadedKernel& plain,
                             int plainThreads, uint64_t count,
                             const FusedNormBenchSettings& settings) {
  const CompiledCollective& spec = fused.compiled;
  auto instance = CollectiveInstance::create(world, allReduce.compiled, allReduce.image, count,
                                             settings.timeoutNs);
  if (!instance)
    return instance.takeError();
  const std::vector<int>& local = world.localRanks();
  std::vector<cudaStream_t> streams;
  for (int r : local)
    streams.push_back(world.stream(r));
  const uint64_t bytes = count * sizeOf(spec.dtype);
  std::vector<UnfusedRank> ranks;
  for (int r : local) {
    UnfusedRank rank;
    for (DeviceBuffer* buffer : {&rank.in, &rank.sum, &rank.out}) {
      auto allocated = DeviceBuffer::allocate(world.device(r), bytes);
      if (!allocated)
        return allocated.takeError();
      *buffer = std::move(*allocated);
    }
    for (const AuxBuffer& aux : spec.aux) {
      auto allocated =
          DeviceBuffer::allocate(world.device(r), aux.elements(count) * sizeOf(spec.dtype));
      if (!allocated)
        return allocated.takeError();
      rank.aux.push_back(std::move(*allocated));
    }
    ranks.push_back(std::move(rank));
  }

  // Upload one call's data; poison what the pipeline writes, so an element never written fails.
  HostCall host = randomCall(spec, count, world.nranks(), settings.seed ^ 0x5eed, count);
  {
    ScopedDevice restore;
    for (size_t i = 0; i < local.size(); ++i) {
      const int r = local[i];
      COLLC_CUDA_TRY(cudaSetDevice(world.device(r)));
      COLLC_CUDA_TRY(cudaMemcpyAsync(ranks[i].in.get(), host.in[r].data(), bytes,
                                     cudaMemcpyHostToDevice, streams[i]));
      COLLC_CUDA_TRY(cudaMemsetAsync(ranks[i].sum.get(), 0xFF, bytes, streams[i]));
      COLLC_CUDA_TRY(cudaMemsetAsync(ranks[i].out.get(), 0xFF, bytes, streams[i]));
      for (size_t k = 0; k < spec.aux.size(); ++k) {
        if (spec.aux[k].written)
          COLLC_CUDA_TRY(
              cudaMemsetAsync(ranks[i].aux[k].get(), 0xFF, ranks[i].aux[k].bytes(), streams[i]));
        else
          COLLC_CUDA_TRY(cudaMemcpyAsync(ranks[i].aux[k].get(), host.aux[r][k].data(),
                                         host.aux[r][k].size(), cudaMemcpyHostToDevice,
                                         streams[i]));
      }
    }
  }
  if (Error err = (*instance)->synchronize(streams))
    return err;

  const uint64_t rows = count / uint64_t(spec.rowLength);
  auto enqueue = [&](size_t i) -> Error {
    const int r = local[i];
    if (Error err =
            (*instance)->launch(r, ranks[i].in.get(), ranks[i].sum.get(), count, streams[i]))
      return err;
    collc_params params{};
    params.in = ranks[i].sum.get();
    params.out = ranks[i].out.get();
    params.count = count;
    params.rank = r;
    params.nranks = world.nranks();
    for (size_t k = 0; k < ranks[i].aux.size(); ++k)
      params.aux[k] = ranks[i].aux[k].get();
    return plain.launch(r, dim3(unsigned(std::min<uint64_t>(rows, 1024))),
                        dim3(unsigned(plainThreads)), params, streams[i]);
  };

  for (size_t i = 0; i < local.size(); ++i)
    if (Error err = enqueue(i))
      return err;
  if (Error err = (*instance)->synchronize(streams, kSecondsPerOpAllowance))
    return err;
  // The unfused pipeline computes what the fused spec does: its reference is that spec
  // interpreted on the same data (the aux buffers it reads as every rank gave them).
  const AddRmsNormEpilogue e = *findAddRmsNorm(*fused.spec);
  std::vector<const void*> inputs;
  for (const auto& in : host.in)
    inputs.push_back(in.data());
  std::vector<std::vector<const void*>> aux(host.aux.size());
  for (size_t r = 0; r < aux.size(); ++r)
    for (size_t k = 0; k < spec.aux.size(); ++k)
      aux[r].push_back(spec.aux[k].written ? nullptr : host.aux[r][k].data());
  InterpretedReference expected;
  try {
    expected = interpretReference(*fused.spec, spec, count, inputs, aux);
  } catch (const interpret::InterpretError& error) {
    return benchError(std::string("the reference: ") + error.what());
  }
  for (size_t i = 0; i < local.size(); ++i) {
    const int r = local[i];
    std::vector<char> residualOut(bytes), out(bytes);
    {
      ScopedDevice restore;
      COLLC_CUDA_TRY(cudaSetDevice(world.device(r)));
      COLLC_CUDA_TRY(cudaMemcpy(residualOut.data(), ranks[i].aux[size_t(e.residualOut)].get(),
                                bytes, cudaMemcpyDeviceToHost));
      COLLC_CUDA_TRY(cudaMemcpy(out.data(), ranks[i].out.get(), bytes, cudaMemcpyDeviceToHost));
    }
    const std::string label = "unfused rank " + std::to_string(r);
    Comparison comparison = compareInterpreted(
        spec.dtype, expected.value.aux[r][size_t(e.residualOut)],
        expected.bound.aux[r][size_t(e.residualOut)], residualOut.data(), label + " residual_out");
    const Comparison norm = compareInterpreted(
        spec.dtype, expected.value.output[r], expected.bound.output[r], out.data(), label + " out");
    comparison.mismatches += norm.mismatches;
    comparison.firstMismatches += norm.firstMismatches;
    if (!comparison.ok())
      return benchError("the unfused baseline is WRONG at " + std::to_string(count) +
                        " elements:\n" + comparison.firstMismatches);
  }

  RankGraphs graphs(world);
  for (size_t i = 0; i < local.size(); ++i) {
    Error captured = graphs.capture(local[i], [&]() -> Error {
      for (int op = 0; op < settings.graphOps; ++op)
        if (Error err = enqueue(i))
          return err;
      return Error::success();
    });
    if (captured)
      return captured;
  }
  return medianSlowestReplayUs(world, graphs, settings.graphOps, settings.replays, [&] {
    return (*instance)->synchronize(streams, settings.graphOps * kSecondsPerOpAllowance);
  });
}

} // namespace

Expected<std::vector<FusedNormPoint>> benchFusedRmsNorm(LocalWorld& world,
                                                        const JittedCollective& fused,
                                                        const JittedCollective& allReduce,
                                                        const std::string& plainImage,
                                                        const FusedNormBenchSettings& settings) {
  const CompiledCollective& spec = fused.compiled;
  if (!fused.spec || !findAddRmsNorm(*fused.spec) || spec.rowLength <= 0)
    return benchError("'" + spec.specName + "' is not the fused residual add + RMSNorm");
  if (allReduce.compiled.kind != CollectiveKind::AllReduce ||
      allReduce.compiled.op != ReduceOp::Sum || allReduce.compiled.dtype != spec.dtype ||
      !allReduce.compiled.aux.empty())
    return benchError("the unfused baseline needs a plain AllReduce sum of " +
                      std::string(name(spec.dtype)));
  if (settings.graphOps < 1 || settings.replays < 1)
    return benchError("timing needs at least one operation per graph and one replay");
  auto kernel = plainRmsNormKernel(spec, *fused.spec);
  if (!kernel)
    return kernel.takeError();
  std::vector<int> devices;
  for (int r = 0; r < world.nranks(); ++r)
    devices.push_back(world.device(r));
  auto plain = LoadedKernel::load(devices, plainImage, kernel->name);
  if (!plain)
    return plain.takeError();
  std::vector<FusedNormPoint> points;
  for (uint64_t tokens : settings.tokens) {
    const uint64_t count = tokens * uint64_t(spec.rowLength);
    FusedNormPoint point;
    point.tokens = tokens;
    auto fusedUs = timeFused(world, fused, count, settings);
    if (!fusedUs)
      return fusedUs.takeError();
    point.fusedUs = *fusedUs;
    auto unfusedUs =
        timeUnfused(world, fused, allReduce, **plain, kernel->threads, count, settings);
    if (!unfusedUs)
      return unfusedUs.takeError();
    point.unfusedUs = *unfusedUs;
    points.push_back(point);
  }
  return points;
}

} // namespace collc
