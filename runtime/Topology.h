// Where the collectives of a process-per-GPU world run, decided from what the ranks reported at
// bootstrap. collc's kernels need every rank to load and store into every other rank's memory:
// all ranks on one node (one host) and every GPU with peer access to every other. A world that
// spans nodes, or one whose GPUs cannot reach each other, hands its collectives wholly to NCCL,
// NCCL being collc's engine across nodes. No network code of collc's own.
//
// Nodes are found by host (host name and boot id), unless the environment says otherwise:
// COLLC_NODE_SIZE=k makes ranks [0,k), [k,2k), ... the nodes, and COLLC_TREAT_EACH_GPU_AS_NODE=1
// is COLLC_NODE_SIZE=1. Together with NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 that makes one
// machine look like several nodes, so the NCCL path is exercised where only one machine exists.
// Pure functions: tested without a GPU.
#ifndef COLLC_RUNTIME_TOPOLOGY_H
#define COLLC_RUNTIME_TOPOLOGY_H

#include <string>
#include <vector>

namespace collc {

struct NodeLayout {
  std::vector<int> nodeOf; // per rank
  int nodeCount = 0;
  std::string how; // "by host" or the override, e.g. "COLLC_TREAT_EACH_GPU_AS_NODE=1"
};

/// Groups ranks into nodes: by equal `hostKeys` (rank order of first appearance), or, when
/// `nodeSize` > 0, rank / nodeSize (`overrideName` says which setting asked, for the log).
NodeLayout layoutNodes(const std::vector<std::string>& hostKeys, int nodeSize,
                       const std::string& overrideName);

struct CollectivePath {
  bool viaNccl = false;
  std::string description; // one line for the log: where collectives run, and why
};

/// The decision. `unreachable[r]` is empty where rank r reaches every other rank of the world
/// (peer access and a mapping of its heap), else why not; it matters only on a single node.
CollectivePath choosePath(const NodeLayout& layout, const std::vector<std::string>& unreachable);

} // namespace collc

#endif // COLLC_RUNTIME_TOPOLOGY_H
