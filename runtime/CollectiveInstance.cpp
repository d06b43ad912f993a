#include "runtime/CollectiveInstance.h"

#include "abi/collc_abi.h"
#include "runtime/BufferOverlap.h"
#include "runtime/CallCheck.h"
#include "runtime/CoResidency.h"
#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"
#include "runtime/HeapSize.h"
#include "runtime/NcclLibrary.h"
#include "runtime/RankLaunch.h"
#include "runtime/StreamOrder.h"
#include "runtime/StreamPoll.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fmt/format.h>

namespace collc {

namespace {

using Clock = std::chrono::steady_clock;

Error instanceError(const CompiledCollective& compiled, const std::string& message) {
  return makeError("collective '" + compiled.specName + "' (kernel " + compiled.kernelName +
                   "): " + message);
}

/// The ranks (ranks[i] for done[i] false) still running, "0, 1".
std::string listRanks(const std::vector<bool>& done, Span<const int> ranks) {
  std::string list;
  for (size_t i = 0; i < done.size(); ++i)
    if (!done[i])
      list += (list.empty() ? "" : ", ") + std::to_string(ranks[i]);
  return list;
}

/// " (what the world knows about its peers)", or nothing.
std::string peerNote(const SymmetricWorld& world) {
  std::string peers = world.diagnosePeers();
  return peers.empty() ? std::string() : " (" + peers + ")";
}

} // namespace

Expected<std::unique_ptr<CollectiveInstance>>
CollectiveInstance::create(SymmetricWorld& world, const CompiledCollective& compiled,
                           const std::string& cubin, uint64_t maxCount, uint64_t timeoutNs) {
  const LaunchShape& shape = compiled.launch;
  if (std::string problem = sizesProblem(compiled, maxCount); !problem.empty())
    return instanceError(compiled, problem);
  if (compiled.nranks != world.nranks())
    return instanceError(compiled, "compiled for " + std::to_string(compiled.nranks) +
                                       " ranks, but the world has " +
                                       std::to_string(world.nranks()));
  // A world whose ranks cannot all reach each other (it spans nodes) hands the whole collective
  // to NCCL; the compiled collective still says what to compute.
  if (world.collectivesViaNccl())
    return createNccl(world, compiled, maxCount);
  if (compiled.nranks < 1 || compiled.nranks > COLLC_MAX_RANKS)
    return instanceError(compiled, std::to_string(compiled.nranks) +
                                       " ranks; the ABI allows 1 to " +
                                       std::to_string(COLLC_MAX_RANKS));
  if (shape.blocks < 1 || shape.blocks > COLLC_MAX_BLOCKS)
    return instanceError(compiled, std::to_string(shape.blocks) + " blocks; the ABI allows 1 to " +
                                       std::to_string(COLLC_MAX_BLOCKS));
  if (shape.threads < 1 || shape.threads > 1024)
    return instanceError(compiled, std::to_string(shape.threads) +
                                       " threads per block; CUDA allows 1 to 1024");
  if (compiled.scratch.size() > COLLC_MAX_SCRATCH)
    return instanceError(compiled, std::to_string(compiled.scratch.size()) +
                                       " scratch buffers; the ABI allows " +
                                       std::to_string(COLLC_MAX_SCRATCH));
  // The blocks of one rank wait for each other (and for the peers' blocks), so all of them must
  // be resident together, those of every rank that shares the GPU included (CoResidency.h).
  const std::vector<int>& local = world.localRanks();
  std::vector<int> localDevices;
  for (int r : local)
    localDevices.push_back(world.device(r));
  const std::vector<GpuRanks> gpus = ranksPerGpu(localDevices);
  for (const GpuRanks& gpu : gpus)
    if (std::string problem = coResidencyProblem(shape.blocks, gpu.ranks, gpu.device,
                                                 multiprocessorCount(gpu.device));
        !problem.empty())
      return instanceError(compiled, problem);

  std::unique_ptr<CollectiveInstance> instance(new CollectiveInstance(world, compiled));
  // A programmatic launch makes the next kernel resident while this one runs: on a shared GPU it
  // would hold SMs a peer's kernel needs (SharedGpuWorld.h). GPUs before sm_90 have none; there
  // the kernel's griddepcontrol instructions are compiled out, and it runs in stream order.
  const bool everyGpuHasIt =
      std::all_of(localDevices.begin(), localDevices.end(), hasProgrammaticLaunch);
  instance->programmaticLaunch_ =
      compiled.programmaticLaunch && everyGpuHasIt && !ranksShareAGpu(gpus);
  instance->maxCount_ = maxCount;
  instance->timeoutNs_ = timeoutNs;
  instance->heapBegin_ = instance->heapEnd_ = world.heapUsed();

  // The kernel is loaded for the local ranks only: kernel slot i is rank local[i].
  std::vector<int> devices;
  devices.reserve(local.size());
  for (int r : local)
    devices.push_back(world.device(r));
  Expected<std::unique_ptr<LoadedKernel>> kernel =
      LoadedKernel::load(devices, cubin, compiled.kernelName);
  if (!kernel)
    return kernel.takeError();
  instance->kernel_ = std::move(*kernel);
  for (size_t i = 0; i < local.size(); ++i) {
    Expected<int> perSm =
        instance->kernel_->maxActiveBlocksPerMultiprocessor(int(i), shape.threads);
    if (!perSm)
      return perSm.takeError();
    if (*perSm < 1) {
      const cudaFuncAttributes& attributes = instance->kernel_->attributes(int(i));
      return instanceError(
          compiled, "a block of " + std::to_string(shape.threads) +
                        " threads does not fit on a multiprocessor of GPU " +
                        std::to_string(world.device(local[i])) + " (the kernel uses " +
                        std::to_string(attributes.numRegs) + " registers per thread, at most " +
                        std::to_string(attributes.maxThreadsPerBlock) + " threads per block)");
    }
  }

  if (world.launchesRanksAsOne())
    if (Error err = instance->prepareRankLaunch(cubin))
      return err;
  if (Error err = instance->allocatePerRank())
    return err;
  if (Error err = instance->allocateSymmetric())
    return err;
  return instance;
}

Error CollectiveInstance::prepareRankLaunch(const std::string& cubin) {
  const std::vector<int>& local = world_.localRanks();
  const int nranks = world_.nranks();
  if (int(local.size()) != nranks)
    return instanceError(compiled_, "a world that launches its ranks as one must drive all of "
                                    "them in this process");
  const int device = world_.device(local.front());
  for (int r : local) {
    if (world_.device(r) != device)
      return instanceError(compiled_, "a world that launches its ranks as one must run them all "
                                      "on one GPU");
    // One address space: the heaps every rank sees are every other rank's.
    for (int viewer : local)
      if (world_.peerHeap(r, viewer) != world_.peerHeap(r, local.front()))
        return instanceError(compiled_, "a world that launches its ranks as one must show every "
                                        "rank the same heaps");
  }
  const std::string entry = compiled_.kernelName + "_ranks";
  Expected<std::unique_ptr<LoadedKernel>> kernel = LoadedKernel::load({device}, cubin, entry);
  if (!kernel)
    return joinErrors(instanceError(compiled_, "this world runs every rank in one launch, which "
                                               "needs the kernel's entry point " +
                                                   entry +
                                                   ": compile it with rankLaunchEntry (collc "
                                                   "emit --rank-launch-entry)"),
                      kernel.takeError());
  Expected<int> perSm = (*kernel)->maxActiveBlocksPerMultiprocessor(0, compiled_.launch.threads);
  if (!perSm)
    return perSm.takeError();
  int major = 0;
  COLLC_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (std::string problem = rankLaunchProblem(compiled_.launch.blocks, nranks, device, major,
                                              multiprocessorCount(device), *perSm);
      !problem.empty())
    return instanceError(compiled_, problem);
  rankKernel_ = std::move(*kernel);
  rankCalls_ = std::make_unique<RankCallGather>(nranks);
  return Error::success();
}

Error CollectiveInstance::allocatePerRank() {
  ScopedDevice restore;
  const std::vector<int>& local = world_.localRanks();
  const size_t epochBytes = sizeof(unsigned long long) * compiled_.launch.blocks;
  COLLC_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&hostWatchdogs_),
                                sizeof(collc_watchdog) * local.size()));
  for (size_t i = 0; i < local.size(); ++i) {
    const int r = local[i];
    COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
    cudaStream_t side = nullptr;
    COLLC_CUDA_TRY(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    sideStreams_.push_back(side);
    if (Error err = streamOrders_.emplace_back().create())
      return err;
    Expected<DeviceBuffer> epochs = DeviceBuffer::allocate(world_.device(r), epochBytes);
    if (!epochs)
      return epochs.takeError();
    epochs_.push_back(std::move(*epochs));
    Expected<DeviceBuffer> watchdog =
        DeviceBuffer::allocate(world_.device(r), sizeof(collc_watchdog));
    if (!watchdog)
      return watchdog.takeError();
    watchdogs_.push_back(std::move(*watchdog));
    COLLC_CUDA_TRY(cudaMemsetAsync(epochs_[i].get(), 0, epochBytes, side));
    COLLC_CUDA_TRY(cudaMemsetAsync(watchdogs_[i].get(), 0, sizeof(collc_watchdog), side));
  }
  return Error::success();
}

