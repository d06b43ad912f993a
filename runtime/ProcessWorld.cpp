#include "runtime/ProcessWorld.h"

#include "abi/collc_abi.h"
#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"
#include "runtime/ExchangeFrame.h"
#include "runtime/LaunchEnvironment.h"
#include "runtime/NcclLibrary.h"
#include "runtime/ProcessIdentity.h"
#include "runtime/Rendezvous.h"
#include "runtime/SharedMemoryExchange.h"
#include "runtime/Topology.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <random>
#include <thread>

namespace collc {

namespace {

using Clock = std::chrono::steady_clock;

static_assert(sizeof(ncclUniqueId) == std::tuple_size<NcclUniqueIdBytes>::value,
              "NcclUniqueIdBytes must hold an ncclUniqueId");

// A shutdown barrier waits this long at most: a destructor must not hold a process for a minute.
constexpr double kShutdownSeconds = 10;

/// What each rank tells the others at bootstrap. Plain bytes, the same layout in every process
/// (one build of collc).
struct RankCard {
  int32_t pid;
  int32_t device; // as this rank's process numbers it; busId is what others can use
  uint64_t startTicks;
  uint64_t heapBytes;
  int32_t nodeSize;
  int32_t flags; // kShareGpu | kCheckCalls, as this rank's options say
  char host[64];
  char bootId[40];
  char busId[32];
  cudaIpcMemHandle_t heap;
};

// RankCard::flags.
constexpr int32_t kShareGpu = 1, kCheckCalls = 2;

std::string describeFlags(int32_t flags) {
  return std::string((flags & kShareGpu) ? "shareGpu" : "no shareGpu") +
         ((flags & kCheckCalls) ? ", checkCalls" : ", no checkCalls");
}

int32_t cardFlags(const ProcessWorldOptions& options) {
  return (options.shareGpu ? kShareGpu : 0) | (options.checkCalls ? kCheckCalls : 0);
}

std::string fixedString(const char* text, size_t capacity) {
  return std::string(text, strnlen(text, capacity));
}

template <size_t N> void copyFixed(char (&out)[N], const std::string& text) {
  std::memset(out, 0, N);
  std::memcpy(out, text.data(), std::min(text.size(), N - 1));
}

Clock::time_point deadlineIn(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

/// ncclCommInitRank on a thread of its own, so that a rank that never shows up becomes an error
/// after `seconds` instead of a process stuck in NCCL's bootstrap. Past the deadline the thread
/// is left behind (it shares the job, nothing else); the caller reports the error and exits.
struct InitJob {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  ncclResult_t result = ncclInternalError;
  cudaError_t setDevice = cudaSuccess;
  ncclComm_t comm = nullptr;
};

} // namespace

struct ProcessWorld::State {
  const NcclLibrary* nccl = nullptr;
  ncclComm_t comm = nullptr;
  bool ownsComm = false;
  int rank = 0, nranks = 0, device = -1;
  std::vector<int> localRanks;
  cudaStream_t stream = nullptr;  // the rank's work
  cudaStream_t control = nullptr; // host exchanges
  char* heap = nullptr;
  std::vector<char*> peerHeaps; // per rank, as this GPU maps it; this rank's own heap included
  std::vector<bool> ipcOpened;  // per rank: peerHeaps[r] came from cudaIpcOpenMemHandle
  std::vector<ProcessIdentity> identities;
  NodeLayout layout;
  CollectivePath path;
  double exchangeSeconds = 60;
  // Host exchanges: one frame per rank through ncclAllGather.
  char* deviceSend = nullptr;
  char* deviceReceive = nullptr;
  char* hostSend = nullptr;    // pinned
  char* hostReceive = nullptr; // pinned
  uint64_t sequence = 0;
  // Instead of NCCL, where ranks share a GPU: the host exchanges go through shared memory.
  std::unique_ptr<SharedMemoryExchange> sharedMemory;
  bool checkCalls = false;
  // Why the world can no longer make collective calls (an exchange failed or timed out: the
  // processes may be out of step); empty while healthy.
  std::string broken;

  Error error(const std::string& message) const {
    return makeError("rank " + std::to_string(rank) + ": process world: " + message);
  }

