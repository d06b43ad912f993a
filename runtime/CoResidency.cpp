#include "runtime/CoResidency.h"

namespace collc {

std::vector<GpuRanks> ranksPerGpu(Span<const int> devices) {
  std::vector<GpuRanks> gpus;
  for (int device : devices) {
    bool seen = false;
    for (GpuRanks& gpu : gpus)
      if (gpu.device == device) {
        ++gpu.ranks;
        seen = true;
      }
    if (!seen)
      gpus.push_back({device, 1});
  }
  return gpus;
}

bool ranksShareAGpu(Span<const GpuRanks> gpus) {
  for (const GpuRanks& gpu : gpus)
    if (gpu.ranks > 1)
      return true;
  return false;
}

int maxCoResidentBlocksPerRank(int multiprocessors, int ranks) {
  if (multiprocessors <= 0 || ranks <= 0)
    return 0;
  return multiprocessors / ranks;
}

std::string coResidencyProblem(int blocksPerRank, int ranks, int device, int multiprocessors) {
  const long long total = static_cast<long long>(blocksPerRank) * ranks;
  if (total <= multiprocessors)
    return "";
  const std::string gpu = "GPU " + std::to_string(device);
  if (multiprocessors <= 0)
    return "the multiprocessor count of " + gpu +
           " could not be read, so it cannot be checked that every block of every rank will be "
           "resident at once";
  if (ranks <= 1)
    return std::to_string(blocksPerRank) + " blocks, but " + gpu + " has " +
           std::to_string(multiprocessors) +
           " multiprocessors: blocks that wait on each other must all be resident";
  const int most = maxCoResidentBlocksPerRank(multiprocessors, ranks);
  std::string advice = most > 0 ? "compile for at most " + std::to_string(most) +
                                      " blocks per rank (--blocks " + std::to_string(most) +
                                      ") or run fewer ranks"
                                : "run at most " + std::to_string(multiprocessors) + " ranks";
  return std::to_string(ranks) + " ranks share " + gpu + " with " + std::to_string(blocksPerRank) +
         " blocks each: " + std::to_string(total) + " blocks, but it has " +
         std::to_string(multiprocessors) +
         " multiprocessors. Every block of every rank waits on the others, so all must be "
         "resident at once, and one block per multiprocessor is what can be promised; " +
         advice;
}

} // namespace collc
