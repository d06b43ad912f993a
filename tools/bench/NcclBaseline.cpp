#include "tools/bench/NcclBaseline.h"

#include "abi/CollectiveShapes.h"
#include "runtime/Align.h"
#include "runtime/CudaCheck.h"
#include "runtime/Devices.h"
#include "runtime/NcclLibrary.h"
#include "tools/harness/HostData.h"
#include "tools/harness/InterpretedReference.h"
#include "tools/harness/RankGraphs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cuda_runtime_api.h>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

// How the graphs are captured and replayed, and why.
//
// One process drives every GPU, so NCCL sees several communicators in one process. NCCL's guide
// warns about exactly this with CUDA graphs: several GPUs per process "may result in deadlocks
// ... likely with single-threaded applications: in some cases cudaGraphLaunch may block,
// preventing the launch across all GPUs", and the mechanism that lets graph-captured and eager
// NCCL work mix "has been seen to cause CUDA to deadlock when the graphs of multiple
// communicators are cudaGraphLaunch()'d from the same thread". So every rank gets its own host
// thread, both to capture and to launch its graph:
//  - each thread captures its own stream (cudaStreamCaptureModeThreadLocal, so that no other
//    thread's CUDA calls can invalidate it) and enqueues its graphOps operations on its own
//    communicator, ungrouped (one communicator per thread needs no group; an alltoall groups its
//    own sends and receives); all threads run at the same time, so whatever NCCL must settle
//    between ranks during capture can proceed;
//  - each replay releases the threads together from a spinning start line, and each records its
//    start event, launches its graph and records its stop event on its own stream; a launch that
//    blocks until the peer's graph is launched cannot deadlock.
// This is also how one process per GPU behaves, the way the anchors were measured, and each
// rank's graph holds only its own work. The alternative (one thread capturing all streams with
// a ncclGroupStart/End around each operation, then launching every graph) is the pattern the
// guide warns about.
//
// Calls made from one thread on behalf of every rank are grouped, as NCCL requires for several
// communicators: the eager calls and the window (de)registrations; ncclCommInitAll groups
// itself. Every call that can wait for another rank runs on a thread that the caller waits for
// with a deadline (runOnRankThreads), and every wait for the GPUs polls with a deadline
// (State::waitIdle): a hang becomes an error instead of a stuck process.

