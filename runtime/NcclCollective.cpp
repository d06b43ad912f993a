#include "runtime/NcclCollective.h"

#include "abi/CollectiveShapes.h"

namespace collc {

NcclCollective ncclCollectiveOf(const CompiledCollective& compiled) {
  NcclCollective collective;
  collective.kind = compiled.kind;
  collective.dtype = compiled.dtype;
  collective.op = compiled.op;
  collective.root = compiled.root;
  return collective;
}

std::string_view ncclCallName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "ncclAllReduce";
  case CollectiveKind::AllGather:
    return "ncclAllGather";
  case CollectiveKind::ReduceScatter:
    return "ncclReduceScatter";
  case CollectiveKind::Broadcast:
    return "ncclBroadcast";
  case CollectiveKind::Reduce:
    return "ncclReduce";
  case CollectiveKind::AllToAll:
    return "ncclSend/ncclRecv";
  }
  return "?";
}

NcclCallShape ncclCallShape(CollectiveKind kind, uint64_t count, int nranks) {
  NcclCallShape shape;
  // NCCL's count arguments are collc's n for every kind (abi/CollectiveShapes.h is written so).
  shape.ncclCount = count;
  shape.inputElems = inputElems(kind, count, nranks);
  shape.outputElems = outputElems(kind, count, nranks);
  if (kind == CollectiveKind::AllToAll) {
    shape.callsPerOp = 2 * nranks;
    shape.grouped = true;
  }
  return shape;
}

std::string describeNcclCall(const NcclCollective& collective) {
  std::string text(ncclCallName(collective.kind));
  if (collective.kind == CollectiveKind::AllToAll)
    text += " to every rank in one group (NCCL has no alltoall call)";
  else if (hasRoot(collective.kind))
    text += " (root " + std::to_string(collective.root) + ")";
  return text;
}

std::string describeNcclCalls(const std::vector<NcclCollective>& collectives) {
  if (collectives.empty())
    return "";
  if (collectives.size() == 1)
    return describeNcclCall(collectives.front());
  std::string text = "NCCL's same collective per kind (";
  for (size_t i = 0; i < collectives.size(); ++i) {
    const NcclCollective& collective = collectives[i];
    text += std::string(i ? "; " : "") + std::string(name(collective.kind)) + ": " +
            std::string(ncclCallName(collective.kind));
    if (collective.kind == CollectiveKind::AllToAll)
      text += " to every rank in one group";
    else if (hasRoot(collective.kind))
      text += " root " + std::to_string(collective.root);
  }
  return text + ")";
}

} // namespace collc
