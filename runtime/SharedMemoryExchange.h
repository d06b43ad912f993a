// The host-side exchanges of a process world whose ranks share one GPU (ProcessWorld with
// shareGpu): NCCL refuses two ranks on one GPU, so these ranks talk through one POSIX
// shared-memory segment instead. Rank 0 makes it under a name every rank derives from the same
// token (the world's id); the others open it. Each exchange is an all-gather of one fixed-size
// frame per rank (ExchangeFrame.h), double-buffered by the exchange's sequence number, so no rank
// overwrites a frame that a slower one still reads. Every wait is bounded, and a peer whose
// process exited is named. Once every rank has joined, rank 0 removes the name, so nothing is left
// behind however the processes end. Pure POSIX: tested on the CPU with forked processes.
#ifndef COLLC_RUNTIME_SHAREDMEMORYEXCHANGE_H
#define COLLC_RUNTIME_SHAREDMEMORYEXCHANGE_H

#include "runtime/Span.h"
#include "runtime/Status.h"

#include <cstddef>
#include <memory>
#include <string>

namespace collc {

class SharedMemoryExchange {
public:
  /// The segment's name for a world's token: "/collc-" and 16 hex digits of its hash.
  static std::string segmentName(Span<const char> token);

  /// Rank 0 makes the segment `name` for `nranks` ranks; the others open it, waiting for rank 0 at
  /// most `seconds`. `slotBytes` is the size of one rank's frame (the same on every rank).
  static Expected<std::unique_ptr<SharedMemoryExchange>>
  join(const std::string& name, int rank, int nranks, size_t slotBytes, double seconds);

  /// Unmaps the segment; rank 0 removes its name if that has not happened yet.
  ~SharedMemoryExchange();
  SharedMemoryExchange(const SharedMemoryExchange&) = delete;
  SharedMemoryExchange& operator=(const SharedMemoryExchange&) = delete;

  /// Every rank's frame: `mine` holds slotBytes, `all` receives nranks * slotBytes, rank r's at
  /// r * slotBytes. No rank returns before all have called it. Bounded by `seconds`; a peer whose
  /// process exited ends the wait at once, named in the error.
  Error allGather(const char* mine, char* all, double seconds);

  /// "rank 1's process (pid 4242) has exited; ..." for joined peers that are gone; "" if none.
  std::string exitedPeers() const;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

private:
  struct Segment;
  SharedMemoryExchange() = default;
  Error error(const std::string& message) const;
  void unlinkName();

  std::string name_;
  int rank_ = 0, nranks_ = 0;
  size_t slotBytes_ = 0;
  size_t mappedBytes_ = 0;
  Segment* segment_ = nullptr;
  char* frames_ = nullptr; // [2][nranks][slotBytes]
  uint64_t sequence_ = 0;
  bool linked_ = false; // rank 0: the name still exists
};

} // namespace collc

#endif // COLLC_RUNTIME_SHAREDMEMORYEXCHANGE_H
