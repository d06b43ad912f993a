// What collc's launcher tells the processes it starts (tools/launch/Launcher.h): their place in
// the world, in the variables runtime/LaunchEnvironment.h reads, and that it started them.
#ifndef COLLC_TOOLS_LAUNCH_CHILDENVIRONMENT_H
#define COLLC_TOOLS_LAUNCH_CHILDENVIRONMENT_H

#include "runtime/LaunchEnvironment.h"
#include "runtime/Status.h"

#include <string>
#include <utility>
#include <vector>

namespace collc {

/// The variables a launcher sets for child `rank` of `worldSize` on this node: RANK, WORLD_SIZE,
/// LOCAL_RANK, LOCAL_WORLD_SIZE, COLLC_RENDEZVOUS, NCCL_NVLS_ENABLE=0 (NVLink multicast stays
/// off: a rule of the GPU machine, see README) and COLLC_LAUNCHER_PID=`launcherPid`. An error if
/// the launcher's own environment asks for NCCL_NVLS_ENABLE other than 0: the children would
/// inherit the request.
Expected<std::vector<std::pair<std::string, std::string>>>
childEnvironment(int rank, int worldSize, const std::string& rendezvous, int launcherPid,
                 const EnvironmentLookup& parent);

/// True in a process that collc's launcher started (COLLC_LAUNCHER_PID is its parent's pid):
/// such a process runs as one rank even though its command line asks for --procs.
bool startedByCollcLauncher(const EnvironmentLookup& lookup, int parentPid);

} // namespace collc

#endif // COLLC_TOOLS_LAUNCH_CHILDENVIRONMENT_H