namespace collc {

namespace {

using Clock = std::chrono::steady_clock;

// Base deadline of every wait; long graphs get kSecondsPerOpAllowance more per operation.
constexpr double kWaitSeconds = 30;
constexpr double kSecondsPerOpAllowance = 0.01;
// ncclCommInitAll probes the topology and connects every pair; give it time on 8 GPUs.
constexpr double kInitSeconds = 120;
// Mismatch lines kept in a report, over all ranks and checks.
constexpr unsigned kMaxReportedMismatches = 8;
// ncclCommWindowRegister wants window sizes in multiples of this (NCCL_WIN_REQUIRED_ALIGNMENT).
constexpr uint64_t kWindowAlignment = 4096;

/// An error of this file; the public functions put "nccl baseline: " (and what was measured)
/// in front when it leaves them.
Error baselineError(const std::string& message) {
  return makeError(message);
}

/// The error with `context: ` in front of its message (all its messages joined by "; ").
Error withContext(const std::string& context, Error err) {
  if (!err)
    return err;
  return makeError(context + ": " + toString(std::move(err)));
}

Clock::time_point deadlineIn(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string listRanks(const std::vector<bool>& done) {
  std::string ranks;
  for (size_t r = 0; r < done.size(); ++r)
    if (!done[r])
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  return ranks;
}

/// Work for one host thread per rank, shared by those threads and the thread that waits for
/// them. Jointly owned (shared_ptr): a thread still stuck in NCCL after the waiter gave up keeps
/// the job alive and touches nothing the waiter frees. (What the body reaches through pointers,
/// the NcclBaseline state, is then never freed: see State::hung.)
struct RankJob {
  std::function<Error(int rank, RankJob& job)> body;
  int threads = 0;
  Clock::time_point deadline;

  std::mutex mutex;
  std::condition_variable finishedChanged;
  int finished = 0;                // guarded by mutex
  std::vector<std::string> errors; // guarded by mutex; "" where the rank succeeded
  std::vector<bool> done;          // guarded by mutex
  std::atomic<int> arrived{0};
  std::atomic<bool> failed{false};

  /// A start line for the threads: returns true once every thread has arrived, false if one
  /// failed before arriving or the deadline passed. Spins, so that the threads leave it within
  /// about a microsecond of each other (their launches then start together).
  bool arriveAndWait() {
    arrived.fetch_add(1);
    while (arrived.load() < threads) {
      if (failed.load() || Clock::now() >= deadline)
        return false;
      std::this_thread::yield();
    }
    return true;
  }
};

/// Runs body(rank) for rank 0..threads-1, each on a new thread, all at the same time, and waits
/// until all have returned, but not past `seconds`. Returns the ranks' errors joined ("rank r:
/// ..."). Past the deadline the threads are detached and `stuck` is set: they may still be
/// inside NCCL or CUDA, and whatever the body reaches must then stay alive forever.
Error runOnRankThreads(int threads, std::function<Error(int, RankJob&)> body, double seconds,
                       const std::string& what, bool& stuck) {
  auto job = std::make_shared<RankJob>();
  job->body = std::move(body);
  job->threads = threads;
  job->deadline = deadlineIn(seconds);
  job->errors.assign(threads, "");
  job->done.assign(threads, false);
  std::vector<std::thread> running;
  for (int rank = 0; rank < threads; ++rank)
    running.emplace_back([job, rank] {
      Error err = job->body(rank, *job);
      std::string message;
      if (err) {
        job->failed.store(true);
        message = toString(std::move(err));
      }
      std::lock_guard<std::mutex> lock(job->mutex);
      job->errors[rank] = std::move(message);
      job->done[rank] = true;
      ++job->finished;
      job->finishedChanged.notify_all();
    });

  std::unique_lock<std::mutex> lock(job->mutex);
  const bool allFinished = job->finishedChanged.wait_until(
      lock, job->deadline, [&] { return job->finished == threads; });
  if (!allFinished) {
    const std::string stillRunning = listRanks(job->done);
    lock.unlock();
    for (std::thread& thread : running)
      thread.detach();
    stuck = true;
    return baselineError(
        "hang: " + what + ": " +
        (threads > 1 ? "the thread of rank(s) " + stillRunning + " is" : std::string("it is")) +
        " still inside NCCL or CUDA " + std::to_string(int(seconds)) +
        " s later. Work that never finishes keeps the process from exiting: "
        "run it under `timeout`");
  }
  lock.unlock();
  for (std::thread& thread : running)
    thread.join();
  std::string messages;
  for (int rank = 0; rank < threads; ++rank)
    if (!job->errors[rank].empty())
      messages += (messages.empty() ? "" : "; ") +
                  (threads > 1 ? "rank " + std::to_string(rank) + ": " : std::string()) +
                  job->errors[rank];
  if (messages.empty())
    return Error::success();
  return baselineError(what + ": " + messages);
}

} // namespace

struct NcclBaseline::State {
  const NcclLibrary* nccl = nullptr;
  std::vector<int> devices;
  uint64_t maxBytes = 0;
  uint64_t bufferBytes = 0; // per buffer: maxBytes rounded up to kWindowAlignment
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> starts, stops;
  std::vector<void*> plainIn, plainOut; // cudaMalloc
  std::vector<void*> symIn, symOut;     // ncclMemAlloc
  std::vector<ncclWindow_t> symInWindows, symOutWindows;
  bool symmetricReady = false;
  std::vector<cudaGraphExec_t> graphs; // the measurement in progress

  // Set when the communicators may be out of step (a capture, launch or group call failed on
  // some ranks only): further measurements are refused and the destructor aborts the
  // communicators instead of destroying them.
  std::string unusable;
  // Set when a wait passed its deadline: work or threads may still be running and using every
  // resource here, so the destructor leaves all of it alone and this State is never freed.
  bool hung = false;

  explicit State(std::vector<int> devices_, uint64_t maxBytes_, const NcclLibrary* nccl_)
      : nccl(nccl_), devices(std::move(devices_)), maxBytes(maxBytes_),
        bufferBytes(alignUp(maxBytes_, kWindowAlignment)) {
    const size_t n = devices.size();
    for (std::vector<void*>* pointers : {&plainIn, &plainOut, &symIn, &symOut})
      pointers->assign(n, nullptr);
    symInWindows.assign(n, nullptr);
    symOutWindows.assign(n, nullptr);
    comms.assign(n, nullptr);
    streams.assign(n, nullptr);
    starts.assign(n, nullptr);
    stops.assign(n, nullptr);
    graphs.assign(n, nullptr);
  }

