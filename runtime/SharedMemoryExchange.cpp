#include "runtime/SharedMemoryExchange.h"

#include "abi/collc_abi.h"
#include "runtime/ProcessIdentity.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace collc {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMagic = 0x32584d48434c4c43ull; // "CLLCHMX2": 72 members
constexpr size_t kFrameAlign = 64;

Clock::time_point deadlineIn(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

/// Spins briefly, then sleeps: an exchange whose peers are already there costs a few
/// microseconds, and a long wait does not hold a core.
void backOff(unsigned& polls) {
  if (++polls < 2000)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(20));
}

} // namespace

struct SharedMemoryExchange::Segment {
  struct Member {
    std::atomic<int32_t> pid;         // 0 until the rank has joined
    std::atomic<uint64_t> startTicks; // written before pid
    std::atomic<uint64_t> arrived;    // the last exchange whose frame this rank has put in place
  };
  std::atomic<uint64_t> magic; // kMagic once rank 0 has filled the rest
  int32_t nranks;
  int32_t reserved;
  uint64_t slotBytes;
  Member members[COLLC_MAX_RANKS];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free &&
                  std::atomic<int32_t>::is_always_lock_free,
              "the segment's atomics are shared between processes: they must be lock-free");

std::string SharedMemoryExchange::segmentName(Span<const char> token) {
  uint64_t hash = 1469598103934665603ull; // FNV-1a
  for (char c : token)
    hash = (hash ^ uint8_t(c)) * 1099511628211ull;
  return fmt::format("/collc-{:016x}", hash);
}

Error SharedMemoryExchange::error(const std::string& message) const {
  return makeError("rank " + std::to_string(rank_) + ": shared-memory exchange " + name_ + ": " +
                   message);
}