Error CollectiveInstance::seedEpochsForTests(uint64_t lastEpoch) {
  if (engine_ != Engine::CollcKernel)
    return instanceError(compiled_, "an NCCL instance has no epochs to seed");
  ScopedDevice restore;
  const std::vector<unsigned long long> epochs(size_t(compiled_.launch.blocks), lastEpoch);
  const std::vector<int>& local = world_.localRanks();
  for (size_t i = 0; i < local.size(); ++i) {
    COLLC_CUDA_TRY(cudaSetDevice(world_.device(local[i])));
    COLLC_CUDA_TRY(cudaMemcpyAsync(epochs_[i].get(), epochs.data(),
                                   sizeof(unsigned long long) * epochs.size(),
                                   cudaMemcpyHostToDevice, sideStreams_[i]));
    COLLC_CUDA_TRY(cudaStreamSynchronize(sideStreams_[i]));
  }
  return Error::success();
}

Error CollectiveInstance::allocateSymmetric() {
  // Copy 0 holds every scratch buffer back to back (scratchLayout); copy k is the same layout k
  // strides further. Calls rotate through the copies by epoch (two: by parity).
  const ScratchLayout layout = scratchLayout(compiled_, maxCount_);
  parityStride_ = layout.stride;
  const uint64_t copies = layout.copies;
  Expected<uint64_t> scratchBase = world_.allocate(copies * parityStride_, kScratchAlign);
  if (!scratchBase)
    return joinErrors(instanceError(compiled_, "scratch for calls of up to " +
                                                   std::to_string(maxCount_) +
                                                   " elements does not fit the heap"),
                      scratchBase.takeError());
  heapEnd_ = world_.heapUsed();
  for (uint64_t offset : layout.offsets)
    scratchOffsets_.push_back(*scratchBase + offset);
  Expected<uint64_t> flags = world_.allocate(compiled_.flagsBytes(), 256);
  if (!flags)
    return joinErrors(instanceError(compiled_, "the flags do not fit the heap"), flags.takeError());
  flagsOffset_ = *flags;
  heapEnd_ = world_.heapUsed();

  // The heap region may have been used before (see LocalWorld::releaseTo): start from zeros.
  ScopedDevice restore;
  const std::vector<int>& local = world_.localRanks();
  for (size_t i = 0; i < local.size(); ++i) {
    COLLC_CUDA_TRY(cudaSetDevice(world_.device(local[i])));
    COLLC_CUDA_TRY(cudaMemsetAsync(world_.heapBase(local[i]) + heapBegin_, 0, heapEnd_ - heapBegin_,
                                   sideStreams_[i]));
  }
  // Buffers that must start with something other than zeros (the sentinel strategy's -0.0):
  // one host pattern per buffer, copied into every copy of it on every rank.
  std::vector<std::vector<char>> patterns;
  for (size_t k = 0; k < compiled_.scratch.size(); ++k) {
    const ScratchBuffer& buffer = compiled_.scratch[k];
    if (buffer.fillWidth == 0)
      continue;
    std::vector<char>& pattern = patterns.emplace_back(buffer.bytes(maxCount_));
    for (size_t b = 0; b + buffer.fillWidth <= pattern.size(); b += buffer.fillWidth)
      std::memcpy(pattern.data() + b, &buffer.fillBits, buffer.fillWidth); // little-endian
    for (size_t i = 0; i < local.size(); ++i) {
      COLLC_CUDA_TRY(cudaSetDevice(world_.device(local[i])));
      for (uint64_t copy = 0; copy < copies; ++copy)
        COLLC_CUDA_TRY(cudaMemcpyAsync(
            world_.heapBase(local[i]) + scratchOffsets_[k] + copy * parityStride_, pattern.data(),
            pattern.size(), cudaMemcpyHostToDevice, sideStreams_[i]));
    }
  }
  // Peers write into each rank's flags and scratch from their own streams: everything must be
  // initialised before any rank launches.
  std::vector<bool> done(local.size(), false);
  if (Error err = pollStreams(sideStreams_, local, done, Clock::now() + std::chrono::seconds(10)))
    return err;
  if (!listRanks(done, local).empty())
    return instanceError(compiled_, "zeroing scratch did not finish within 10 s on rank(s) " +
                                        listRanks(done, local));
  // Other processes' ranks write into this one's heap as soon as they launch: no process may
  // leave create() before every one has initialised its part. The same exchange checks that all
  // of them laid the heap out alike (they made the same allocations in the same order).
  return agreeOnLayout();
}