  /// Exchanges `payload` with every rank (one ncclAllGather of fixed-size frames), bounded.
  Expected<std::vector<std::string>> exchange(const std::string& what, std::string_view payload,
                                              double seconds) {
    if (!broken.empty())
      return error("'" + what + "': the world is unusable: " + broken);
    const uint64_t mine = ++sequence;
    if (Error err = packExchangeFrame(mine, rank, what, payload, hostSend))
      return err;
    if (sharedMemory) {
      if (Error err = sharedMemory->allGather(hostSend, hostReceive, seconds)) {
        broken = "host exchange '" + what + "' failed";
        return joinErrors(error("host exchange '" + what + "'"), std::move(err));
      }
      return unpack(mine, what);
    }
    ScopedDevice restore;
    COLLC_CUDA_TRY(cudaSetDevice(device));
    COLLC_CUDA_TRY(
        cudaMemcpyAsync(deviceSend, hostSend, kExchangeSlotBytes, cudaMemcpyHostToDevice, control));
    if (Error err =
            COLLC_NCCL_CHECK_COMM(*nccl, comm,
                                  nccl->allGather(deviceSend, deviceReceive, kExchangeSlotBytes,
                                                  ncclUint8, comm, control))) {
      broken = "ncclAllGather failed in '" + what + "'";
      return joinErrors(error("host exchange '" + what + "'"), std::move(err));
    }
    COLLC_CUDA_TRY(cudaMemcpyAsync(hostReceive, deviceReceive, kExchangeSlotBytes * nranks,
                                   cudaMemcpyDeviceToHost, control));
    if (Error err = waitControl(what, seconds))
      return err;
    return unpack(mine, what);
  }

  Expected<std::vector<std::string>> unpack(uint64_t mine, const std::string& what) {
    Expected<std::vector<std::string>> payloads =
        unpackExchangeFrames(hostReceive, nranks, mine, what, rank);
    if (!payloads)
      broken = "the processes are out of step (exchange #" + std::to_string(mine) + ")";
    return payloads;
  }