Expected<std::unique_ptr<SharedMemoryExchange>> SharedMemoryExchange::join(const std::string& name,
                                                                           int rank, int nranks,
                                                                           size_t slotBytes,
                                                                           double seconds) {
  std::unique_ptr<SharedMemoryExchange> self(new SharedMemoryExchange());
  self->name_ = name;
  self->rank_ = rank;
  self->nranks_ = nranks;
  self->slotBytes_ = slotBytes;
  if (nranks < 1 || nranks > COLLC_MAX_RANKS || rank < 0 || rank >= nranks)
    return self->error(fmt::format("rank {} of {} (1 to {} ranks)", rank, nranks, COLLC_MAX_RANKS));
  const size_t headerBytes = (sizeof(Segment) + kFrameAlign - 1) / kFrameAlign * kFrameAlign;
  const size_t totalBytes = headerBytes + 2 * size_t(nranks) * slotBytes;
  const Clock::time_point deadline = deadlineIn(seconds);

  int fd = -1;
  if (rank == 0) {
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
      return self->error(std::string("cannot create it: ") + std::strerror(errno) +
                         (errno == EEXIST ? " (was the same world id used twice?)" : ""));
    self->linked_ = true;
    if (ftruncate(fd, off_t(totalBytes)) != 0) {
      const int why = errno;
      close(fd);
      return self->error(fmt::format("cannot size it to {} bytes: {} (is /dev/shm full?)",
                                     totalBytes, std::strerror(why)));
    }
  } else {
    // Rank 0 may not have made it yet, or not sized it: wait for both.
    for (unsigned polls = 0;;) {
      fd = shm_open(name.c_str(), O_RDWR, 0600);
      if (fd >= 0) {
        struct stat info {};
        if (fstat(fd, &info) == 0 && size_t(info.st_size) >= headerBytes)
          break;
        close(fd);
        fd = -1;
      } else if (errno != ENOENT) {
        return self->error(std::string("cannot open it: ") + std::strerror(errno));
      }
      if (Clock::now() >= deadline)
        return self->error(fmt::format("rank 0 did not make it within {:g} s: is rank 0 running, "
                                       "with the same world id?",
                                       seconds));
      backOff(polls);
    }
  }
  void* mapped = mmap(nullptr, totalBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int mapError = errno;
  close(fd);
  if (mapped == MAP_FAILED)
    return self->error(std::string("cannot map it: ") + std::strerror(mapError));
  self->segment_ = static_cast<Segment*>(mapped);
  self->mappedBytes_ = totalBytes;
  self->frames_ = static_cast<char*>(mapped) + headerBytes;
  Segment& segment = *self->segment_;

  if (rank == 0) {
    // ftruncate zeroed the segment: every member is "not joined", every arrival 0.
    segment.nranks = nranks;
    segment.slotBytes = slotBytes;
    segment.magic.store(kMagic, std::memory_order_release);
  } else {
    for (unsigned polls = 0; segment.magic.load(std::memory_order_acquire) != kMagic;) {
      if (Clock::now() >= deadline)
        return self->error(fmt::format("rank 0 did not finish making it within {:g} s", seconds));
      backOff(polls);
    }
    // The size was checked against this rank's own rank count: a world of another count, or of
    // another build, says so here rather than reading past the end.
    if (segment.nranks != nranks || segment.slotBytes != slotBytes)
      return self->error(fmt::format("rank 0 made it for {} ranks and frames of {} bytes; this "
                                     "rank has {} ranks and {} bytes: every rank must pass the "
                                     "same rank count",
                                     segment.nranks, segment.slotBytes, nranks, slotBytes));
  }
  Segment::Member& me = segment.members[rank];
  if (int32_t other = me.pid.load(std::memory_order_acquire))
    return self->error(fmt::format("rank {} has joined already (pid {}): two processes were given "
                                   "the same rank",
                                   rank, other));
  const ProcessIdentity identity = thisProcessIdentity();
  me.startTicks.store(identity.startTicks, std::memory_order_relaxed);
  me.pid.store(identity.pid, std::memory_order_release);
  return self;
}

SharedMemoryExchange::~SharedMemoryExchange() {
  unlinkName();
  if (segment_)
    munmap(segment_, mappedBytes_);
}

void SharedMemoryExchange::unlinkName() {
  if (linked_) {
    shm_unlink(name_.c_str());
    linked_ = false;
  }
}

std::string SharedMemoryExchange::exitedPeers() const {
  std::string report;
  const ProcessIdentity self = thisProcessIdentity();
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_)
      continue;
    const Segment::Member& member = segment_->members[r];
    ProcessIdentity peer = self;
    peer.pid = member.pid.load(std::memory_order_acquire);
    if (peer.pid == 0)
      continue; // not joined yet: nothing to check
    peer.startTicks = member.startTicks.load(std::memory_order_relaxed);
    if (checkLiveness(peer) == Liveness::Gone)
      report += (report.empty() ? "" : "; ") +
                fmt::format("rank {}'s process (pid {}) has exited", r, peer.pid);
  }
  return report;
}

Error SharedMemoryExchange::allGather(const char* mine, char* all, double seconds) {
  const uint64_t sequence = ++sequence_;
  char* copy = frames_ + (sequence & 1) * size_t(nranks_) * slotBytes_;
  std::memcpy(copy + size_t(rank_) * slotBytes_, mine, slotBytes_);
  segment_->members[rank_].arrived.store(sequence, std::memory_order_release);

  const Clock::time_point deadline = deadlineIn(seconds);
  Clock::time_point nextLivenessCheck = Clock::now() + std::chrono::milliseconds(200);
  for (int r = 0; r < nranks_; ++r) {
    Segment::Member& member = segment_->members[r];
    for (unsigned polls = 0; member.arrived.load(std::memory_order_acquire) < sequence;) {
      if (Clock::now() >= nextLivenessCheck) {
        nextLivenessCheck = Clock::now() + std::chrono::milliseconds(200);
        if (std::string gone = exitedPeers(); !gone.empty())
          return error(fmt::format("exchange #{} cannot complete: {}", sequence, gone));
      }
      if (Clock::now() >= deadline) {
        const int32_t pid = member.pid.load(std::memory_order_acquire);
        return error(fmt::format(
            "exchange #{}: rank {} did not come within {:g} s ({}, at exchange #{})", sequence, r,
            seconds, pid ? fmt::format("pid {}", pid) : std::string("never joined"),
            member.arrived.load(std::memory_order_acquire)));
      }
      backOff(polls);
    }
  }
  std::memcpy(all, copy, size_t(nranks_) * slotBytes_);
  // Every rank has joined (each put a frame in): the name is no longer needed.
  if (rank_ == 0)
    unlinkName();
  return Error::success();
}

} // namespace collc