Error CollectiveInstance::agreeOnLayout() {
  uint64_t name = 1469598103934665603ull; // FNV-1a of the kernel name: the same variant
  for (char c : compiled_.kernelName)
    name = (name ^ uint8_t(c)) * 1099511628211ull;
  const uint64_t row[] = {name,
                          maxCount_,
                          heapBegin_,
                          heapEnd_,
                          flagsOffset_,
                          parityStride_,
                          uint64_t(engine_ == Engine::Nccl)};
  const unsigned width = sizeof row / sizeof row[0];
  std::vector<uint64_t> table(size_t(world_.nranks()) * width);
  for (int r : world_.localRanks())
    std::copy(row, row + width, table.begin() + size_t(r) * width);
  if (Error err = world_.allGatherRanks("layout of " + compiled_.specName, table, width))
    return joinErrors(instanceError(compiled_, "the ranks could not agree on its layout"),
                      std::move(err));
  const char* const fields[] = {"kernel", "maxCount",      "heap begin", "heap end",
                                "flags",  "parity stride", "engine"};
  for (int r = 0; r < world_.nranks(); ++r)
    for (unsigned f = 0; f < width; ++f)
      if (table[size_t(r) * width + f] != row[f])
        return instanceError(compiled_,
                             "rank " + std::to_string(r) + " has " + fields[f] + " " +
                                 std::to_string(table[size_t(r) * width + f]) + ", rank " +
                                 std::to_string(world_.localRanks().front()) + " has " +
                                 std::to_string(row[f]) +
                                 ": every process must create the same collectives, with the "
                                 "same sizes, in the same order");
  return Error::success();
}

