// Who a process is, in terms another process on the same host can check later: its pid and the
// kernel's start time for it (so a reused pid is not mistaken for the original), its host name
// and the host's boot id (so two containers or hosts with one name still differ). A
// process-per-GPU world records every peer's identity at bootstrap, and when a wait for a peer
// runs out it can say "rank 1's process has exited" instead of only "rank 1 did not answer".
#ifndef COLLC_RUNTIME_PROCESSIDENTITY_H
#define COLLC_RUNTIME_PROCESSIDENTITY_H

#include <cstdint>
#include <string>

namespace collc {

struct ProcessIdentity {
  int pid = 0;
  uint64_t startTicks = 0; // field 22 of /proc/<pid>/stat: clock ticks after boot
  std::string host;        // gethostname()
  std::string bootId;      // /proc/sys/kernel/random/boot_id

  /// "host:bootId": equal for processes that share a host (and so can share GPU memory).
  std::string hostKey() const { return host + ":" + bootId; }
};

/// This process.
ProcessIdentity thisProcessIdentity();

enum class Liveness {
  Alive,   // running (or stopped), and the same process that was recorded
  Gone,    // exited: no such pid, a zombie, or the pid now belongs to another process
  Unknown, // on another host: cannot be checked from here
};

/// Checks `peer` from this process. Only processes on this host can be checked.
Liveness checkLiveness(const ProcessIdentity& peer);

/// The start time of `pid` from /proc/<pid>/stat, with its state letter; false if the process
/// does not exist. Exposed for tests.
bool readProcessStat(int pid, uint64_t& startTicks, char& state);

} // namespace collc

#endif // COLLC_RUNTIME_PROCESSIDENTITY_H
