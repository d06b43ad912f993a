// Starts the processes of a process-per-GPU world on this machine and watches them: what
// `collc run --procs N`, the process-per-GPU example and GPU tests use, so that a user needs no
// torchrun or mpirun to try collc in this mode. Each child is `executable args...` with the
// parent's environment plus its own variables (childEnvironment() in ChildEnvironment.h sets
// RANK, WORLD_SIZE, LOCAL_RANK, COLLC_RENDEZVOUS and NCCL_NVLS_ENABLE=0). Their output comes
// back through pipes, one line at a time, so ranks never interleave within a line.
//
// A child that fails (a non-zero exit status, or a signal) makes the launcher stop the others
// (SIGTERM, then SIGKILL after a grace period) and report which rank failed and how, instead of
// leaving them to wait for a peer that will never come. The whole launch has a deadline too. A
// child dies with the launcher (PR_SET_PDEATHSIG), so an interrupted launch leaves no orphans.
// POSIX only, no GPU: tested on the CPU.
#ifndef COLLC_TOOLS_LAUNCH_LAUNCHER_H
#define COLLC_TOOLS_LAUNCH_LAUNCHER_H

#include "runtime/Status.h"

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collc {

struct LaunchSpec {
  std::string executable;        // a path; exec'd directly, no shell
  std::vector<std::string> args; // argv[1..]; argv[0] is the executable
  int processes = 1;
  /// Variables added to (or replacing those of) the parent's environment for child `rank`.
  std::function<std::vector<std::pair<std::string, std::string>>(int rank)> environment;
  double timeoutSeconds = 600; // the whole launch; past it every child is stopped
  double graceSeconds = 5;     // between SIGTERM and SIGKILL when stopping children
};

/// One line of a child's output, without its newline. Called on the launcher's thread.
using LaunchOutputSink = std::function<void(int rank, bool isStderr, std::string_view line)>;

/// Rank 0's standard output goes to stdout unchanged (so tables and results read as from one
/// process); every other line gets "[rank R] " in front, on stdout or stderr as it came.
LaunchOutputSink prefixedOutputSink();

struct ChildOutcome {
  int pid = 0;
  bool exited = false;      // true: exitStatus holds the status; false: signal killed it
  int exitStatus = 0;       // when exited
  int signal = 0;           // when !exited
  bool stoppedByUs = false; // the launcher stopped it after another child failed or time ran out
};

struct LaunchOutcome {
  std::vector<ChildOutcome> children; // per rank
  /// 0 when every child exited with 0; else the first failed child's exit status, or 128 +
  /// signal (as a shell reports it); 124 when the deadline stopped the launch.
  int exitCode = 0;
  /// Empty on success; else one line: "rank 1 (pid 4242) was killed by signal 9 (Killed);
  /// stopped the other ranks" or "timed out after 600 s with rank(s) 0, 1 still running;
  /// stopped them".
  std::string failure;
  double seconds = 0; // wall time of the launch
};

/// Starts the children, forwards their output to `sink` and waits for all of them. An error
/// only when the launch itself fails (no such executable, fork failure); children that fail are
/// reported in the outcome.
Expected<LaunchOutcome> launchProcesses(const LaunchSpec& spec, const LaunchOutputSink& sink);

/// How one child ended, in words: "exited with status 3", "was killed by signal 9 (Killed)".
std::string describeChildEnd(const ChildOutcome& child);

/// This program's path (/proc/self/exe), for launching copies of itself.
Expected<std::string> thisExecutable();

/// This process's command line (/proc/self/cmdline), argv[0] included.
Expected<std::vector<std::string>> thisCommandLine();

/// A process-per-GPU world of `processes` ranks on this machine, started by launchWorld.
struct WorldLaunch {
  int processes = 2;
  std::string executable; // empty: this program (thisExecutable())
  std::vector<std::string> args;
  /// Added after the launcher variables (a test's NCCL_P2P_DISABLE, COLLC_NODE_SIZE, ...).
  std::vector<std::pair<std::string, std::string>> extraEnvironment;
  double timeoutSeconds = 600;
};

/// launchProcesses with childEnvironment() for every rank (RANK, WORLD_SIZE, LOCAL_RANK,
/// COLLC_RENDEZVOUS, NCCL_NVLS_ENABLE=0, COLLC_LAUNCHER_PID) and a fresh file rendezvous in a
/// private directory, removed afterwards. What `collc run --procs N` and the tests use.
Expected<LaunchOutcome> launchWorld(const WorldLaunch& launch, const LaunchOutputSink& sink);

/// A fresh private directory under $TMPDIR (or /tmp) for a file rendezvous, and its
/// "file:DIR/nccl-id" address; remove it with removeRendezvousDirectory when the launch is over.
Expected<std::pair<std::string, std::string>> makeRendezvousDirectory();
void removeRendezvousDirectory(const std::string& directory);

} // namespace collc

#endif // COLLC_TOOLS_LAUNCH_LAUNCHER_H
