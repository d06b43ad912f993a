#include "runtime/LaunchEnvironment.h"

#include "abi/collc_abi.h"
#include "runtime/TextParsing.h"

#include <cstdlib>

namespace collc {

namespace {

Error envError(const std::string& message) {
  return makeError(message);
}

/// A non-negative decimal integer, or nullopt.
std::optional<int> parseCount(const std::string& text) {
  std::optional<int> value = parseDecimal<int>(trim(text));
  if (!value || *value < 0)
    return std::nullopt;
  return value;
}

} // namespace

EnvironmentLookup processEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value)
      return std::nullopt;
    return std::string(value);
  };
}

Expected<std::optional<LaunchEnvironment>> parseLaunchEnvironment(const EnvironmentLookup& lookup) {
  // torchrun (and `collc run --procs`) first, then Open MPI's mpirun.
  struct Names {
    const char *rank, *size, *localRank, *localSize, *source;
  };
  const Names styles[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK/WORLD_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_*"}};
  for (const Names& names : styles) {
    std::optional<std::string> rankText = lookup(names.rank);
    std::optional<std::string> sizeText = lookup(names.size);
    if (!rankText && !sizeText)
      continue;
    if (!rankText || !sizeText)
      return envError(std::string(rankText ? names.rank : names.size) + " is set but " +
                      (rankText ? names.size : names.rank) +
                      " is not: a launcher sets both (see README, 'One process per GPU')");
    LaunchEnvironment env;
    env.source = names.source;
    std::optional<int> rank = parseCount(*rankText), size = parseCount(*sizeText);
    if (!rank || !size || *size < 1)
      return envError(std::string(names.rank) + "='" + *rankText + "' and " + names.size + "='" +
                      *sizeText + "' must be a rank and a positive rank count");
    if (*rank >= *size)
      return envError(std::string(names.rank) + "=" + std::to_string(*rank) + " is not below " +
                      names.size + "=" + std::to_string(*size));
    if (*size > COLLC_MAX_RANKS)
      return envError(std::string(names.size) + "=" + std::to_string(*size) +
                      ": collc supports at most " + std::to_string(COLLC_MAX_RANKS) +
                      " ranks (COLLC_MAX_RANKS)");
    env.rank = *rank;
    env.worldSize = *size;
    env.localRank = *rank;
    if (std::optional<std::string> text = lookup(names.localRank)) {
      std::optional<int> localRank = parseCount(*text);
      if (!localRank)
        return envError(std::string(names.localRank) + "='" + *text + "' is not a number");
      env.localRank = *localRank;
    }
    if (std::optional<std::string> text = lookup(names.localSize)) {
      std::optional<int> localSize = parseCount(*text);
      if (!localSize || *localSize < 1)
        return envError(std::string(names.localSize) + "='" + *text + "' is not a positive number");
      env.localWorldSize = *localSize;
      if (env.localRank >= env.localWorldSize)
        return envError(std::string(names.localRank) + "=" + std::to_string(env.localRank) +
                        " is not below " + names.localSize + "=" + std::to_string(*localSize));
    }
    std::optional<std::string> rendezvous = lookup("COLLC_RENDEZVOUS");
    if (!rendezvous || rendezvous->empty())
      return envError(std::string(names.rank) + " and " + names.size +
                      " are set but COLLC_RENDEZVOUS is not: set it to file:PATH (a path every "
                      "rank can read, fresh for each job) or tcp:HOST:PORT (rank 0 listens "
                      "there), where rank 0 leaves the NCCL unique id for the others");
    env.rendezvous = *rendezvous;
    if (std::optional<std::string> text = lookup("COLLC_SHARE_GPU"); text && !text->empty()) {
      if (*text != "0" && *text != "1")
        return envError("COLLC_SHARE_GPU='" + *text + "' must be 0 or 1");
      env.shareGpu = *text == "1";
    }
    return std::optional<LaunchEnvironment>(std::move(env));
  }
  return std::optional<LaunchEnvironment>();
}

Expected<int> parseNodeSizeOverride(const EnvironmentLookup& lookup, std::string& setting) {
  int nodeSize = 0;
  setting.clear();
  if (std::optional<std::string> text = lookup("COLLC_NODE_SIZE"); text && !text->empty()) {
    std::optional<int> value = parseCount(*text);
    if (!value || *value < 1)
      return envError("COLLC_NODE_SIZE='" + *text + "' must be a positive number of ranks");
    nodeSize = *value;
    setting = "COLLC_NODE_SIZE=" + std::to_string(nodeSize);
  }
  if (std::optional<std::string> text = lookup("COLLC_TREAT_EACH_GPU_AS_NODE");
      text && !text->empty() && *text != "0") {
    if (*text != "1")
      return envError("COLLC_TREAT_EACH_GPU_AS_NODE='" + *text + "' must be 0 or 1");
    if (nodeSize > 1)
      return envError("COLLC_TREAT_EACH_GPU_AS_NODE=1 and " + setting +
                      " disagree; set one of them");
    nodeSize = 1;
    setting = "COLLC_TREAT_EACH_GPU_AS_NODE=1";
  }
  return nodeSize;
}

Expected<int> chooseDevice(const LaunchEnvironment& env, int visibleGpus) {
  if (env.localRank < visibleGpus)
    return env.localRank;
  if (env.shareGpu && visibleGpus > 0)
    return env.localRank % visibleGpus; // more ranks than GPUs, asked for
  if (visibleGpus == 1)
    return 0; // the launcher gave each process its own GPU through CUDA_VISIBLE_DEVICES
  return envError("local rank " + std::to_string(env.localRank) + " (rank " +
                  std::to_string(env.rank) + ") needs GPU " + std::to_string(env.localRank) +
                  ", but " + std::to_string(visibleGpus) + " are visible to this process");
}

} // namespace collc