Expected<std::unique_ptr<CollectiveInstance>>
CollectiveInstance::createNccl(SymmetricWorld& world, const CompiledCollective& compiled,
                               uint64_t maxCount) {
  if (!world.ncclComm())
    return instanceError(compiled, "the NCCL path needs a world with a communicator (a "
                                   "ProcessWorld); in a LocalWorld measure NCCL with NcclBaseline");
  if (compiled.nranks != world.nranks())
    return instanceError(compiled, "compiled for " + std::to_string(compiled.nranks) +
                                       " ranks, but the world has " +
                                       std::to_string(world.nranks()));
  Expected<const NcclLibrary*> nccl = ncclLibrary();
  if (!nccl)
    return joinErrors(instanceError(compiled, "the NCCL path"), nccl.takeError());
  if (Error err = (*nccl)->requireCollective(compiled.kind))
    return joinErrors(instanceError(compiled, "the NCCL path"), std::move(err));
  std::unique_ptr<CollectiveInstance> instance(new CollectiveInstance(world, compiled));
  instance->engine_ = Engine::Nccl;
  instance->nccl_ = *nccl;
  instance->maxCount_ = maxCount;
  instance->heapBegin_ = instance->heapEnd_ = world.heapUsed();
  // Collective like the kernel path, so that every process makes the same calls either way.
  if (Error err = instance->agreeOnLayout())
    return err;
  return instance;
}

Error CollectiveInstance::launchNccl(const void* in, void* out, uint64_t count,
                                     cudaStream_t stream) {
  if (count == 0)
    return Error::success();
  // NCCL's own version of the kind, with the compiled type, op and root.
  return nccl_->enqueue(ncclCollectiveOf(compiled_), count, world_.nranks(), in, out,
                        world_.ncclComm(), stream);
}

std::string CollectiveInstance::engineDescription() const {
  if (engine_ == Engine::Nccl)
    return "NCCL (" + std::string(ncclCallName(compiled_.kind)) + " " +
           std::string(name(compiled_.dtype)) + " " + std::string(name(compiled_.op)) + ")";
  return "collc kernel " + compiled_.kernelName + " (" + std::string(name(compiled_.sync)) +
         " sync)";
}

