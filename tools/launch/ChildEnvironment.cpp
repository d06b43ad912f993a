#include "tools/launch/ChildEnvironment.h"

#include "runtime/TextParsing.h"

namespace collc {

namespace {

Error envError(const std::string& message) {
  return makeError(message);
}

} // namespace

Expected<std::vector<std::pair<std::string, std::string>>>
childEnvironment(int rank, int worldSize, const std::string& rendezvous, int launcherPid,
                 const EnvironmentLookup& parent) {
  if (std::optional<std::string> nvls = parent("NCCL_NVLS_ENABLE"); nvls && *nvls != "0")
    return envError("NCCL_NVLS_ENABLE=" + *nvls +
                    " is set: NVLink multicast must stay off (it can take the host's GPUs out "
                    "of service); unset it or set it to 0");
  return std::vector<std::pair<std::string, std::string>>{
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(worldSize)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(worldSize)},
      {"COLLC_RENDEZVOUS", rendezvous},
      {"NCCL_NVLS_ENABLE", "0"},
      {"COLLC_LAUNCHER_PID", std::to_string(launcherPid)}};
}

bool startedByCollcLauncher(const EnvironmentLookup& lookup, int parentPid) {
  std::optional<std::string> launcher = lookup("COLLC_LAUNCHER_PID");
  return launcher && parseDecimal<int>(trim(*launcher)) == parentPid;
}

} // namespace collc
