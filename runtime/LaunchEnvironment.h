// How a process of a process-per-GPU world learns its place, in the way launchers already tell
// it: torchrun's RANK, WORLD_SIZE, LOCAL_RANK (and LOCAL_WORLD_SIZE), or Open MPI's
// OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK, plus COLLC_RENDEZVOUS: where rank 0 leaves the NCCL
// unique id for the others ("file:PATH" or "tcp:HOST:PORT", see Rendezvous.h), and
// COLLC_SHARE_GPU=1 where ranks may share a GPU (for correctness only, ProcessWorld.h). `collc run
// --procs N` sets the same variables for the children it starts (tools/launch). Pure functions over
// an environment lookup: tested without a GPU.
#ifndef COLLC_RUNTIME_LAUNCHENVIRONMENT_H
#define COLLC_RUNTIME_LAUNCHENVIRONMENT_H

#include "runtime/Status.h"

#include <functional>
#include <optional>
#include <string>

namespace collc {

/// Looks a variable up; nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The process's own environment (getenv).
EnvironmentLookup processEnvironment();

struct LaunchEnvironment {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;      // LOCAL_RANK; the rank itself where the launcher does not say
  int localWorldSize = 0; // LOCAL_WORLD_SIZE; 0 where the launcher does not say
  std::string rendezvous; // COLLC_RENDEZVOUS, as given
  bool shareGpu = false;  // COLLC_SHARE_GPU=1: ranks may share a GPU (ProcessWorldOptions)
  std::string source;     // "RANK/WORLD_SIZE" or "OMPI_COMM_WORLD_*", for messages
};

/// nullopt when no launcher variables are set (this is not a process of a launched world); an
/// error when they are set but wrong (not numbers, RANK >= WORLD_SIZE, COLLC_RENDEZVOUS missing
/// or a world of more ranks than collc supports), saying which variable and what to set.
Expected<std::optional<LaunchEnvironment>> parseLaunchEnvironment(const EnvironmentLookup& lookup);

/// The node size the environment forces: COLLC_NODE_SIZE=k (k >= 1), or 1 for
/// COLLC_TREAT_EACH_GPU_AS_NODE=1; 0 when neither is set (nodes are then found by host).
/// `setting` names the variable that decided, for the log. Both set and disagreeing is an error.
Expected<int> parseNodeSizeOverride(const EnvironmentLookup& lookup, std::string& setting);

/// The GPU a rank of this process uses: LOCAL_RANK when that many GPUs are visible, device 0
/// where the launcher left one GPU visible per process (CUDA_VISIBLE_DEVICES), LOCAL_RANK modulo
/// the visible GPUs where ranks may share them (COLLC_SHARE_GPU=1); otherwise an error.
Expected<int> chooseDevice(const LaunchEnvironment& env, int visibleGpus);

} // namespace collc

#endif // COLLC_RUNTIME_LAUNCHENVIRONMENT_H