CollectiveInstance::CollectiveInstance(SymmetricWorld& world, const CompiledCollective& compiled)
    : world_(world), compiled_(compiled) {}

CollectiveInstance::~CollectiveInstance() {
  ScopedDevice restore;
  for (size_t i = 0; i < sideStreams_.size(); ++i)
    if (cudaSetDevice(world_.device(world_.localRanks()[i])) != cudaSuccess ||
        cudaStreamDestroy(sideStreams_[i]) != cudaSuccess)
      (void)cudaGetLastError();
  if (hostWatchdogs_ && cudaFreeHost(hostWatchdogs_) != cudaSuccess)
    (void)cudaGetLastError();
  // Stack-like reuse: the common pattern (make an instance, run it, drop it, make the next) then
  // needs no more heap than its largest instance.
  if (heapEnd_ > heapBegin_ && world_.heapUsed() == heapEnd_)
    world_.releaseTo(heapBegin_);
}

Error CollectiveInstance::launch(int rank, const void* in, void* out, uint64_t count,
                                 cudaStream_t stream) {
  return launch(rank, in, out, {}, count, stream);
}

Error CollectiveInstance::launch(int rank, const void* in, void* out, Span<void* const> aux,
                                 uint64_t count, cudaStream_t stream) {
  Error refused = checkLaunch(rank, in, out, aux, count);
  // The checking mode: every rank compares its call with the others' before any launches, and
  // a call one rank refused is refused on all.
  if (Error differ = agreeOnCall(rank, count, bool(refused)))
    return joinErrors(std::move(refused), std::move(differ));
  if (refused)
    return refused;
  if (engine_ == Engine::Nccl)
    return launchNccl(in, out, count, stream);

  const int slot = world_.localIndex(rank);
  DeviceForCall onDevice(world_.device(rank));
  if (Error err =
          cudaStatusToError(onDevice.status(), "cudaSetDevice(rank's device)", __FILE__, __LINE__))
    return err;
  // The rule for streams (StreamOrder.h): an eager call on another stream waits for the last.
  Expected<StreamOrderStep> step = streamOrders_[size_t(slot)].before(stream);
  if (!step)
    return joinErrors(instanceError(compiled_, "rank " + std::to_string(rank) +
                                                   ": ordering this call after the rank's last "
                                                   "call, made on another stream"),
                      step.takeError());
  Error launched = Error::success();
  if (rankKernel_) {
    launched = launchRanksAsOne(rank, in, out, aux, count, stream);
  } else {
    const collc_params params = paramsFor(rank, in, out, aux, count);
    launched = kernel_->launch(slot, dim3(compiled_.launch.blocks), dim3(compiled_.launch.threads),
                               params, stream, programmaticLaunch_);
  }
  if (launched)
    return launched;
  return streamOrders_[size_t(slot)].after(stream, *step);
}

collc_params CollectiveInstance::paramsFor(int rank, const void* in, void* out,
                                           Span<void* const> aux, uint64_t count) const {
  const int nranks = world_.nranks();
  const int slot = world_.localIndex(rank);
  collc_params params{};
  params.in = in;
  params.out = out;
  params.count = count;
  params.rank = rank;
  params.nranks = nranks;
  // Every rank's heap as this rank's GPU addresses it (in another process: its IPC mapping).
  for (int r = 0; r < nranks; ++r)
    params.heap[r] = world_.peerHeap(r, rank);
  for (size_t k = 0; k < scratchOffsets_.size(); ++k)
    params.scratch_offset[k] = scratchOffsets_[k];
  params.parity_stride = parityStride_;
  params.flags_offset = flagsOffset_;
  params.epochs = epochs_[slot].as<unsigned long long>();
  params.watchdog = watchdogs_[slot].as<collc_watchdog>();
  params.timeout_ns = timeoutNs_;
  for (size_t k = 0; k < aux.size(); ++k)
    params.aux[k] = aux[k];
  return params;
}

