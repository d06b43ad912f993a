#include "tools/harness/RunHarness.h"

#include "runtime/Align.h"
#include "runtime/CudaCheck.h"
#include "runtime/LocalWorld.h"
#include "tools/harness/BufferSharing.h"
#include "tools/harness/HostData.h"
#include "tools/harness/InterpretedReference.h"
#include "tools/harness/RankGraphs.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace collc {

namespace {

// Mismatch lines kept in a report, over all ranks and calls.
constexpr unsigned kMaxReportedMismatches = 8;
// A generous bound on one operation's time, so that long graphs are not mistaken for hangs.
constexpr double kSecondsPerOpAllowance = 0.01;

Error harnessError(const std::string& message) {
  return makeError("run: " + message);
}

uint64_t doubleBits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

double bitsDouble(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// The streams of the ranks this process drives, in localRanks() order.
std::vector<cudaStream_t> localStreams(const SymmetricWorld& world) {
  std::vector<cudaStream_t> streams;
  for (int r : world.localRanks())
    streams.push_back(world.stream(r));
  return streams;
}

Error validateReference(const CompiledCollective& compiled, uint64_t count, bool specialValues,
                        const ir::Program* reference) {
  if (!reference)
    return harnessError("no spec program was given for '" + compiled.specName +
                        "': the reference of every run is the spec interpreted");
  if (compiled.aux.empty())
    return Error::success();
  if (compiled.rowLength > 0 && count % uint64_t(compiled.rowLength) != 0)
    return harnessError(std::to_string(count) + " elements is not a whole number of rows of " +
                        std::to_string(compiled.rowLength) + " (--hidden) for '" +
                        compiled.specName + "'");
  for (size_t k = 0; k < compiled.aux.size(); ++k)
    if (!compiled.aux[k].written && isQuantized(compiled.auxType(k)))
      return harnessError("'" + compiled.specName + "' reads aux buffer '" + compiled.aux[k].name +
                          "' of " + std::string(name(compiled.auxType(k))) +
                          " elements, which the harness does not fill");
  if (specialValues)
    return harnessError("special input values (NaN, infinities, values near overflow) are not "
                        "checked for '" +
                        compiled.specName +
                        "', whose aux buffers mix them into whole rows: one NaN would poison "
                        "every result it reaches");
  return Error::success();
}

Error validate(const SymmetricWorld& world, const CollectiveInstance& instance,
               const CompiledCollective& compiled, uint64_t count, bool specialValues,
               const ir::Program* reference, BufferSharing sharing) {
  if (Error err = validateReference(compiled, count, specialValues, reference))
    return err;
  if (Error err = checkBufferSharing(compiled, sharing, count))
    return harnessError(toString(std::move(err)));
  if (&instance.world() != &world)
    return harnessError("the instance was created for another world");
  if (compiled.nranks != world.nranks() || compiled.dtype != instance.compiled().dtype ||
      compiled.kernelName != instance.compiled().kernelName)
    return harnessError("the compiled collective is not the one the instance runs");
  if (count > instance.maxCount())
    return harnessError(std::to_string(count) + " elements asked for; the instance was made for " +
                        std::to_string(instance.maxCount()));
  return Error::success();
}

/// User buffers: `slots` inputs and outputs of one call each, laid out at 256-byte strides in one
/// allocation per local rank; host copies of every rank's inputs (each process builds them all,
/// for the reference) and of the local ranks' outputs. `local` indexes the device buffers and
/// hostOut: local[i] is world.localRanks()[i]. A fused epilogue's aux buffers (CompiledCollective
/// ::aux, index k) are laid out the same way, one allocation per buffer: those the kernel only
/// reads are random like the inputs, those it writes are poisoned and read back like the output.
/// In place, the output is the input's memory (`out` stays empty); an aux buffer aliased to
/// another (auxOwner[k] != k) is that one's memory, which holds the read buffer's random data.
struct RankBuffers {
  uint64_t inStride = 0, outStride = 0;
  int slots = 0;
  bool inPlace = false;
  std::vector<int> local;
  std::vector<DeviceBuffer> in, out;                   // per local rank
  std::vector<std::vector<char>> hostIn;               // per rank of the world
  std::vector<std::vector<char>> hostOut;              // per local rank
  std::vector<uint64_t> auxStride;                     // per aux buffer
  std::vector<bool> auxWritten;                        // per aux buffer
  std::vector<int> auxOwner;                           // per aux buffer: whose memory it uses
  std::vector<std::vector<DeviceBuffer>> aux;          // [local rank][aux buffer]; empty if aliased
  std::vector<std::vector<std::vector<char>>> hostAux; // [rank of the world][aux buffer]

  char* deviceIn(size_t i, int slot) const { return in[i].as<char>() + slot * inStride; }
  /// Local rank i's output memory, all slots: the input's in place.
  const DeviceBuffer& outMemory(size_t i) const { return inPlace ? in[i] : out[i]; }
  char* deviceOut(size_t i, int slot) const { return outMemory(i).as<char>() + slot * outStride; }
  /// Local rank i's memory of aux buffer k, all slots: its own, or the buffer it is aliased to.
  const DeviceBuffer& auxMemory(size_t i, size_t k) const { return aux[i][size_t(auxOwner[k])]; }
  const char* inputOf(int rank, int slot) const { return hostIn[rank].data() + slot * inStride; }
  const char* outputOf(size_t i, int slot) const { return hostOut[i].data() + slot * outStride; }
  /// Local rank i's device pointers of every aux buffer for `slot`, in collc_params::aux order.
  std::vector<void*> deviceAux(size_t i, int slot) const {
    std::vector<void*> pointers;
    for (size_t k = 0; k < auxStride.size(); ++k)
      pointers.push_back(auxMemory(i, k).as<char>() + slot * auxStride[k]);
    return pointers;
  }
  const char* auxOf(int rank, size_t k, int slot) const {
    return hostAux[rank][k].data() + slot * auxStride[k];
  }
};

/// `sharing` must have passed checkBufferSharing (validate).
Expected<RankBuffers> allocateBuffers(const SymmetricWorld& world,
                                      const CompiledCollective& compiled, uint64_t count, int slots,
                                      BufferSharing sharing) {
  RankBuffers buffers;
  const uint64_t elementBytes = sizeOf(compiled.dtype);
  buffers.inStride = alignUp(compiled.inputCount(count) * elementBytes, 256);
  buffers.outStride = alignUp(bytesOf(compiled.outputType(), compiled.outputCount(count)), 256);
  buffers.slots = slots;
  buffers.inPlace = sharing.inPlace;
  buffers.local = world.localRanks();
  for (int r : buffers.local) {
    Expected<DeviceBuffer> in = DeviceBuffer::allocate(world.device(r), buffers.inStride * slots);
    if (!in)
      return in.takeError();
    buffers.in.push_back(std::move(*in));
    buffers.hostOut.emplace_back(buffers.outStride * slots);
    if (sharing.inPlace)
      continue;
    Expected<DeviceBuffer> out = DeviceBuffer::allocate(world.device(r), buffers.outStride * slots);
    if (!out)
      return out.takeError();
    buffers.out.push_back(std::move(*out));
  }
  for (int r = 0; r < world.nranks(); ++r)
    buffers.hostIn.emplace_back(buffers.inStride * slots);
  if (compiled.aux.empty())
    return buffers;
  for (size_t k = 0; k < compiled.aux.size(); ++k) {
    const AuxBuffer& aux = compiled.aux[k];
    buffers.auxStride.push_back(alignUp(bytesOf(compiled.auxType(k), aux.elements(count)), 256));
    buffers.auxWritten.push_back(aux.written);
  }
  buffers.auxOwner = auxMemoryOwners(compiled, sharing);
  for (int r : buffers.local) {
    std::vector<DeviceBuffer> perBuffer;
    for (size_t k = 0; k < buffers.auxStride.size(); ++k) {
      if (buffers.auxOwner[k] != int(k)) { // the memory of the buffer it is aliased to
        perBuffer.emplace_back();
        continue;
      }
      Expected<DeviceBuffer> aux =
          DeviceBuffer::allocate(world.device(r), buffers.auxStride[k] * slots);
      if (!aux)
        return aux.takeError();
      perBuffer.push_back(std::move(*aux));
    }
    buffers.aux.push_back(std::move(perBuffer));
  }
  for (int r = 0; r < world.nranks(); ++r) {
    std::vector<std::vector<char>> perBuffer;
    for (uint64_t stride : buffers.auxStride)
      perBuffer.emplace_back(stride * slots);
    buffers.hostAux.push_back(std::move(perBuffer));
  }
  return buffers;
}

/// Fresh random inputs for every slot of every rank of the world, from (seed, round, rank) alone:
/// every process computes the same values.
void randomizeInputs(RankBuffers& buffers, const CompiledCollective& compiled, uint64_t count,
                     uint64_t seed, uint64_t round, bool specialValues) {
  const uint64_t elements = compiled.inputCount(count);
  for (size_t r = 0; r < buffers.hostIn.size(); ++r) {
    std::mt19937_64 rng(rankInputSeed(seed, round, static_cast<int>(r)));
    for (int slot = 0; slot < buffers.slots; ++slot)
      (specialValues ? fillRandomWithSpecials : fillRandom)(
          compiled.dtype, buffers.hostIn[r].data() + slot * buffers.inStride, elements, rng);
    // The aux buffers the kernel reads (residual, weight) continue the rank's own sequence.
    for (size_t k = 0; k < buffers.auxStride.size(); ++k) {
      if (buffers.auxWritten[k])
        continue;
      for (int slot = 0; slot < buffers.slots; ++slot)
        fillRandomElements(
            compiled.auxType(k), buffers.hostAux[r][k].data() + slot * buffers.auxStride[k],
            compiled.aux[k].elements(count), rng); // validate refused types it cannot fill
    }
  }
}

/// Copies the local ranks' host inputs to their devices and fills the outputs with 0xFF bytes, a
/// NaN in every type, so that an element the kernel never writes fails the comparison. Memory
/// shared by an output and an input holds the input. Streams must be idle: copies from pageable
/// memory may wait for them. The caller synchronizes.
Error uploadInputsPoisonOutputs(const SymmetricWorld& world, const RankBuffers& buffers) {
  ScopedDevice restore;
  for (size_t i = 0; i < buffers.local.size(); ++i) {
    const int r = buffers.local[i];
    COLLC_CUDA_TRY(cudaSetDevice(world.device(r)));
    COLLC_CUDA_TRY(cudaMemcpyAsync(buffers.in[i].get(), buffers.hostIn[r].data(),
                                   buffers.hostIn[r].size(), cudaMemcpyHostToDevice,
                                   world.stream(r)));
    if (!buffers.inPlace)
      COLLC_CUDA_TRY(
          cudaMemsetAsync(buffers.out[i].get(), 0xFF, buffers.out[i].bytes(), world.stream(r)));
    for (size_t k = 0; k < buffers.auxStride.size(); ++k) {
      if (buffers.auxOwner[k] != int(k))
        continue; // aliased: its memory is the read buffer's, uploaded below or above
      if (buffers.auxWritten[k])
        COLLC_CUDA_TRY(cudaMemsetAsync(buffers.aux[i][k].get(), 0xFF, buffers.aux[i][k].bytes(),
                                       world.stream(r)));
      else
        COLLC_CUDA_TRY(cudaMemcpyAsync(buffers.aux[i][k].get(), buffers.hostAux[r][k].data(),
                                       buffers.hostAux[r][k].size(), cudaMemcpyHostToDevice,
                                       world.stream(r)));
    }
  }
  return Error::success();
}

/// Copies the local ranks' outputs back. Streams must be idle (see above).
Error downloadOutputs(const SymmetricWorld& world, RankBuffers& buffers) {
  ScopedDevice restore;
  for (size_t i = 0; i < buffers.local.size(); ++i) {
    const int r = buffers.local[i];
    COLLC_CUDA_TRY(cudaSetDevice(world.device(r)));
    COLLC_CUDA_TRY(cudaMemcpyAsync(buffers.hostOut[i].data(), buffers.outMemory(i).get(),
                                   buffers.hostOut[i].size(), cudaMemcpyDeviceToHost,
                                   world.stream(r)));
    for (size_t k = 0; k < buffers.auxStride.size(); ++k)
      if (buffers.auxWritten[k])
        COLLC_CUDA_TRY(cudaMemcpyAsync(buffers.hostAux[r][k].data(), buffers.auxMemory(i, k).get(),
                                       buffers.hostAux[r][k].size(), cudaMemcpyDeviceToHost,
                                       world.stream(r)));
  }
  return Error::success();
}

/// Verdicts of this process's ranks: how many checked calls each got wrong.
struct LocalVerdicts {
  std::vector<uint64_t> wrongCalls; // per local rank
  /// Quantized elements held to either neighbouring code, per local rank (nearBoundaryOf).
  std::vector<uint64_t> nearBoundary;
  int checkedCalls = 0;
};

/// Elements one rank's check compares: its output and every aux buffer the kernel writes.
uint64_t checkedElements(const CompiledCollective& compiled, uint64_t count) {
  uint64_t elements = compiled.outputCount(count);
  for (const AuxBuffer& aux : compiled.aux)
    if (aux.written)
      elements += aux.elements(count);
  return elements;
}

/// Rank `rank`'s quantized (E4M3, E2M1) elements that the reference holds to either neighbouring
/// code: those whose bound is above 0 (interpret::BoundedResult::nearRoundingBoundary), NVFP4's
/// block scales among them.
uint64_t nearBoundaryOf(const CompiledCollective& compiled, const InterpretedReference& expected,
                        int rank) {
  auto count = [](const std::vector<double>& bound) {
    return uint64_t(std::count_if(bound.begin(), bound.end(), [](double b) { return b > 0; }));
  };
  uint64_t near =
      isQuantized(compiled.outputType()) ? count(expected.bound.output[size_t(rank)]) : 0;
  for (size_t k = 0; k < compiled.aux.size(); ++k)
    if (compiled.aux[k].written && isQuantized(compiled.auxType(k)))
      near += count(expected.bound.aux[size_t(rank)][k]);
  return near;
}

/// Compares slot `slot` of every local rank's output (and written aux buffers) with `reference`
/// interpreted on slot `slot` of every rank's input; adds mismatch lines to the report. An error
/// where the spec cannot be interpreted for this call.
Error checkSlot(const RankBuffers& buffers, const CompiledCollective& compiled, uint64_t count,
                int slot, const std::string& what, RunReport& report, LocalVerdicts& verdicts,
                const ir::Program& reference) {
  std::vector<const void*> inputs;
  for (size_t r = 0; r < buffers.hostIn.size(); ++r)
    inputs.push_back(buffers.inputOf(static_cast<int>(r), slot));
  // The aux buffers the kernel only reads, as every rank gave them; those it writes start
  // unwritten.
  std::vector<std::vector<const void*>> aux(buffers.hostIn.size());
  for (size_t r = 0; r < aux.size(); ++r)
    for (size_t k = 0; k < compiled.aux.size(); ++k)
      aux[r].push_back(buffers.auxWritten[k] ? nullptr
                                             : buffers.auxOf(static_cast<int>(r), k, slot));
  // What the kernel wrote into the aux buffers, for the local ranks: a quantized output is held
  // to the rows its norm read (InterpretedReference.h).
  std::vector<std::vector<const void*>> written(buffers.hostIn.size());
  for (int rank : buffers.local)
    for (size_t k = 0; k < compiled.aux.size(); ++k)
      written[size_t(rank)].push_back(buffers.auxWritten[k] ? buffers.auxOf(rank, k, slot)
                                                            : nullptr);
  InterpretedReference expected;
  try {
    expected = interpretReference(reference, compiled, count, inputs, aux, written);
  } catch (const interpret::InterpretError& error) {
    return harnessError("the reference of '" + compiled.specName + "': " + error.what());
  }
  verdicts.wrongCalls.resize(buffers.local.size(), 0);
  verdicts.nearBoundary.resize(buffers.local.size(), 0);
  report.quantized = isQuantized(compiled.outputType());
  for (size_t k = 0; k < compiled.aux.size(); ++k)
    report.quantized |= isQuantized(compiled.auxType(k));
  for (size_t i = 0; i < buffers.local.size(); ++i) {
    const int rank = buffers.local[i];
    // The output and every aux buffer the kernel writes.
    const std::string label = what + " rank " + std::to_string(rank);
    // This process's ranks, whose quantized outputs were referenced from their own rows; other
    // processes' ranks are added by gatherVerdicts.
    const uint64_t near = nearBoundaryOf(compiled, expected, rank);
    verdicts.nearBoundary[i] += near;
    report.nearRoundingBoundary += near;
    Comparison comparison =
        compareInterpreted(compiled.outputType(), expected.value.output[size_t(rank)],
                           expected.bound.output[size_t(rank)], buffers.outputOf(i, slot),
                           label + " out", kMaxReportedMismatches);
    for (size_t k = 0; k < compiled.aux.size(); ++k) {
      if (!buffers.auxWritten[k])
        continue;
      Comparison written =
          compareInterpreted(compiled.auxType(k), expected.value.aux[size_t(rank)][k],
                             expected.bound.aux[size_t(rank)][k], buffers.auxOf(rank, k, slot),
                             label + " " + compiled.aux[k].name, kMaxReportedMismatches);
      comparison.mismatches += written.mismatches;
      comparison.firstMismatches += written.firstMismatches;
    }
    report.checkedElements += checkedElements(compiled, count);
    if (comparison.ok())
      continue;
    ++verdicts.wrongCalls[i];
    ++report.wrongRankCalls;
    report.wrongElements += comparison.mismatches;
    if (std::count(report.firstMismatches.begin(), report.firstMismatches.end(), '\n') <
        kMaxReportedMismatches)
      report.firstMismatches += label + ": " + std::to_string(comparison.mismatches) + " of " +
                                std::to_string(checkedElements(compiled, count)) +
                                " elements wrong\n" + comparison.firstMismatches;
  }
  ++verdicts.checkedCalls;
  ++report.checkedCalls;
  return Error::success();
}

/// Gathers every rank's verdict: the report is correct only if every rank of the world was.
/// Ranks of other processes that got something wrong are named (their details are in their own
/// reports).
Error gatherVerdicts(SymmetricWorld& world, const LocalVerdicts& verdicts, RunReport& report) {
  // Per rank: its wrong calls, and its quantized elements near a rounding boundary.
  std::vector<uint64_t> table(size_t(world.nranks()) * 2, 0);
  const std::vector<int>& local = world.localRanks();
  for (size_t i = 0; i < local.size(); ++i) {
    table[size_t(local[i]) * 2] = i < verdicts.wrongCalls.size() ? verdicts.wrongCalls[i] : 0;
    table[size_t(local[i]) * 2 + 1] =
        i < verdicts.nearBoundary.size() ? verdicts.nearBoundary[i] : 0;
  }
  if (Error err = world.allGatherRanks("run verdicts", table, 2))
    return err;
  report.correct = true;
  for (int r = 0; r < world.nranks(); ++r) {
    if (!world.isLocal(r))
      report.nearRoundingBoundary += table[size_t(r) * 2 + 1];
    const uint64_t wrong = table[size_t(r) * 2];
    if (wrong == 0)
      continue;
    report.correct = false;
    if (!world.isLocal(r))
      report.firstMismatches += "rank " + std::to_string(r) + ": " + std::to_string(wrong) +
                                " of " + std::to_string(verdicts.checkedCalls) +
                                " checked calls wrong (its own report has the details)\n";
  }
  return Error::success();
}

/// Gathers `perLocalRank[i][k]` (k < width) of every rank: result[r][k].
Expected<std::vector<std::vector<double>>>
gatherTimes(SymmetricWorld& world, const std::vector<std::vector<double>>& perLocalRank,
            unsigned width, std::string_view what) {
  std::vector<uint64_t> table(size_t(world.nranks()) * width, 0);
  const std::vector<int>& local = world.localRanks();
  for (size_t i = 0; i < local.size(); ++i)
    for (unsigned k = 0; k < width; ++k)
      table[size_t(local[i]) * width + k] = doubleBits(perLocalRank[i][k]);
  if (Error err = world.allGatherRanks(what, table, width))
    return err;
  std::vector<std::vector<double>> all(world.nranks(), std::vector<double>(width));
  for (int r = 0; r < world.nranks(); ++r)
    for (unsigned k = 0; k < width; ++k)
      all[r][k] = bitsDouble(table[size_t(r) * width + k]);
  return all;
}

/// Launches every local rank's graph, each between its rank's timer events, in rank order; the
/// ranks synchronize among themselves on the device. Waits (bounded) and returns the local
/// ranks' replay times in microseconds.
Expected<std::vector<double>> replayTimed(SymmetricWorld& world, CollectiveInstance& instance,
                                          RankGraphs& graphs, RankTimers& timers, int opsPerGraph) {
  for (int r : world.localRanks()) {
    if (Error err = timers.start(r))
      return err;
    if (Error err = graphs.launch(r))
      return err;
    if (Error err = timers.stop(r))
      return err;
  }
  if (Error err = instance.synchronize(localStreams(world), opsPerGraph * kSecondsPerOpAllowance))
    return err;
  std::vector<double> us;
  for (int r : world.localRanks()) {
    Expected<double> elapsed = timers.elapsedUs(r);
    if (!elapsed)
      return elapsed.takeError();
    us.push_back(*elapsed);
  }
  return us;
}

/// Enqueues local rank i's part of one call on slot `slot`'s buffers (and aux buffers, if any).
Error launchSlot(CollectiveInstance& instance, const RankBuffers& buffers, size_t i, int slot,
                 uint64_t count, cudaStream_t stream) {
  if (buffers.auxStride.empty())
    return instance.launch(buffers.local[i], buffers.deviceIn(i, slot), buffers.deviceOut(i, slot),
                           count, stream);
  return instance.launch(buffers.local[i], buffers.deviceIn(i, slot), buffers.deviceOut(i, slot),
                         buffers.deviceAux(i, slot), count, stream);
}

} // namespace

uint64_t rankInputSeed(uint64_t seed, uint64_t round, int rank) {
  // SplitMix64's finalizer over each argument in turn: nearby arguments give unrelated seeds.
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  return mix(mix(mix(seed) ^ round) ^ uint64_t(uint32_t(rank)));
}

Expected<RunReport> runAndCheck(SymmetricWorld& world, CollectiveInstance& instance,
                                const CompiledCollective& compiled, const RunOptions& options) {
  const uint64_t count = options.count;
  if (Error err = validate(world, instance, compiled, count, options.specialValues,
                           options.reference.get(), options.sharing))
    return err;
  if (options.time && (options.graphOps < 1 || options.replays < 1))
    return harnessError("timing needs at least one operation per graph and one replay");
  // Calls that share memory change their inputs: the timed graph's calls but the last one reduce
  // each other's results in slot 0, and the last one runs on fresh inputs in slot 1, checked.
  const int checkedSlot = options.time && options.sharing.any() ? 1 : 0;
  Expected<RankBuffers> allocated =
      allocateBuffers(world, compiled, count, checkedSlot + 1, options.sharing);
  if (!allocated)
    return allocated.takeError();
  RankBuffers& buffers = *allocated;
  const std::vector<int>& local = world.localRanks();
  const std::vector<cudaStream_t> streams = localStreams(world);
  uint64_t round = 0;
  RunReport report;
  LocalVerdicts verdicts;

  // Fresh inputs on every rank, outputs poisoned, and all of it on the devices of every process
  // before any rank launches.
  auto prepare = [&]() -> Error {
    randomizeInputs(buffers, compiled, count, options.seed, round++, options.specialValues);
    if (Error err = uploadInputsPoisonOutputs(world, buffers))
      return err;
    if (Error err = instance.synchronize(streams))
      return err;
    return world.barrier("inputs ready");
  };
  auto fetchAndCheck = [&](const std::string& what, int slot) -> Error {
    if (Error err = downloadOutputs(world, buffers))
      return err;
    if (Error err = instance.synchronize(streams))
      return err;
    return checkSlot(buffers, compiled, count, slot, what, report, verdicts, *options.reference);
  };

  for (int call = 0; call < options.checks; ++call) {
    if (Error err = prepare())
      return err;
    for (size_t i = 0; i < local.size(); ++i)
      if (Error err = launchSlot(instance, buffers, i, 0, count, streams[i]))
        return err;
    if (Error err = instance.synchronize(streams, kSecondsPerOpAllowance))
      return err;
    if (Error err = fetchAndCheck("call " + std::to_string(call), 0))
      return err;
  }
  if (!options.time) {
    if (Error err = gatherVerdicts(world, verdicts, report))
      return err;
    return report;
  }

  RankGraphs graphs(world);
  for (size_t i = 0; i < local.size(); ++i) {
    Error captured = graphs.capture(local[i], [&]() -> Error {
      for (int op = 0; op < options.graphOps; ++op) {
        const int slot = op + 1 == options.graphOps ? checkedSlot : 0;
        if (Error err = launchSlot(instance, buffers, i, slot, count, streams[i]))
          return err;
      }
      return Error::success();
    });
    if (captured)
      return captured;
  }
  Expected<std::unique_ptr<RankTimers>> timers = RankTimers::create(world);
  if (!timers)
    return timers.takeError();
  // The first replay uploads the graphs and warms caches and clocks; it is not timed.
  if (Expected<std::vector<double>> warmup =
          replayTimed(world, instance, graphs, **timers, options.graphOps);
      !warmup)
    return warmup.takeError();

  std::vector<std::vector<double>> localTimes(local.size());
  for (int replay = 0; replay < options.replays; ++replay) {
    if (Error err = prepare())
      return err;
    Expected<std::vector<double>> us =
        replayTimed(world, instance, graphs, **timers, options.graphOps);
    if (!us)
      return us.takeError();
    for (size_t i = 0; i < local.size(); ++i)
      localTimes[i].push_back((*us)[i] / options.graphOps);
  }
  Expected<std::vector<std::vector<double>>> times =
      gatherTimes(world, localTimes, unsigned(options.replays), "run timings");
  if (!times)
    return times.takeError();
  std::vector<double> slowest(options.replays, 0);
  for (const std::vector<double>& rankTimes : *times) {
    for (int replay = 0; replay < options.replays; ++replay)
      slowest[replay] = std::max(slowest[replay], rankTimes[replay]);
    report.usPerOpPerRank.push_back(median(rankTimes));
  }
  report.usPerOp = median(slowest);
  // The outputs now hold the last replay's last operation, computed from the last inputs.
  if (Error err = fetchAndCheck("graph replay " + std::to_string(options.replays) + " op " +
                                    std::to_string(options.graphOps),
                                checkedSlot))
    return err;
  if (Error err = gatherVerdicts(world, verdicts, report))
    return err;
  return report;
}

Expected<RunReport> runGraphStress(SymmetricWorld& world, CollectiveInstance& instance,
                                   const CompiledCollective& compiled, uint64_t count, int calls,
                                   uint64_t seed, const ir::Program* reference, bool specialValues,
                                   BufferSharing sharing) {
  if (Error err = validate(world, instance, compiled, count, specialValues, reference, sharing))
    return err;
  if (calls < 1)
    return harnessError("a stress graph needs at least one call");
  Expected<RankBuffers> allocated = allocateBuffers(world, compiled, count, calls, sharing);
  if (!allocated)
    return allocated.takeError();
  RankBuffers& buffers = *allocated;
  const std::vector<int>& local = world.localRanks();
  const std::vector<cudaStream_t> streams = localStreams(world);
  randomizeInputs(buffers, compiled, count, seed, /*round=*/0, specialValues);
  if (Error err = uploadInputsPoisonOutputs(world, buffers))
    return err;
  if (Error err = instance.synchronize(streams))
    return err;

  RankGraphs graphs(world);
  for (size_t i = 0; i < local.size(); ++i) {
    Error captured = graphs.capture(local[i], [&]() -> Error {
      for (int call = 0; call < calls; ++call)
        if (Error err = launchSlot(instance, buffers, i, call, count, streams[i]))
          return err;
      return Error::success();
    });
    if (captured)
      return captured;
  }
  Expected<std::unique_ptr<RankTimers>> timers = RankTimers::create(world);
  if (!timers)
    return timers.takeError();
  if (Error err = world.barrier("stress inputs ready"))
    return err;
  Expected<std::vector<double>> us = replayTimed(world, instance, graphs, **timers, calls);
  if (!us)
    return us.takeError();

  if (Error err = downloadOutputs(world, buffers))
    return err;
  if (Error err = instance.synchronize(streams))
    return err;
  RunReport report;
  LocalVerdicts verdicts;
  for (int call = 0; call < calls; ++call)
    if (Error err = checkSlot(buffers, compiled, count, call, "call " + std::to_string(call),
                              report, verdicts, *reference))
      return err;
  uint64_t wrongCalls = 0;
  for (uint64_t wrong : verdicts.wrongCalls)
    wrongCalls += wrong;
  if (wrongCalls)
    report.firstMismatches = std::to_string(wrongCalls) + " of " + std::to_string(calls) +
                             " calls wrong on this process's ranks; the first ones:\n" +
                             report.firstMismatches;
  if (Error err = gatherVerdicts(world, verdicts, report))
    return err;
  std::vector<std::vector<double>> localTimes;
  for (double rankUs : *us)
    localTimes.push_back({rankUs / calls});
  Expected<std::vector<std::vector<double>>> times =
      gatherTimes(world, localTimes, 1, "stress timings");
  if (!times)
    return times.takeError();
  for (const std::vector<double>& rankTimes : *times)
    report.usPerOpPerRank.push_back(rankTimes[0]);
  report.usPerOp = *std::max_element(report.usPerOpPerRank.begin(), report.usPerOpPerRank.end());
  return report;
}

} // namespace collc
