#include "runtime/CollectiveInstance.h"

#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"
#include "runtime/collc_abi.h"

#include <chrono>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>
#include <thread>

namespace collc {

namespace {

using Clock = std::chrono::steady_clock;

llvm::Error instanceError(const CompiledCollective& compiled, const llvm::Twine& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "collective '" + compiled.specName + "' (kernel " +
                                     compiled.kernelName + "): " + message.str());
}

uint64_t alignUp(uint64_t value, uint64_t align) {
  return (value + align - 1) / align * align;
}

/// Polls until every stream in `streams` whose `done` entry is false has finished, or until
/// `deadline`. Marks finished streams in `done`. An error from a stream (a kernel that faulted)
/// is returned at once, naming the rank.
llvm::Error pollStreams(llvm::ArrayRef<cudaStream_t> streams, std::vector<bool>& done,
                        Clock::time_point deadline) {
  for (;;) {
    bool all = true;
    for (size_t r = 0; r < streams.size(); ++r) {
      if (done[r])
        continue;
      cudaError_t status = cudaStreamQuery(streams[r]);
      if (status == cudaSuccess) {
        done[r] = true;
        continue;
      }
      if (status != cudaErrorNotReady) {
        llvm::Error err = COLLC_CUDA_CHECK(status);
        return llvm::joinErrors(llvm::createStringError(llvm::inconvertibleErrorCode(),
                                                        "work on rank %zu's stream failed", r),
                                std::move(err));
      }
      (void)cudaGetLastError();
      all = false;
    }
    if (all || Clock::now() >= deadline)
      return llvm::Error::success();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

std::string listRanks(const std::vector<bool>& done) {
  std::string ranks;
  for (size_t r = 0; r < done.size(); ++r)
    if (!done[r])
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  return ranks;
}

} // namespace

llvm::Expected<std::unique_ptr<CollectiveInstance>>
CollectiveInstance::create(LocalWorld& world, const CompiledCollective& compiled,
                           const std::string& cubin, uint64_t maxCount, uint64_t timeoutNs) {
  const LaunchShape& shape = compiled.launch;
  if (compiled.nranks != world.nranks())
    return instanceError(compiled, "compiled for " + llvm::Twine(compiled.nranks) +
                                       " ranks, but the world has " + llvm::Twine(world.nranks()));
  if (compiled.nranks < 1 || compiled.nranks > COLLC_MAX_RANKS)
    return instanceError(compiled, llvm::Twine(compiled.nranks) + " ranks; the ABI allows 1 to " +
                                       llvm::Twine(COLLC_MAX_RANKS));
  if (shape.blocks < 1 || shape.blocks > COLLC_MAX_BLOCKS)
    return instanceError(compiled, llvm::Twine(shape.blocks) + " blocks; the ABI allows 1 to " +
                                       llvm::Twine(COLLC_MAX_BLOCKS));
  if (shape.threads < 1 || shape.threads > 1024)
    return instanceError(compiled,
                         llvm::Twine(shape.threads) + " threads per block; CUDA allows 1 to 1024");
  if (compiled.scratch.size() > COLLC_MAX_SCRATCH)
    return instanceError(compiled, llvm::Twine(compiled.scratch.size()) +
                                       " scratch buffers; the ABI allows " +
                                       llvm::Twine(COLLC_MAX_SCRATCH));
  for (const ScratchBuffer& buffer : compiled.scratch)
    if (!buffer.bytes)
      return instanceError(compiled, "scratch buffer '" + buffer.name + "' has no size");
  // The blocks of one rank wait for each other (and for the peers' blocks), so all of them must
  // be resident together: one block per multiprocessor at most is what we can promise.
  for (int r = 0; r < world.nranks(); ++r) {
    int sms = multiprocessorCount(world.device(r));
    if (shape.blocks > sms)
      return instanceError(compiled, llvm::Twine(shape.blocks) + " blocks, but GPU " +
                                         llvm::Twine(world.device(r)) + " has " + llvm::Twine(sms) +
                                         " multiprocessors: blocks that wait on each other must "
                                         "all be resident");
  }

  std::unique_ptr<CollectiveInstance> instance(new CollectiveInstance(world, compiled));
  instance->maxCount_ = maxCount;
  instance->timeoutNs_ = timeoutNs;
  instance->heapBegin_ = instance->heapEnd_ = world.heapUsed();

  std::vector<int> devices;
  devices.reserve(world.nranks());
  for (int r = 0; r < world.nranks(); ++r)
    devices.push_back(world.device(r));
  llvm::Expected<std::unique_ptr<LoadedKernel>> kernel =
      LoadedKernel::load(devices, cubin, compiled.kernelName);
  if (!kernel)
    return kernel.takeError();
  instance->kernel_ = std::move(*kernel);
  for (int r = 0; r < world.nranks(); ++r) {
    llvm::Expected<int> perSm =
        instance->kernel_->maxActiveBlocksPerMultiprocessor(r, shape.threads);
    if (!perSm)
      return perSm.takeError();
    if (*perSm < 1) {
      const cudaFuncAttributes& attributes = instance->kernel_->attributes(r);
      return instanceError(compiled,
                           "a block of " + llvm::Twine(shape.threads) +
                               " threads does not fit on a multiprocessor of GPU " +
                               llvm::Twine(world.device(r)) + " (the kernel uses " +
                               llvm::Twine(attributes.numRegs) + " registers per thread, at most " +
                               llvm::Twine(attributes.maxThreadsPerBlock) + " threads per block)");
    }
  }

  if (llvm::Error err = instance->allocatePerRank())
    return err;
  if (llvm::Error err = instance->allocateSymmetric())
    return err;
  return instance;
}

llvm::Error CollectiveInstance::allocatePerRank() {
  ScopedDevice restore;
  const int nranks = world_.nranks();
  const size_t epochBytes = sizeof(unsigned long long) * compiled_.launch.blocks;
  COLLC_CUDA_TRY(
      cudaMallocHost(reinterpret_cast<void**>(&hostWatchdogs_), sizeof(collc_watchdog) * nranks));
  for (int r = 0; r < nranks; ++r) {
    COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
    cudaStream_t side = nullptr;
    COLLC_CUDA_TRY(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    sideStreams_.push_back(side);
    llvm::Expected<DeviceBuffer> epochs = DeviceBuffer::allocate(world_.device(r), epochBytes);
    if (!epochs)
      return epochs.takeError();
    epochs_.push_back(std::move(*epochs));
    llvm::Expected<DeviceBuffer> watchdog =
        DeviceBuffer::allocate(world_.device(r), sizeof(collc_watchdog));
    if (!watchdog)
      return watchdog.takeError();
    watchdogs_.push_back(std::move(*watchdog));
    COLLC_CUDA_TRY(cudaMemsetAsync(epochs_[r].get(), 0, epochBytes, side));
    COLLC_CUDA_TRY(cudaMemsetAsync(watchdogs_[r].get(), 0, sizeof(collc_watchdog), side));
  }
  return llvm::Error::success();
}

llvm::Error CollectiveInstance::allocateSymmetric() {
  // Parity 0 holds every scratch buffer back to back, each 256-byte aligned; parity 1 is the
  // same layout one parity stride further. Calls alternate between them by epoch parity.
  std::vector<uint64_t> relative;
  uint64_t end = 0;
  for (const ScratchBuffer& buffer : compiled_.scratch) {
    uint64_t offset = alignUp(end, 256);
    relative.push_back(offset);
    end = offset + buffer.bytes(maxCount_);
  }
  parityStride_ = alignUp(end, 256);
  llvm::Expected<uint64_t> scratchBase = world_.allocate(2 * parityStride_, 256);
  if (!scratchBase)
    return llvm::joinErrors(instanceError(compiled_, "scratch for calls of up to " +
                                                         llvm::Twine(maxCount_) +
                                                         " elements does not fit the heap"),
                            scratchBase.takeError());
  heapEnd_ = world_.heapUsed();
  for (uint64_t offset : relative)
    scratchOffsets_.push_back(*scratchBase + offset);
  llvm::Expected<uint64_t> flags = world_.allocate(compiled_.flagsBytes(), 256);
  if (!flags)
    return llvm::joinErrors(instanceError(compiled_, "the flags do not fit the heap"),
                            flags.takeError());
  flagsOffset_ = *flags;
  heapEnd_ = world_.heapUsed();

  // The heap region may have been used before (see LocalWorld::releaseTo): start from zeros.
  ScopedDevice restore;
  for (int r = 0; r < world_.nranks(); ++r) {
    COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
    COLLC_CUDA_TRY(cudaMemsetAsync(world_.heapBase(r) + heapBegin_, 0, heapEnd_ - heapBegin_,
                                   sideStreams_[r]));
  }
  // Peers write into each rank's flags and scratch from their own streams: everything must be
  // zero before any rank launches.
  std::vector<bool> done(world_.nranks(), false);
  if (llvm::Error err = pollStreams(sideStreams_, done, Clock::now() + std::chrono::seconds(10)))
    return err;
  if (!listRanks(done).empty())
    return instanceError(compiled_, "zeroing scratch did not finish within 10 s on rank(s) " +
                                        listRanks(done));
  return llvm::Error::success();
}

CollectiveInstance::~CollectiveInstance() {
  ScopedDevice restore;
  for (size_t r = 0; r < sideStreams_.size(); ++r)
    if (cudaSetDevice(world_.device(r)) != cudaSuccess ||
        cudaStreamDestroy(sideStreams_[r]) != cudaSuccess)
      (void)cudaGetLastError();
  if (hostWatchdogs_ && cudaFreeHost(hostWatchdogs_) != cudaSuccess)
    (void)cudaGetLastError();
  // Stack-like reuse: the common pattern (make an instance, run it, drop it, make the next) then
  // needs no more heap than its largest instance.
  if (heapEnd_ > heapBegin_ && world_.heapUsed() == heapEnd_)
    world_.releaseTo(heapBegin_);
}

llvm::Error CollectiveInstance::launch(int rank, const void* in, void* out, uint64_t count,
                                       cudaStream_t stream) {
  const int nranks = world_.nranks();
  if (rank < 0 || rank >= nranks)
    return instanceError(compiled_,
                         "launch for rank " + llvm::Twine(rank) + " of " + llvm::Twine(nranks));
  if (count > maxCount_)
    return instanceError(compiled_, "a call of " + llvm::Twine(count) +
                                        " elements; this instance was made for at most " +
                                        llvm::Twine(maxCount_));
  if (count > 0 && (!in || !out))
    return instanceError(compiled_, "null input or output buffer on rank " + llvm::Twine(rank));

  collc_params params{};
  params.in = in;
  params.out = out;
  params.count = count;
  params.rank = rank;
  params.nranks = nranks;
  for (int r = 0; r < nranks; ++r)
    params.heap[r] = world_.heapBase(r);
  for (size_t k = 0; k < scratchOffsets_.size(); ++k)
    params.scratch_offset[k] = scratchOffsets_[k];
  params.parity_stride = parityStride_;
  params.flags_offset = flagsOffset_;
  params.epochs = epochs_[rank].as<unsigned long long>();
  params.watchdog = watchdogs_[rank].as<collc_watchdog>();
  params.timeout_ns = timeoutNs_;
  return kernel_->launch(rank, dim3(compiled_.launch.blocks), dim3(compiled_.launch.threads),
                         params, stream);
}

llvm::Error CollectiveInstance::checkWatchdogs() {
  const int nranks = world_.nranks();
  {
    ScopedDevice restore;
    for (int r = 0; r < nranks; ++r) {
      COLLC_CUDA_TRY(cudaSetDevice(world_.device(r)));
      COLLC_CUDA_TRY(cudaMemcpyAsync(&hostWatchdogs_[r], watchdogs_[r].get(),
                                     sizeof(collc_watchdog), cudaMemcpyDeviceToHost,
                                     sideStreams_[r]));
    }
  }
  std::vector<bool> done(nranks, false);
  if (llvm::Error err = pollStreams(sideStreams_, done, Clock::now() + std::chrono::seconds(2)))
    return err;
  if (!listRanks(done).empty())
    return instanceError(compiled_, "could not read the watchdogs of rank(s) " + listRanks(done) +
                                        " within 2 s: the GPU does not respond");

  std::string report;
  llvm::raw_string_ostream os(report);
  for (int r = 0; r < nranks; ++r) {
    const collc_watchdog& w = hostWatchdogs_[r];
    if (!w.tripped)
      continue;
    std::string step = w.step >= 0 && size_t(w.step) < compiled_.stepNames.size()
                           ? "'" + compiled_.stepNames[w.step] + "'"
                           : "#" + std::to_string(w.step);
    if (!report.empty())
      os << "\n";
    os << "watchdog: rank " << r << " block " << w.block << " waited more than "
       << llvm::format("%.1f", timeoutNs_ / 1e9) << " s at step " << step << " (sync point "
       << w.sync_point << ", call epoch " << w.epoch << ") for rank " << w.waiting_on_rank
       << ": flag is " << w.observed << ", needed " << w.expected;
    if (w.rank != r)
      os << " [the record names rank " << w.rank << "]";
  }
  os.flush();
  if (report.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), report);
}

llvm::Error CollectiveInstance::synchronize(llvm::ArrayRef<cudaStream_t> streams,
                                            double extraSeconds) {
  if (streams.size() != size_t(world_.nranks()))
    return instanceError(compiled_, "synchronize needs one stream per rank (" +
                                        llvm::Twine(world_.nranks()) + "), got " +
                                        llvm::Twine(streams.size()));
  // With no kernel-side timeout the kernel may legitimately wait long; still never block forever.
  const double kernelSeconds = timeoutNs_ ? timeoutNs_ / 1e9 : 60.0;
  const double limit = kernelSeconds + 2.0 + extraSeconds;
  std::vector<bool> done(streams.size(), false);
  if (llvm::Error err = pollStreams(streams, done,
                                    Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(limit))))
    return llvm::joinErrors(std::move(err), checkWatchdogs());
  const std::string running = listRanks(done);
  llvm::Error watchdog = checkWatchdogs();
  if (running.empty())
    return watchdog;
  std::string message = "hang: rank(s) " + running + " still running " +
                        std::to_string(static_cast<int>(limit)) + " s after launch";
  if (watchdog)
    return llvm::joinErrors(instanceError(compiled_, message), std::move(watchdog));
  return instanceError(compiled_, message + ", and no watchdog tripped (timeout " +
                                      std::to_string(timeoutNs_) +
                                      " ns). Kernels that never finish keep the process from "
                                      "exiting: run it under `timeout`");
}

} // namespace collc
