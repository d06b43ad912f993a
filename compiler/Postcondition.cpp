#include "compiler/Postcondition.h"

namespace collc {

std::optional<std::vector<Contribution>> expectedOutput(CollectiveKind kind, int rank, int root,
                                                        int nranks, int64_t count, int64_t index) {
  std::vector<Contribution> everyRank;
  switch (kind) {
  case CollectiveKind::Reduce:
    if (rank != root)
      return std::nullopt;
    [[fallthrough]];
  case CollectiveKind::AllReduce:
    for (int q = 0; q < nranks; ++q)
      everyRank.push_back({q, index});
    return everyRank;
  case CollectiveKind::ReduceScatter:
    for (int q = 0; q < nranks; ++q)
      everyRank.push_back({q, int64_t(rank) * count + index});
    return everyRank;
  case CollectiveKind::Broadcast:
    return std::vector<Contribution>{{root, index}};
  case CollectiveKind::AllGather:
    return std::vector<Contribution>{{int(index / count), index % count}};
  case CollectiveKind::AllToAll:
    return std::vector<Contribution>{{int(index / count), int64_t(rank) * count + index % count}};
  }
  return std::nullopt;
}

std::string describeExpectedOutput(CollectiveKind kind, const std::string& inputName,
                                   const std::vector<Contribution>& expected) {
  std::string kindName(name(kind));
  std::string article = kind == CollectiveKind::AllReduce || kind == CollectiveKind::AllGather ||
                                kind == CollectiveKind::AllToAll
                            ? "an "
                            : "a ";
  if (expected.empty())
    return article + kindName + " leaves it unspecified";
  if (expected.size() > 1)
    return article + kindName + " needs " + inputName + "[" +
           std::to_string(expected.front().second) + "] of every rank exactly once";
  return article + kindName + " needs exactly " + inputName + "[" +
         std::to_string(expected.front().second) + "] of rank " +
         std::to_string(expected.front().first);
}

} // namespace collc
