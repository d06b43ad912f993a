// Hands a few bytes from rank 0 to every other rank without a server of its own: what a
// process-per-GPU world needs to share NCCL's unique id before NCCL can talk. Two ways, both
// named by COLLC_RENDEZVOUS:
//  - "file:PATH": rank 0 writes PATH (a temporary file renamed into place, so readers never see
//    half of it); the others poll for it. PATH must be readable by every rank (one node, or a
//    shared file system) and fresh for each job: readers ignore a file older than their own
//    process by more than kStaleFileSlackSeconds, and rank 0 removes it once the world is up.
//  - "tcp:HOST:PORT": rank 0 listens on HOST:PORT and answers each other rank once; the others
//    connect (retrying until rank 0 is up). HOST is rank 0's address (127.0.0.1 on one node).
// Every wait has a deadline. Pure POSIX, no GPU: tested on the CPU.
#ifndef COLLC_RUNTIME_RENDEZVOUS_H
#define COLLC_RUNTIME_RENDEZVOUS_H

#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace collc {

/// A reader's tolerance for a rendezvous file written before it started (clock skew, launch
/// delay); anything older is left over from an earlier job.
constexpr double kStaleFileSlackSeconds = 30;

struct RendezvousAddress {
  enum class Kind { File, Tcp };
  Kind kind = Kind::File;
  std::string path; // File
  std::string host; // Tcp
  uint16_t port = 0;
  std::string text; // as given
};

/// Parses "file:PATH" (PATH absolute) or "tcp:HOST:PORT" (also "tcp://HOST:PORT"; HOST may be
/// "[v6 address]"). The error says what is accepted.
Expected<RendezvousAddress> parseRendezvous(std::string_view text);

/// Rank 0 publishes `payload`; ranks 1..nranks-1 receive it. Returns the payload on every rank.
/// Rank 0 returns once every other rank has taken it (tcp) or once it is written (file). A
/// reader that finds a payload published for another rank count fails, saying both. Bounded by
/// `timeoutSeconds`; the error names the address and what was still missing.
Expected<std::string> shareFromRankZero(const RendezvousAddress& address, int rank, int nranks,
                                        std::string_view payload, double timeoutSeconds);

/// Removes what rank 0 left behind (the file of a file rendezvous); nothing for tcp.
void cleanUpRendezvous(const RendezvousAddress& address);

} // namespace collc

#endif // COLLC_RUNTIME_RENDEZVOUS_H