Error CollectiveInstance::launchRanksAsOne(int rank, const void* in, void* out,
                                           Span<void* const> aux, uint64_t count,
                                           cudaStream_t stream) {
  RankCall call;
  call.in = in;
  call.out = out;
  std::copy(aux.begin(), aux.end(), call.aux.begin());
  call.count = count;
  call.stream = stream;
  std::lock_guard<std::mutex> lock(rankCallsMutex_);
  Expected<std::optional<std::vector<RankCall>>> gathered = rankCalls_->add(rank, call);
  if (!gathered)
    return instanceError(compiled_, toString(gathered.takeError()));
  if (!*gathered)
    return Error::success(); // launched with the last rank's part of this call
  const std::vector<RankCall>& calls = **gathered;
  // prepareRankLaunch checked that this process drives every rank.
  std::vector<unsigned long long*> epochs;
  std::vector<collc_watchdog*> watchdogs;
  for (int r = 0; r < int(calls.size()); ++r) {
    const size_t slot = size_t(world_.localIndex(r));
    epochs.push_back(epochs_[slot].as<unsigned long long>());
    watchdogs.push_back(watchdogs_[slot].as<collc_watchdog>());
  }
  const collc_rank_launch argument =
      buildRankLaunch(paramsFor(0, nullptr, nullptr, {}, count), calls, epochs, watchdogs);
  RankLaunchGrid grid;
  grid.blocksPerRank = unsigned(compiled_.launch.blocks);
  grid.ranks = unsigned(calls.size());
  grid.threads = unsigned(compiled_.launch.threads);
  return rankKernel_->launchRanks(grid, argument, stream);
}

Error CollectiveInstance::agreeOnCall(int rank, uint64_t count, bool refusedHere) {
  if (!world_.checksCalls())
    return Error::success();
  if (Error differ = checkCallAcrossRanks(world_, compiled_, count, refusedHere))
    return instanceError(compiled_,
                         "rank " + std::to_string(rank) + ": " + toString(std::move(differ)));
  return Error::success();
}

