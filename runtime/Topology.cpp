#include "runtime/Topology.h"

#include <map>

namespace collc {

NodeLayout layoutNodes(const std::vector<std::string>& hostKeys, int nodeSize,
                       const std::string& overrideName) {
  NodeLayout layout;
  const int nranks = static_cast<int>(hostKeys.size());
  if (nodeSize > 0) {
    for (int r = 0; r < nranks; ++r)
      layout.nodeOf.push_back(r / nodeSize);
    layout.nodeCount = nranks == 0 ? 0 : (nranks + nodeSize - 1) / nodeSize;
    layout.how = overrideName;
    return layout;
  }
  std::map<std::string, int> nodeOfHost;
  for (const std::string& key : hostKeys) {
    auto [it, inserted] = nodeOfHost.try_emplace(key, layout.nodeCount);
    if (inserted)
      ++layout.nodeCount;
    layout.nodeOf.push_back(it->second);
  }
  layout.how = "by host";
  return layout;
}

CollectivePath choosePath(const NodeLayout& layout, const std::vector<std::string>& unreachable) {
  const size_t nranks = layout.nodeOf.size();
  const std::string ranks = std::to_string(nranks) + (nranks == 1 ? " rank" : " ranks");
  CollectivePath path;
  if (layout.nodeCount > 1) {
    path.viaNccl = true;
    path.description = ranks + " on " + std::to_string(layout.nodeCount) + " nodes (" + layout.how +
                       "): not every peer is reachable over NVLink, so collectives are handed "
                       "wholly to NCCL";
    return path;
  }
  for (size_t r = 0; r < unreachable.size(); ++r) {
    if (unreachable[r].empty())
      continue;
    path.viaNccl = true;
    path.description = ranks + " on 1 node, but rank " + std::to_string(r) + " " + unreachable[r] +
                       ", so collectives are handed wholly to NCCL";
    return path;
  }
  path.description = ranks + " on 1 node (" + layout.how +
                     "), every GPU maps every peer's heap: collectives run on collc kernels";
  return path;
}

} // namespace collc