  /// Polls the control stream until it is idle, an NCCL error shows, or `seconds` pass.
  Error waitControl(const std::string& what, double seconds) {
    const Clock::time_point deadline = deadlineIn(seconds);
    Clock::time_point nextLivenessCheck = Clock::now() + std::chrono::milliseconds(200);
    for (;;) {
      cudaError_t status = cudaStreamQuery(control);
      if (status == cudaSuccess)
        return Error::success();
      if (status != cudaErrorNotReady) {
        broken = "the host exchange stream failed";
        return joinErrors(error("host exchange '" + what + "'"), COLLC_CUDA_CHECK(status));
      }
      (void)cudaGetLastError();
      ncclResult_t asyncError = ncclSuccess;
      if (comm && nccl->commGetAsyncError(comm, &asyncError) == ncclSuccess &&
          asyncError != ncclSuccess && asyncError != ncclInProgress) {
        broken = std::string("NCCL reported ") + nccl->getErrorString(asyncError);
        return error("host exchange '" + what + "': NCCL reports an asynchronous error: " +
                     nccl->getErrorString(asyncError) + withPeers());
      }
      // A peer that exited will never make its call: say so now rather than at the deadline.
      if (Clock::now() >= nextLivenessCheck) {
        nextLivenessCheck = Clock::now() + std::chrono::milliseconds(200);
        if (std::string peers = diagnose(); !peers.empty()) {
          broken = peers;
          return error("host exchange '" + what + "' cannot complete: " + peers);
        }
      }
      if (Clock::now() >= deadline) {
        broken = "host exchange '" + what + "' timed out";
        return error("host exchange '" + what + "' did not complete within " +
                     std::to_string(int(seconds)) +
                     " s: another process did not make the same call" + withPeers());
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  std::string diagnose() const {
    std::string report;
    for (int r = 0; r < int(identities.size()); ++r) {
      if (r == rank || checkLiveness(identities[r]) != Liveness::Gone)
        continue;
      report += (report.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) +
                "'s process (pid " + std::to_string(identities[r].pid) + " on " +
                identities[r].host + ") has exited";
    }
    ncclResult_t asyncError = ncclSuccess;
    if (comm && nccl->commGetAsyncError(comm, &asyncError) == ncclSuccess &&
        asyncError != ncclSuccess && asyncError != ncclInProgress)
      report += (report.empty() ? "" : "; ") + std::string("NCCL reports ") +
                nccl->getErrorString(asyncError);
    return report;
  }
  std::string withPeers() const {
    std::string peers = diagnose();
    return peers.empty() ? std::string() : " (" + peers + ")";
  }

  Error allocate(size_t heapBytes) {
    ScopedDevice restore;
    COLLC_CUDA_TRY(cudaSetDevice(device));
    COLLC_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    COLLC_CUDA_TRY(cudaStreamCreateWithFlags(&control, cudaStreamNonBlocking));
    void* pointer = nullptr;
    if (Error err = COLLC_CUDA_CHECK(cudaMalloc(&pointer, heapBytes)))
      return joinErrors(error("allocating a symmetric heap of " + std::to_string(heapBytes) +
                              " bytes on GPU " + std::to_string(device) + " failed"),
                        std::move(err));
    heap = static_cast<char*>(pointer);
    // Zeroed once, so that flags and scratch start from a known state however they are used.
    COLLC_CUDA_TRY(cudaMemsetAsync(heap, 0, heapBytes, control));
    if (!sharedMemory) { // NCCL's all-gather runs between device buffers
      COLLC_CUDA_TRY(cudaMalloc(&pointer, kExchangeSlotBytes));
      deviceSend = static_cast<char*>(pointer);
      COLLC_CUDA_TRY(cudaMalloc(&pointer, kExchangeSlotBytes * nranks));
      deviceReceive = static_cast<char*>(pointer);
    }
    COLLC_CUDA_TRY(cudaMallocHost(&pointer, kExchangeSlotBytes));
    hostSend = static_cast<char*>(pointer);
    COLLC_CUDA_TRY(cudaMallocHost(&pointer, kExchangeSlotBytes * nranks));
    hostReceive = static_cast<char*>(pointer);
    return waitControl("zeroing the heap", exchangeSeconds);
  }

  /// Frees what allocate() and the mappings made. Errors cannot be reported from here.
  void release() {
    ScopedDevice restore;
    if (device >= 0 && cudaSetDevice(device) != cudaSuccess)
      (void)cudaGetLastError();
    for (size_t r = 0; r < ipcOpened.size(); ++r)
      if (ipcOpened[r] && cudaIpcCloseMemHandle(peerHeaps[r]) != cudaSuccess)
        (void)cudaGetLastError();
    ipcOpened.assign(ipcOpened.size(), false);
    for (void* p : {static_cast<void*>(heap), static_cast<void*>(deviceSend),
                    static_cast<void*>(deviceReceive)})
      if (p && cudaFree(p) != cudaSuccess)
        (void)cudaGetLastError();
    for (void* p : {static_cast<void*>(hostSend), static_cast<void*>(hostReceive)})
      if (p && cudaFreeHost(p) != cudaSuccess)
        (void)cudaGetLastError();
    for (cudaStream_t s : {stream, control})
      if (s && cudaStreamDestroy(s) != cudaSuccess)
        (void)cudaGetLastError();
    heap = deviceSend = deviceReceive = hostSend = hostReceive = nullptr;
    stream = control = nullptr;
  }
};

ProcessWorld::ProcessWorld(std::unique_ptr<State> state, size_t heapBytes)
    : SymmetricWorld(heapBytes), state_(std::move(state)) {}

ProcessWorld::~ProcessWorld() {
  State& s = *state_;
  bool healthy = s.broken.empty() && s.diagnose().empty();
  if (healthy && s.hostSend) {
    Expected<std::vector<std::string>> done = s.exchange("shutdown", "", kShutdownSeconds);
    if (!done) {
      consumeError(done.takeError());
      healthy = false;
    }
  }
  // This rank's work must be over before its memory goes, and waiting is bounded: a kernel that
  // still spins after a failure would otherwise hold the process forever.
  if (healthy && s.stream) {
    ScopedDevice restore;
    const Clock::time_point deadline = deadlineIn(kShutdownSeconds);
    if (cudaSetDevice(s.device) != cudaSuccess)
      (void)cudaGetLastError();
    for (cudaStream_t stream : {s.stream, s.control}) {
      cudaError_t status;
      while ((status = cudaStreamQuery(stream)) == cudaErrorNotReady && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      if (status != cudaSuccess) {
        (void)cudaGetLastError();
        healthy = false;
      }
    }
  }
  if (s.comm && s.ownsComm) {
    // A broken world's peers may never join ncclCommDestroy's last exchanges: abort instead.
    if (healthy)
      (void)s.nccl->commDestroy(s.comm);
    else
      (void)s.nccl->commAbort(s.comm);
    s.comm = nullptr;
  }
  if (healthy)
    s.release();
  // Otherwise the memory stays (until the process exits): a kernel still spinning on it after a
  // peer died would turn cudaFree into a hang.
}

Expected<NcclUniqueIdBytes> ProcessWorld::newUniqueId() {
  Expected<const NcclLibrary*> nccl = ncclLibrary();
  if (!nccl)
    return nccl.takeError();
  ncclUniqueId id;
  COLLC_NCCL_TRY(**nccl, (*nccl)->getUniqueId(&id));
  NcclUniqueIdBytes bytes;
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

NcclUniqueIdBytes ProcessWorld::newSharedGpuId() {
  std::random_device entropy;
  NcclUniqueIdBytes bytes;
  for (size_t i = 0; i < bytes.size(); i += sizeof(unsigned)) {
    const unsigned word = entropy();
    std::memcpy(bytes.data() + i, &word, std::min(sizeof word, bytes.size() - i));
  }
  return bytes;
}

Expected<std::unique_ptr<ProcessWorld>>
ProcessWorld::fromEnvironment(const ProcessWorldOptions& options) {
  Expected<std::optional<LaunchEnvironment>> env = parseLaunchEnvironment(processEnvironment());
  if (!env)
    return env.takeError();
  if (!*env)
    return makeError("process world: not started by a launcher (RANK, WORLD_SIZE, LOCAL_RANK and "
                     "COLLC_RENDEZVOUS are not set): start the processes with torchrun, mpirun or "
                     "`collc run --procs N`");
  LaunchEnvironment& launch = **env;
  launch.shareGpu = launch.shareGpu || options.shareGpu;
  auto fail = [&](Error err) -> Error {
    return makeError("rank " + std::to_string(launch.rank) +
                     ": process world: " + toString(std::move(err)));
  };
  Expected<int> gpus = gpuCount();
  if (!gpus)
    return fail(gpus.takeError());
  Expected<int> device = chooseDevice(launch, *gpus);
  if (!device)
    return fail(device.takeError());
  Expected<RendezvousAddress> address = parseRendezvous(launch.rendezvous);
  if (!address)
    return fail(address.takeError());

  ProcessWorldOptions worldOptions = options;
  worldOptions.shareGpu = launch.shareGpu;
  // Rank 0 hands over its mode with the id: ranks that disagree about sharing GPUs would
  // otherwise wait for each other in two different bootstraps.
  const char mode = worldOptions.shareGpu ? 'S' : 'N';
  std::string idBytes;
  if (launch.rank == 0) {
    Expected<NcclUniqueIdBytes> id =
        worldOptions.shareGpu ? Expected<NcclUniqueIdBytes>(newSharedGpuId()) : newUniqueId();
    if (!id)
      return fail(id.takeError());
    idBytes = mode + std::string(id->data(), id->size());
  }
  Expected<std::string> shared =
      shareFromRankZero(*address, launch.rank, launch.worldSize, idBytes, options.bootstrapSeconds);
  if (!shared)
    return fail(shared.takeError());
  if (shared->size() != 1 + sizeof(NcclUniqueIdBytes))
    return fail(makeError(
        fmt::format("the rendezvous handed over {} bytes, not a world id", shared->size())));
  if ((*shared)[0] != mode)
    return fail(makeError(std::string("rank 0 ") +
                          ((*shared)[0] == 'S' ? "shares" : "does not share") +
                          " its GPU, this rank " + (mode == 'S' ? "does" : "does not") +
                          ": set COLLC_SHARE_GPU alike for every rank"));
  NcclUniqueIdBytes id;
  std::memcpy(id.data(), shared->data() + 1, id.size());
  Expected<std::unique_ptr<ProcessWorld>> world =
      create(launch.rank, launch.worldSize, *device, id, worldOptions);
  // The bootstrap returns only once every rank has joined, so all have read the id by now.
  if (world && launch.rank == 0)
    cleanUpRendezvous(*address);
  return world;
}

Expected<std::unique_ptr<ProcessWorld>> ProcessWorld::create(int rank, int nranks, int device,
                                                             const NcclUniqueIdBytes& id,
                                                             const ProcessWorldOptions& options) {
  auto fail = [&](const std::string& message) {
    return makeError("rank " + std::to_string(rank) + ": process world: " + message);
  };
  if (nranks < 1 || nranks > COLLC_MAX_RANKS || rank < 0 || rank >= nranks)
    return fail("rank " + std::to_string(rank) + " of " + std::to_string(nranks) + " (1 to " +
                std::to_string(COLLC_MAX_RANKS) + " ranks)");
  Expected<int> gpus = gpuCount();
  if (!gpus)
    return fail(toString(gpus.takeError()));
  if (device < 0 || device >= *gpus)
    return fail("GPU " + std::to_string(device) + " asked for; " + std::to_string(*gpus) +
                " visible");
  if (options.shareGpu) // no NCCL: it refuses two ranks on one GPU
    return createSharingGpu(rank, nranks, device, id, options);
  Expected<const NcclLibrary*> nccl = ncclLibrary();
  if (!nccl)
    return fail(toString(nccl.takeError()));

  auto job = std::make_shared<InitJob>();
  ncclUniqueId ncclId;
  std::memcpy(&ncclId, id.data(), sizeof ncclId);
  const NcclLibrary* lib = *nccl;
  std::thread([job, lib, ncclId, nranks, rank, device] {
    ncclComm_t comm = nullptr;
    cudaError_t setDevice = cudaSetDevice(device);
    ncclResult_t result =
        setDevice == cudaSuccess ? lib->commInitRank(&comm, nranks, ncclId, rank) : ncclSuccess;
    std::lock_guard<std::mutex> lock(job->mutex);
    job->setDevice = setDevice;
    job->result = result;
    job->comm = comm;
    job->done = true;
    job->finished.notify_all();
  }).detach();
  {
    std::unique_lock<std::mutex> lock(job->mutex);
    if (!job->finished.wait_until(lock, deadlineIn(options.bootstrapSeconds),
                                  [&] { return job->done; }))
      return fail("ncclCommInitRank did not complete within " +
                  std::to_string(int(options.bootstrapSeconds)) + " s: are all " +
                  std::to_string(nranks) +
                  " ranks running, with the same NCCL id? (the thread inside NCCL is left "
                  "behind; exit the process)");
  }
  if (job->setDevice != cudaSuccess)
    return fail(toString(COLLC_CUDA_CHECK(job->setDevice)));
  if (Error err = COLLC_NCCL_CHECK(*lib, job->result))
    return fail("ncclCommInitRank(rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                ") on GPU " + std::to_string(device) + ": " + toString(std::move(err)));

  auto state = std::make_unique<State>();
  state->nccl = lib;
  state->comm = job->comm;
  state->ownsComm = true;
  state->rank = rank;
  state->nranks = nranks;
  state->device = device;
  return build(std::move(state), options);
}

Expected<std::unique_ptr<ProcessWorld>>
ProcessWorld::createSharingGpu(int rank, int nranks, int device, const NcclUniqueIdBytes& id,
                               const ProcessWorldOptions& options) {
  auto state = std::make_unique<State>();
  state->rank = rank;
  state->nranks = nranks;
  state->device = device;
  Expected<std::unique_ptr<SharedMemoryExchange>> exchange =
      SharedMemoryExchange::join(SharedMemoryExchange::segmentName(id), rank, nranks,
                                 kExchangeSlotBytes, options.bootstrapSeconds);
  if (!exchange)
    return state->error(toString(exchange.takeError()));
  state->sharedMemory = std::move(*exchange);
  return build(std::move(state), options);
}

Expected<std::unique_ptr<ProcessWorld>> ProcessWorld::adopt(ncclComm_t comm,
                                                            const ProcessWorldOptions& options) {
  Expected<const NcclLibrary*> nccl = ncclLibrary();
  if (!nccl)
    return makeError("process world: " + toString(nccl.takeError()));
  if (!comm)
    return makeError("process world: adopt() needs a communicator, got null");
  auto state = std::make_unique<State>();
  state->nccl = *nccl;
  state->comm = comm;
  state->ownsComm = false;
  const NcclLibrary& lib = **nccl;
  COLLC_NCCL_TRY(lib, lib.commUserRank(comm, &state->rank));
  COLLC_NCCL_TRY(lib, lib.commCount(comm, &state->nranks));
  COLLC_NCCL_TRY(lib, lib.commCuDevice(comm, &state->device));
  if (state->nranks > COLLC_MAX_RANKS)
    return state->error("the communicator has " + std::to_string(state->nranks) +
                        " ranks; collc supports at most " + std::to_string(COLLC_MAX_RANKS));
  return build(std::move(state), options);
}

Expected<std::unique_ptr<ProcessWorld>> ProcessWorld::build(std::unique_ptr<State> state,
                                                            const ProcessWorldOptions& options) {
  if (options.heapBytes == 0)
    return state->error("the symmetric heap must not be empty");
  State& s = *state;
  s.exchangeSeconds = options.exchangeSeconds;
  s.checkCalls = options.checkCalls;
  if (options.shareGpu && !s.sharedMemory)
    return state->error("ranks may share a GPU only in a world collc bootstraps itself (NCCL "
                        "refuses two ranks on one GPU, so an adopted communicator cannot)");
  s.localRanks = {s.rank};
  s.peerHeaps.assign(s.nranks, nullptr);
  s.ipcOpened.assign(s.nranks, false);
  // From here the world owns the communicator and what is allocated. A failed bootstrap leaves
  // the ranks out of step, so the destructor then aborts instead of waiting for the others.
  std::unique_ptr<ProcessWorld> world(new ProcessWorld(std::move(state), options.heapBytes));
  if (Error err = world->bootstrap(options)) {
    s.broken = "its bootstrap failed";
    return err;
  }
  if (s.sharedMemory)
    s.path.description += "; ranks may share GPUs (host exchanges through shared memory, no "
                          "NCCL): for correctness only, their contexts are time-sliced";
  if (options.log && s.rank == 0)
    std::fprintf(stderr, "collc: process world: %s\n", s.path.description.c_str());
  return world;
}

Error ProcessWorld::bootstrap(const ProcessWorldOptions& options) {
  State& s = *state_;
  if (Error err = s.allocate(options.heapBytes))
    return err;
  s.peerHeaps[s.rank] = s.heap;

  // Round 1: who is where.
  int nodeSize = options.nodeSize;
  std::string nodeSetting = nodeSize > 0 ? "nodeSize=" + std::to_string(nodeSize) : "";
  if (nodeSize < 0) {
    Expected<int> fromEnv = parseNodeSizeOverride(processEnvironment(), nodeSetting);
    if (!fromEnv)
      return s.error(toString(fromEnv.takeError()));
    nodeSize = *fromEnv;
  }
  const ProcessIdentity self = thisProcessIdentity();
  RankCard card{};
  card.pid = self.pid;
  card.device = s.device;
  card.startTicks = self.startTicks;
  card.heapBytes = options.heapBytes;
  card.nodeSize = nodeSize;
  card.flags = cardFlags(options);
  copyFixed(card.host, self.host);
  copyFixed(card.bootId, self.bootId);
  {
    ScopedDevice restore;
    COLLC_CUDA_TRY(cudaSetDevice(s.device));
    COLLC_CUDA_TRY(cudaDeviceGetPCIBusId(card.busId, sizeof card.busId, s.device));
    COLLC_CUDA_TRY(cudaIpcGetMemHandle(&card.heap, s.heap));
  }
  Expected<std::vector<std::string>> cards = s.exchange(
      "bootstrap: rank cards", std::string_view(reinterpret_cast<const char*>(&card), sizeof card),
      options.bootstrapSeconds);
  if (!cards)
    return cards.takeError();
  std::vector<RankCard> all(s.nranks);
  std::vector<std::string> hostKeys;
  for (int r = 0; r < s.nranks; ++r) {
    if ((*cards)[r].size() != sizeof(RankCard))
      return s.error("rank " + std::to_string(r) + "'s card has " +
                     std::to_string((*cards)[r].size()) + " bytes: a different build of collc?");
    std::memcpy(&all[r], (*cards)[r].data(), sizeof(RankCard));
    ProcessIdentity identity;
    identity.pid = all[r].pid;
    identity.startTicks = all[r].startTicks;
    identity.host = fixedString(all[r].host, sizeof all[r].host);
    identity.bootId = fixedString(all[r].bootId, sizeof all[r].bootId);
    hostKeys.push_back(identity.hostKey());
    s.identities.push_back(identity);
  }
  // Settings that must agree, checked the same way on every rank, so all fail alike.
  for (int r = 0; r < s.nranks; ++r) {
    if (all[r].heapBytes != all[0].heapBytes)
      return s.error("rank " + std::to_string(r) + " asks for a heap of " +
                     std::to_string(all[r].heapBytes) + " bytes, rank 0 for " +
                     std::to_string(all[0].heapBytes) + ": every rank must use the same size");
    if (all[r].nodeSize != all[0].nodeSize)
      return s.error("rank " + std::to_string(r) + " has node size " +
                     std::to_string(all[r].nodeSize) + ", rank 0 " +
                     std::to_string(all[0].nodeSize) +
                     ": COLLC_NODE_SIZE / COLLC_TREAT_EACH_GPU_AS_NODE must be the same for "
                     "every rank");
    if (all[r].flags != all[0].flags)
      return s.error(
          fmt::format("rank {} has {}, rank 0 {}: every rank must pass the same world options", r,
                      describeFlags(all[r].flags), describeFlags(all[0].flags)));
    if (options.shareGpu && hostKeys[r] != hostKeys[0])
      return s.error("rank " + std::to_string(r) + " is on host " + s.identities[r].host +
                     ", rank 0 on " + s.identities[0].host +
                     ": ranks that share GPUs must all be on one host");
    for (int q = 0; q < r && !options.shareGpu; ++q)
      if (hostKeys[q] == hostKeys[r] &&
          std::strncmp(all[q].busId, all[r].busId, sizeof all[r].busId) == 0)
        return s.error("ranks " + std::to_string(q) + " and " + std::to_string(r) +
                       " both use the GPU at PCI " + fixedString(all[r].busId, 32) +
                       "; each rank needs its own GPU (check LOCAL_RANK), or ask for ranks "
                       "that share a GPU (for correctness only: COLLC_SHARE_GPU=1 for a "
                       "launcher, shareGpu, COLLC_WORLD_SHARE_GPU, share_gpu=True)");
  }
  s.layout = layoutNodes(hostKeys, nodeSize, nodeSetting);
  if (options.shareGpu && s.layout.nodeCount != 1)
    return s.error("ranks that share GPUs run collc's kernels only, on one node; " + nodeSetting +
                   " splits them into " + std::to_string(s.layout.nodeCount) + " nodes");

  // Round 2, on one node: can this GPU reach every peer's heap?
  std::vector<std::string> unreachable(s.nranks);
  if (s.layout.nodeCount == 1) {
    std::string problem;
    ScopedDevice restore;
    COLLC_CUDA_TRY(cudaSetDevice(s.device));
    for (int r = 0; r < s.nranks && problem.empty(); ++r) {
      if (r == s.rank)
        continue;
      const std::string busId = fixedString(all[r].busId, sizeof all[r].busId);
      int peerDevice = -1;
      if (cudaDeviceGetByPCIBusId(&peerDevice, busId.c_str()) != cudaSuccess) {
        (void)cudaGetLastError();
        problem = "cannot see rank " + std::to_string(r) + "'s GPU (PCI " + busId +
                  "): keep every GPU of the node visible to every process";
        break;
      }
      // The same GPU (ranks that share it): its own memory, reached through CUDA IPC as well.
      if (peerDevice != s.device && !canAccessPeer(s.device, peerDevice)) {
        problem = "has no peer access to rank " + std::to_string(r) + "'s GPU (PCI " + busId + ")";
        break;
      }
      void* mapped = nullptr;
      cudaError_t opened =
          cudaIpcOpenMemHandle(&mapped, all[r].heap, cudaIpcMemLazyEnablePeerAccess);
      if (opened != cudaSuccess) {
        problem = "cannot map rank " + std::to_string(r) +
                  "'s heap: " + toString(COLLC_CUDA_CHECK(opened));
        break;
      }
      s.peerHeaps[r] = static_cast<char*>(mapped);
      s.ipcOpened[r] = true;
    }
    Expected<std::vector<std::string>> problems = s.exchange(
        "bootstrap: peer mappings", std::string_view(problem).substr(0, kExchangePayloadBytes),
        options.bootstrapSeconds);
    if (!problems)
      return problems.takeError();
    unreachable = std::move(*problems);
  }
  s.path = choosePath(s.layout, unreachable);
  if (s.path.viaNccl) {
    // NCCL moves the data; mappings of peer heaps would only hold memory.
    for (int r = 0; r < s.nranks; ++r) {
      if (s.ipcOpened[r] && cudaIpcCloseMemHandle(s.peerHeaps[r]) != cudaSuccess)
        (void)cudaGetLastError();
      if (r != s.rank)
        s.peerHeaps[r] = nullptr;
    }
    s.ipcOpened.assign(s.nranks, false);
  }
  return Error::success();
}

int ProcessWorld::rank() const {
  return state_->rank;
}
int ProcessWorld::nodeCount() const {
  return state_->layout.nodeCount;
}
int ProcessWorld::nranks() const {
  return state_->nranks;
}
const std::vector<int>& ProcessWorld::localRanks() const {
  return state_->localRanks;
}
int ProcessWorld::device(int) const {
  return state_->device;
}
cudaStream_t ProcessWorld::stream(int) const {
  return state_->stream;
}
char* ProcessWorld::heapBase(int) const {
  return state_->heap;
}
char* ProcessWorld::peerHeap(int rank, int) const {
  return rank >= 0 && rank < state_->nranks ? state_->peerHeaps[rank] : nullptr;
}
bool ProcessWorld::collectivesViaNccl() const {
  return state_->path.viaNccl;
}
bool ProcessWorld::checksCalls() const {
  return state_->checkCalls;
}
bool ProcessWorld::sharesGpus() const {
  return state_->sharedMemory != nullptr;
}
ncclComm_t ProcessWorld::ncclComm() const {
  return state_->comm;
}
std::string ProcessWorld::pathDescription() const {
  return state_->path.description;
}
std::string ProcessWorld::diagnosePeers() const {
  std::string report = state_->diagnose();
  // Before the rank cards are exchanged only the shared memory knows the peers' processes.
  if (report.empty() && state_->identities.empty() && state_->sharedMemory)
    report = state_->sharedMemory->exitedPeers();
  if (!state_->broken.empty())
    report += (report.empty() ? "" : "; ") + ("the world is broken: " + state_->broken);
  return report;
}

Error ProcessWorld::allGatherRanks(std::string_view whatView, Span<uint64_t> table,
                                   unsigned width) {
  State& s = *state_;
  const std::string what(whatView);
  if (table.size() != size_t(s.nranks) * width)
    return s.error("allGatherRanks '" + what + "': a table of " + std::to_string(table.size()) +
                   " values for " + std::to_string(s.nranks) + " ranks x " + std::to_string(width));
  std::string_view mine(reinterpret_cast<const char*>(table.data() + size_t(s.rank) * width),
                        width * sizeof(uint64_t));
  Expected<std::vector<std::string>> rows = s.exchange(what, mine, s.exchangeSeconds);
  if (!rows)
    return rows.takeError();
  for (int r = 0; r < s.nranks; ++r) {
    if ((*rows)[r].size() != mine.size())
      return s.error("allGatherRanks '" + what + "': rank " + std::to_string(r) + " sent " +
                     std::to_string((*rows)[r].size()) + " bytes, this rank " +
                     std::to_string(mine.size()));
    if (!mine.empty())
      std::memcpy(table.data() + size_t(r) * width, (*rows)[r].data(), mine.size());
  }
  return Error::success();
}

} // namespace collc