Error CollectiveInstance::checkLaunch(int rank, const void* in, void* out, Span<void* const> aux,
                                      uint64_t count) const {
  // A fused epilogue's buffers (residual, weight, ...): exactly the spec's, and whole rows.
  if (aux.size() != compiled_.aux.size())
    return instanceError(compiled_, std::to_string(aux.size()) +
                                        " aux buffers given; the spec has " +
                                        std::to_string(compiled_.aux.size()));
  for (size_t k = 0; k < aux.size(); ++k)
    if (count > 0 && !aux[k])
      return instanceError(compiled_, "null buffer '" + compiled_.aux[k].name + "' on rank " +
                                          std::to_string(rank));
  if (compiled_.rowLength > 0 && count % uint64_t(compiled_.rowLength) != 0)
    return instanceError(compiled_, "a call of " + std::to_string(count) +
                                        " elements is not whole rows of " +
                                        std::to_string(compiled_.rowLength));
  if (!aux.empty() && engine_ == Engine::Nccl)
    return instanceError(compiled_, "NCCL has no fused epilogue: this collective runs only on "
                                    "collc kernels (a world on one node)");
  const int nranks = world_.nranks();
  const int slot = world_.localIndex(rank);
  if (rank < 0 || rank >= nranks || slot < 0)
    return instanceError(
        compiled_, "launch for rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                       (rank >= 0 && rank < nranks ? ", which another process drives" : ""));
  if (count > maxCount_)
    return instanceError(compiled_, "a call of " + std::to_string(count) +
                                        " elements; this instance was made for at most " +
                                        std::to_string(maxCount_));
  if (count > 0 && (!in || !out))
    return instanceError(compiled_, "null input or output buffer on rank " + std::to_string(rank));
  if (Error overlap = checkBufferOverlap(compiled_, in, out, aux, count))
    return instanceError(compiled_, overlap.message() + " (rank " + std::to_string(rank) + ")");
  return Error::success();
}

Error CollectiveInstance::checkWatchdogs() {
  if (engine_ == Engine::Nccl)
    return Error::success(); // NCCL's errors come through synchronize()
  const std::vector<int>& local = world_.localRanks();
  {
    ScopedDevice restore;
    for (size_t i = 0; i < local.size(); ++i) {
      COLLC_CUDA_TRY(cudaSetDevice(world_.device(local[i])));
      COLLC_CUDA_TRY(cudaMemcpyAsync(&hostWatchdogs_[i], watchdogs_[i].get(),
                                     sizeof(collc_watchdog), cudaMemcpyDeviceToHost,
                                     sideStreams_[i]));
    }
  }
  std::vector<bool> done(local.size(), false);
  if (Error err = pollStreams(sideStreams_, local, done, Clock::now() + std::chrono::seconds(2)))
    return err;
  if (!listRanks(done, local).empty())
    return instanceError(compiled_, "could not read the watchdogs of rank(s) " +
                                        listRanks(done, local) +
                                        " within 2 s: the GPU does not respond");

  std::string report;
  for (size_t i = 0; i < local.size(); ++i) {
    const int r = local[i];
    const collc_watchdog& w = hostWatchdogs_[i];
    if (!w.tripped)
      continue;
    if (!report.empty())
      report += "\n";
    if (w.tripped == COLLC_WATCHDOG_OUT_OF_CALLS) {
      report += fmt::format(
          "rank {} refused call {}: this instance has run its {} calls, the most its LL packets' "
          "32-bit flags tell apart (a later call could take a stale packet for its own); "
          "recreate the instance",
          r, w.epoch, COLLC_LAST_PACKET_EPOCH);
      continue;
    }
    std::string step = w.step >= 0 && size_t(w.step) < compiled_.stepNames.size()
                           ? "'" + compiled_.stepNames[w.step] + "'"
                           : "#" + std::to_string(w.step);
    report += fmt::format("watchdog: rank {} block {} waited more than {:.1f} s at step {}", r,
                          w.block, timeoutNs_ / 1e9, step);
    if (w.buffer >= 0) {
      // A data-arrival poll: the element that never arrived names the buffer it lives in.
      std::string buffer = size_t(w.buffer) < compiled_.scratch.size()
                               ? "'" + compiled_.scratch[w.buffer].name + "'"
                               : "#" + std::to_string(w.buffer);
      report += fmt::format(" (call epoch {}) for element {} of scratch {} slot {}: read {:#x}, "
                            "waiting for {:#x}",
                            w.epoch, w.element, buffer, w.slot, w.observed, w.expected);
    } else {
      report += fmt::format(" (sync point {}, call epoch {}) for rank {}: flag is {}, needed {}",
                            w.sync_point, w.epoch, w.waiting_on_rank, w.observed, w.expected);
    }
    if (w.rank != r)
      report += fmt::format(" [the record names rank {}]", w.rank);
  }
  if (report.empty())
    return Error::success();
  return makeError(report);
}

Error CollectiveInstance::synchronize(Span<const cudaStream_t> streams, double extraSeconds) {
  const std::vector<int>& local = world_.localRanks();
  if (streams.size() != local.size())
    return instanceError(compiled_, "synchronize needs one stream per rank this process drives (" +
                                        std::to_string(local.size()) + "), got " +
                                        std::to_string(streams.size()));
  // With no kernel-side timeout the kernel may legitimately wait long; still never block forever.
  // NCCL has no watchdog of ours: its calls get the same generous bound.
  const double kernelSeconds =
      engine_ == Engine::CollcKernel && timeoutNs_ ? timeoutNs_ / 1e9 : 60.0;
  const double limit = kernelSeconds + 2.0 + extraSeconds;
  // What the world knows of peers that stopped answering goes with every failure: in a
  // process-per-GPU world a watchdog that tripped or a hang is most often a peer that died.
  auto withPeers = [&](Error err) -> Error {
    std::string peers = world_.diagnosePeers();
    if (!err || peers.empty())
      return err;
    return joinErrors(std::move(err), makeError(peers));
  };
  std::vector<bool> done(streams.size(), false);
  if (Error err = pollStreams(streams, local, done,
                              Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(limit))))
    return withPeers(joinErrors(std::move(err), checkWatchdogs()));
  const std::string running = listRanks(done, local);
  Error watchdog = checkWatchdogs();
  if (running.empty())
    return withPeers(std::move(watchdog));
  std::string message = "hang: rank(s) " + running + " still running " +
                        std::to_string(static_cast<int>(limit)) + " s after launch";
  if (watchdog)
    return withPeers(joinErrors(instanceError(compiled_, message), std::move(watchdog)));
  if (engine_ == Engine::Nccl)
    return withPeers(instanceError(compiled_, message + " inside NCCL" + peerNote(world_)));
  return withPeers(instanceError(compiled_, message + ", and no watchdog tripped (timeout " +
                                                std::to_string(timeoutNs_) +
                                                " ns). Kernels that never finish keep the process "
                                                "from exiting: run it under `timeout`"));
}

} // namespace collc