  int nranks() const { return static_cast<int>(devices.size()); }

  /// Runs body(rank) on one thread per rank, bounded (see runOnRankThreads). The body may reach
  /// this State (never freed once hung) and what it captured by value, nothing else.
  Error runOnRanks(const std::string& what, double seconds,
                   std::function<Error(int, RankJob&)> body) {
    return runOnRankThreads(nranks(), std::move(body), seconds, what, hung);
  }
  /// Runs `body` on one thread, bounded: for calls made from one thread for every rank.
  Error runBounded(const std::string& what, double seconds, std::function<Error()> body) {
    return runOnRankThreads(
        1, [body = std::move(body)](int, RankJob&) { return body(); }, seconds, what, hung);
  }

  /// Waits until every rank's stream is idle, polling, at most `seconds`; an NCCL asynchronous
  /// error on any communicator ends the wait early. Past the deadline the state is hung.
  Error waitIdle(double seconds, const std::string& what) {
    const Clock::time_point deadline = deadlineIn(seconds);
    std::vector<bool> done(streams.size(), false);
    for (;;) {
      bool all = true;
      for (size_t r = 0; r < streams.size(); ++r) {
        ncclResult_t asyncError = ncclSuccess;
        if (comms[r] && nccl->commGetAsyncError(comms[r], &asyncError) == ncclSuccess &&
            asyncError != ncclSuccess && asyncError != ncclInProgress) {
          unusable = "NCCL reported an asynchronous error";
          return baselineError(what + ": NCCL reports an asynchronous error on rank " +
                               std::to_string(r) + ": " + nccl->getErrorString(asyncError));
        }
        if (done[r] || !streams[r]) {
          done[r] = true;
          continue;
        }
        cudaError_t status = cudaStreamQuery(streams[r]);
        if (status == cudaSuccess) {
          done[r] = true;
          continue;
        }
        if (status != cudaErrorNotReady)
          return withContext(what + ": rank " + std::to_string(r), COLLC_CUDA_CHECK(status));
        (void)cudaGetLastError();
        all = false;
      }
      if (all)
        return Error::success();
      if (Clock::now() >= deadline) {
        hung = true;
        return baselineError("hang: " + what + ": rank(s) " + listRanks(done) + " still running " +
                             std::to_string(int(seconds)) +
                             " s later. NCCL kernels that never finish keep the process from "
                             "exiting: run it under `timeout`");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  /// One eager operation on every communicator from one thread, hence grouped (an alltoall's
  /// own group nests inside).
  Error eagerCall(const NcclCollective& collective, std::vector<void*> in, std::vector<void*> out,
                  uint64_t count) {
    return runBounded(
        "eager " + std::string(ncclCallName(collective.kind)), kWaitSeconds,
        [this, collective, in, out, count]() -> Error {
          COLLC_NCCL_TRY(*nccl, nccl->groupStart());
          Error enqueued = Error::success();
          for (int r = 0; r < nranks() && !enqueued; ++r)
            enqueued =
                nccl->enqueue(collective, count, nranks(), in[r], out[r], comms[r], streams[r]);
          // Ended even after a failure: NCCL then drops what the group holds.
          return joinErrors(std::move(enqueued), COLLC_NCCL_CHECK(*nccl, nccl->groupEnd()));
        });
  }

  /// Registers buffers[r] as a symmetric window of comms[r] for every rank, in one group
  /// (registration is collective over the communicators).
  Error registerWindows(std::vector<void*>* buffers, std::vector<ncclWindow_t>* windows) {
    return runBounded("ncclCommWindowRegister", kWaitSeconds, [this, buffers, windows]() -> Error {
      COLLC_NCCL_TRY(*nccl, nccl->groupStart());
      Error err = Error::success();
      for (int r = 0; r < nranks() && !err; ++r)
        err = COLLC_NCCL_CHECK_COMM(*nccl, comms[r],
                                    nccl->commWindowRegister(comms[r], (*buffers)[r], bufferBytes,
                                                             &(*windows)[r],
                                                             NCCL_WIN_COLL_SYMMETRIC));
      return joinErrors(std::move(err), COLLC_NCCL_CHECK(*nccl, nccl->groupEnd()));
    });
  }

  /// Deregisters every window in `windows`, in one group (collective as well).
  Error deregisterWindows(std::vector<ncclWindow_t>* windows) {
    return runBounded("ncclCommWindowDeregister", kWaitSeconds, [this, windows]() -> Error {
      COLLC_NCCL_TRY(*nccl, nccl->groupStart());
      Error err = Error::success();
      for (int r = 0; r < nranks(); ++r)
        if ((*windows)[r]) {
          err =
              joinErrors(std::move(err),
                         COLLC_NCCL_CHECK_COMM(
                             *nccl, comms[r], nccl->commWindowDeregister(comms[r], (*windows)[r])));
          (*windows)[r] = nullptr;
        }
      return joinErrors(std::move(err), COLLC_NCCL_CHECK(*nccl, nccl->groupEnd()));
    });
  }

  /// Allocates the symmetric buffers and registers them as windows on every communicator, once.
  Error ensureSymmetric() {
    if (symmetricReady)
      return Error::success();
    if (Error err = nccl->requireSymmetric())
      return err;
    {
      ScopedDevice restore;
      for (int r = 0; r < nranks(); ++r) {
        COLLC_CUDA_TRY(cudaSetDevice(devices[r]));
        for (std::vector<void*>* buffers : {&symIn, &symOut}) {
          if ((*buffers)[r])
            continue; // left from an earlier attempt
          void* buffer = nullptr;
          if (Error err = COLLC_NCCL_CHECK(*nccl, nccl->memAlloc(&buffer, bufferBytes)))
            return withContext("symmetric buffers on rank " + std::to_string(r), std::move(err));
          (*buffers)[r] = buffer;
          COLLC_CUDA_TRY(cudaMemset(buffer, 0, bufferBytes));
        }
      }
    }
    for (auto [buffers, windows] :
         {std::make_pair(&symIn, &symInWindows), std::make_pair(&symOut, &symOutWindows)})
      if (Error err = registerWindows(buffers, windows)) {
        if (!hung)
          unusable = "registering the symmetric windows failed";
        return err;
      }
    symmetricReady = true;
    return Error::success();
  }

  void destroyGraphs() {
    for (cudaGraphExec_t& graph : graphs) {
      if (graph && cudaGraphExecDestroy(graph) != cudaSuccess)
        (void)cudaGetLastError();
      graph = nullptr;
    }
  }

  /// Frees everything, unless hung (then nothing may be touched).
  void release() {
    if (hung)
      return;
    destroyGraphs();
    if (Error err = waitIdle(kWaitSeconds, "finishing before teardown"))
      consumeError(std::move(err));
    if (hung)
      return;
    // A window is deregistered before its memory is freed; with communicators out of step a
    // collective deregistration could wait forever, so their windows and memory stay.
    if (unusable.empty())
      for (std::vector<ncclWindow_t>* windows : {&symInWindows, &symOutWindows}) {
        if (std::none_of(windows->begin(), windows->end(),
                         [](ncclWindow_t w) { return w != nullptr; }))
          continue;
        consumeError(deregisterWindows(windows));
        if (hung)
          return;
      }
    // The communicators go first: NCCL may still hold registrations of the user buffers (graph
    // registration of plain buffers). NCCL's own single-thread example destroys
    // ncclCommInitAll's communicators one by one; out of step, abort instead: destroy could wait
    // for ranks that will never get there.
    consumeError(runBounded("destroying the communicators", kWaitSeconds, [this] {
      for (ncclComm_t& comm : comms)
        if (comm) {
          (void)(unusable.empty() ? nccl->commDestroy(comm) : nccl->commAbort(comm));
          comm = nullptr;
        }
      return Error::success();
    }));
    if (hung)
      return;
    ScopedDevice restore;
    for (int r = 0; r < nranks(); ++r) {
      if (cudaSetDevice(devices[r]) != cudaSuccess)
        (void)cudaGetLastError();
      // Memory of a window that could not be deregistered stays: NCCL maps it on the peers.
      if (symIn[r] && !symInWindows[r])
        (void)nccl->memFree(symIn[r]);
      if (symOut[r] && !symOutWindows[r])
        (void)nccl->memFree(symOut[r]);
      for (void* buffer : {plainIn[r], plainOut[r]})
        if (buffer && cudaFree(buffer) != cudaSuccess)
          (void)cudaGetLastError();
      for (cudaEvent_t event : {starts[r], stops[r]})
        if (event && cudaEventDestroy(event) != cudaSuccess)
          (void)cudaGetLastError();
      if (streams[r] && cudaStreamDestroy(streams[r]) != cudaSuccess)
        (void)cudaGetLastError();
    }
  }
};

NcclBaseline::NcclBaseline(std::unique_ptr<State> state) : state_(std::move(state)) {}

NcclBaseline::~NcclBaseline() {
  state_->release();
  if (state_->hung)
    (void)state_.release(); // still in use by threads or kernels that never finished
}

int NcclBaseline::nranks() const {
  return state_->nranks();
}
const std::vector<int>& NcclBaseline::devices() const {
  return state_->devices;
}
uint64_t NcclBaseline::maxBytes() const {
  return state_->maxBytes;
}

Expected<std::unique_ptr<NcclBaseline>> NcclBaseline::create(std::vector<int> devices,
                                                             uint64_t maxBytes) {
  auto build = [&]() -> Expected<std::unique_ptr<NcclBaseline>> {
    if (devices.empty())
      return baselineError("no devices given");
    if (maxBytes == 0)
      return baselineError("maxBytes must be at least 1");
    Expected<const NcclLibrary*> nccl = ncclLibrary();
    if (!nccl)
      return nccl.takeError();
    // The project's programs turn NVLink multicast off before NCCL loads (the GPU machine's rule,
    // see the README); a value set by hand must be 0 as well.
    if (const char* nvls = std::getenv("NCCL_NVLS_ENABLE"); nvls && std::string(nvls) != "0")
      return baselineError(std::string("NCCL_NVLS_ENABLE=") + nvls +
                           " in the environment: NVLink multicast must stay off on the GPU "
                           "machine (see the README); unset it or set it to 0");
    Expected<int> gpus = gpuCount();
    if (!gpus)
      return gpus.takeError();
    std::set<int> seen;
    for (int device : devices) {
      if (device < 0 || device >= *gpus)
        return baselineError("device " + std::to_string(device) + " does not exist (" +
                             std::to_string(*gpus) + " visible)");
      if (!seen.insert(device).second)
        return baselineError("device " + std::to_string(device) +
                             " given twice (NCCL needs one rank per GPU)");
    }

    const int n = static_cast<int>(devices.size());
    // From here on `baseline` owns the state and frees it (or leaves it, if hung) on every path.
    std::unique_ptr<NcclBaseline> baseline(
        new NcclBaseline(std::make_unique<State>(std::move(devices), maxBytes, *nccl)));
    State& s = *baseline->state_;
    std::vector<ncclComm_t> comms(n, nullptr);
    State* state = &s;
    Error initialized = s.runBounded("ncclCommInitAll", kInitSeconds, [state, n] {
      // Into the state's own vector only on success: a failed init leaves nothing to destroy.
      std::vector<ncclComm_t> made(n, nullptr);
      ncclResult_t result = state->nccl->commInitAll(made.data(), n, state->devices.data());
      if (result == ncclSuccess)
        state->comms = std::move(made);
      return COLLC_NCCL_CHECK(*state->nccl, result);
    });
    if (initialized)
      return initialized;
    ScopedDevice restore;
    for (int r = 0; r < n; ++r) {
      COLLC_CUDA_TRY(cudaSetDevice(s.devices[r]));
      COLLC_CUDA_TRY(cudaStreamCreateWithFlags(&s.streams[r], cudaStreamNonBlocking));
      COLLC_CUDA_TRY(cudaEventCreate(&s.starts[r]));
      COLLC_CUDA_TRY(cudaEventCreate(&s.stops[r]));
      COLLC_CUDA_TRY(cudaMalloc(&s.plainIn[r], s.bufferBytes));
      COLLC_CUDA_TRY(cudaMalloc(&s.plainOut[r], s.bufferBytes));
      COLLC_CUDA_TRY(cudaMemset(s.plainIn[r], 0, s.bufferBytes));
      COLLC_CUDA_TRY(cudaMemset(s.plainOut[r], 0, s.bufferBytes));
    }
    return baseline;
  };
  Expected<std::unique_ptr<NcclBaseline>> baseline = build();
  if (!baseline)
    return withContext("nccl baseline", baseline.takeError());
  return baseline;
}

uint64_t ncclBaselineBytes(const NcclCollective& collective, uint64_t count, int nranks) {
  return ncclCallShape(collective.kind, count, nranks).bufferElems() * sizeOf(collective.dtype);
}

Expected<NcclTiming> NcclBaseline::measureAllReduce(uint64_t count, DType dtype, ReduceOp op,
                                                    bool symmetric,
                                                    const NcclBaselineOptions& options) {
  NcclCollective allReduce;
  allReduce.dtype = dtype;
  allReduce.op = op;
  return measureCollective(allReduce, count, symmetric, options);
}

Expected<NcclTiming> NcclBaseline::measureCollective(const NcclCollective& collective,
                                                     uint64_t count, bool symmetric,
                                                     const NcclBaselineOptions& options) {
  std::string what = std::string(name(collective.kind)) + " of " + std::to_string(count) + " " +
                     std::string(name(collective.dtype));
  if (reduces(collective.kind))
    what += " " + std::string(name(collective.op));
  if (hasRoot(collective.kind))
    what += " root " + std::to_string(collective.root);
  what += std::string(" (") + (symmetric ? "symmetric windows" : "plain buffers") + ")";
  Expected<NcclTiming> timing = measure(collective, count, symmetric, options);
  if (!timing)
    return withContext("nccl baseline: " + what, timing.takeError());
  return timing;
}

Expected<NcclTiming> NcclBaseline::measure(const NcclCollective& collective, uint64_t count,
                                           bool symmetric, const NcclBaselineOptions& options) {
  State& s = *state_;
  if (s.hung)
    return baselineError("unusable after an earlier hang");
  if (!s.unusable.empty())
    return baselineError("unusable: " + s.unusable);
  const int n = s.nranks();
  const DType dtype = collective.dtype;
  const uint64_t elementBytes = sizeOf(dtype);
  // Elements of the call's larger buffer per element of the count: nranks for the kinds with a
  // block per rank, else 1.
  const uint64_t perCount = ncclCallShape(collective.kind, 1, n).bufferElems();
  const uint64_t mostCount = s.maxBytes / elementBytes / perCount;
  if (count == 0 || count > mostCount)
    return baselineError("between 1 and " + std::to_string(mostCount) +
                         " elements fit the buffers made for " + std::to_string(s.maxBytes) +
                         " bytes (" + std::string(name(collective.kind)) + " on " +
                         std::to_string(n) + " ranks)");
  if (hasRoot(collective.kind) && (collective.root < 0 || collective.root >= n))
    return baselineError("root " + std::to_string(collective.root) + " is not a rank of " +
                         std::to_string(n));
  if (options.graphOps < 1 || options.replays < 1)
    return baselineError("timing needs at least one operation per graph and one replay");
  if (!options.reference)
    return baselineError("no spec program to check " + std::string(name(collective.kind)) +
                         " against: the reference is a collc spec of the collective, interpreted");
  if (Error err = s.nccl->requireCollective(collective.kind))
    return err;
  if (symmetric)
    if (Error err = s.ensureSymmetric())
      return err;

  const NcclCallShape shape = ncclCallShape(collective.kind, count, n);
  const uint64_t inBytes = shape.inputElems * elementBytes;
  const uint64_t outBytes = shape.outputElems * elementBytes;
  const std::string callName(ncclCallName(collective.kind));
  const int graphOps = options.graphOps;
  const std::vector<void*> in = symmetric ? s.symIn : s.plainIn;
  const std::vector<void*> out = symmetric ? s.symOut : s.plainOut;
  std::vector<std::vector<char>> hostIn(n, std::vector<char>(inBytes));
  std::vector<std::vector<char>> hostOut(n, std::vector<char>(outBytes));
  std::mt19937_64 rng(options.seed);
  NcclTiming timing;
  timing.correct = true;

  // Fresh random inputs on every rank, outputs poisoned with 0xFF bytes (NaN in every type), and
  // all of it on the devices before anything runs. Streams are idle on entry.
  auto prepare = [&]() -> Error {
    {
      ScopedDevice restore;
      for (int r = 0; r < n; ++r) {
        fillRandom(dtype, hostIn[r].data(), shape.inputElems, rng);
        COLLC_CUDA_TRY(cudaSetDevice(s.devices[r]));
        COLLC_CUDA_TRY(cudaMemcpyAsync(in[r], hostIn[r].data(), inBytes, cudaMemcpyHostToDevice,
                                       s.streams[r]));
        COLLC_CUDA_TRY(cudaMemsetAsync(out[r], 0xFF, outBytes, s.streams[r]));
      }
    }
    return s.waitIdle(kWaitSeconds, "uploading inputs");
  };
  // Copies every rank's output back (streams idle) and compares it with options.reference
  // interpreted; elements NCCL leaves undefined (a reduce's output off the root) the spec leaves
  // unwritten too, and they are not compared.
  auto fetchAndCheck = [&](const std::string& label) -> Error {
    {
      ScopedDevice restore;
      for (int r = 0; r < n; ++r) {
        COLLC_CUDA_TRY(cudaSetDevice(s.devices[r]));
        COLLC_CUDA_TRY(cudaMemcpyAsync(hostOut[r].data(), out[r], outBytes, cudaMemcpyDeviceToHost,
                                       s.streams[r]));
      }
    }
    if (Error err = s.waitIdle(kWaitSeconds, "downloading outputs"))
      return err;
    std::vector<const void*> inputs;
    for (const std::vector<char>& host : hostIn)
      inputs.push_back(host.data());
    // What the spec computes for this call; it leaves unwritten what NCCL leaves undefined.
    CompiledCollective variant;
    variant.kind = collective.kind;
    variant.dtype = dtype;
    variant.op = collective.op;
    variant.root = collective.root;
    variant.nranks = n;
    InterpretedReference expected;
    try {
      expected = interpretReference(*options.reference, variant, count, inputs,
                                    std::vector<std::vector<const void*>>(size_t(n)));
    } catch (const interpret::InterpretError& error) {
      return baselineError(std::string("the reference: ") + error.what());
    }
    for (int r = 0; r < n; ++r) {
      const std::string rankLabel = label + " rank " + std::to_string(r) + " out";
      Comparison comparison = compareInterpreted(
          dtype, expected.value.output[size_t(r)], expected.bound.output[size_t(r)],
          hostOut[r].data(), rankLabel, kMaxReportedMismatches);
      if (comparison.ok())
        continue;
      timing.correct = false;
      if (std::count(timing.firstMismatches.begin(), timing.firstMismatches.end(), '\n') <
          kMaxReportedMismatches)
        timing.firstMismatches += rankLabel + ": " + std::to_string(comparison.mismatches) +
                                  " of " + std::to_string(shape.outputElems) + " elements wrong\n" +
                                  comparison.firstMismatches;
    }
    return Error::success();
  };
  // One eager call, checked. The first one is also the warm-up: NCCL connects the ranks for this
  // size now, so that no connection is set up while the graphs are captured.
  auto eagerCheck = [&](const std::string& label) -> Error {
    if (Error err = prepare())
      return err;
    if (Error err = s.eagerCall(collective, in, out, count)) {
      if (s.hung)
        return err;
      s.unusable = "an eager " + callName + " failed";
      return joinErrors(std::move(err), s.waitIdle(5, "after a failed eager call"));
    }
    if (Error err = s.waitIdle(kWaitSeconds, label))
      return err;
    return fetchAndCheck(label);
  };

  if (Error err = eagerCheck("eager call before timing"))
    return err;

  // One graph per rank, captured on the rank's own thread (see the comment at the top). The
  // threads reach the state through `state` and copies, nothing on this stack (see RankJob).
  State* state = &s;
  Error captured = s.runOnRanks(
      "capturing the graphs", kWaitSeconds,
      [state, in, out, count, collective, n, graphOps](int r, RankJob&) -> Error {
        const NcclLibrary& nccl = *state->nccl;
        cudaStream_t stream = state->streams[r];
        COLLC_CUDA_TRY(cudaSetDevice(state->devices[r]));
        COLLC_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        Error enqueued = Error::success();
        for (int i = 0; i < graphOps && !enqueued; ++i)
          enqueued = nccl.enqueue(collective, count, n, in[r], out[r], state->comms[r], stream);
        cudaGraph_t graph = nullptr;
        cudaError_t ended = cudaStreamEndCapture(stream, &graph);
        if (enqueued || ended != cudaSuccess) {
          if (graph && cudaGraphDestroy(graph) != cudaSuccess)
            (void)cudaGetLastError();
          return joinErrors(std::move(enqueued), COLLC_CUDA_CHECK(ended));
        }
        cudaError_t instantiated = cudaGraphInstantiate(&state->graphs[r], graph, 0);
        if (cudaGraphDestroy(graph) != cudaSuccess)
          (void)cudaGetLastError();
        COLLC_CUDA_TRY(instantiated);
        return Error::success();
      });
  // The graphs go on every way out, before anything else may destroy the communicators (NCCL
  // waits in ncclCommDestroy for graphs that hold its operations). Not when hung: they may run.
  struct GraphsGuard {
    State& s;
    ~GraphsGuard() {
      if (!s.hung)
        s.destroyGraphs();
    }
  } graphsGuard{s};
  if (captured) {
    if (!s.hung)
      s.unusable = "capturing " + callName + " into a graph failed";
    return captured;
  }

  // Launches every rank's graph between its timing events, each from the rank's own thread, all
  // released together; then waits (bounded) and returns each rank's replay time in µs.
  const double graphSeconds = kWaitSeconds + graphOps * kSecondsPerOpAllowance;
  auto replay = [&]() -> Expected<std::vector<double>> {
    Error launched =
        s.runOnRanks("launching the graphs", kWaitSeconds, [state](int r, RankJob& job) -> Error {
          cudaStream_t stream = state->streams[r];
          COLLC_CUDA_TRY(cudaSetDevice(state->devices[r]));
          if (!job.arriveAndWait())
            return baselineError("gave up waiting for the other ranks to be ready to launch");
          COLLC_CUDA_TRY(cudaEventRecord(state->starts[r], stream));
          COLLC_CUDA_TRY(cudaGraphLaunch(state->graphs[r], stream));
          COLLC_CUDA_TRY(cudaEventRecord(state->stops[r], stream));
          return Error::success();
        });
    if (launched) {
      if (s.hung)
        return launched;
      // Some ranks may have launched: their collectives wait for ranks that did not.
      s.unusable = "launching the graphs failed on some ranks";
      return joinErrors(std::move(launched), s.waitIdle(5, "after a failed graph launch"));
    }
    if (Error err = s.waitIdle(graphSeconds, "graph replay"))
      return err;
    std::vector<double> us;
    ScopedDevice restore;
    for (int r = 0; r < n; ++r) {
      float ms = 0;
      COLLC_CUDA_TRY(cudaSetDevice(s.devices[r]));
      COLLC_CUDA_TRY(cudaEventElapsedTime(&ms, s.starts[r], s.stops[r]));
      us.push_back(ms * 1000.0);
    }
    return us;
  };

  // The first replay uploads the graphs and warms caches and clocks; it is not timed.
  if (Error err = prepare())
    return err;
  if (Expected<std::vector<double>> warmup = replay(); !warmup)
    return warmup.takeError();

  std::vector<double> slowest;
  std::vector<std::vector<double>> perRank(n);
  for (int i = 0; i < options.replays; ++i) {
    if (Error err = prepare())
      return err;
    Expected<std::vector<double>> us = replay();
    if (!us)
      return us.takeError();
    for (int r = 0; r < n; ++r)
      perRank[r].push_back((*us)[r] / graphOps);
    slowest.push_back(*std::max_element(us->begin(), us->end()) / graphOps);
  }
  timing.usPerOp = median(slowest);
  for (const std::vector<double>& times : perRank)
    timing.usPerOpPerRank.push_back(median(times));
  // The outputs hold the last replay's last operation, computed from the last inputs.
  if (Error err = fetchAndCheck("graph replay " + std::to_string(options.replays) + " op " +
                                std::to_string(graphOps)))
    return err;
  s.destroyGraphs();

  if (Error err = eagerCheck("eager call after timing"))
    return err;
  return timing;
}

} // namespace collc
