#include "abi/Types.h"

namespace collc {
namespace {

template <typename Enum, size_t N>
std::optional<Enum> lookup(const std::pair<std::string_view, Enum> (&table)[N],
                           std::string_view text) {
  for (const auto& [spelling, value] : table)
    if (spelling == text)
      return value;
  return std::nullopt;
}

template <typename Enum, size_t N>
std::string_view spell(const std::pair<std::string_view, Enum> (&table)[N], Enum value) {
  for (const auto& [spelling, v] : table)
    if (v == value)
      return spelling;
  return "?";
}

const std::pair<std::string_view, CollectiveKind> kKinds[] = {
    {"allreduce", CollectiveKind::AllReduce},
    {"allgather", CollectiveKind::AllGather},
    {"reducescatter", CollectiveKind::ReduceScatter},
    {"broadcast", CollectiveKind::Broadcast},
    {"reduce", CollectiveKind::Reduce},
    {"alltoall", CollectiveKind::AllToAll}};
const std::pair<std::string_view, DType> kDTypes[] = {
    {"f32", DType::F32}, {"f16", DType::F16}, {"bf16", DType::BF16}};
const std::pair<std::string_view, ReduceOp> kOps[] = {
    {"sum", ReduceOp::Sum}, {"max", ReduceOp::Max}, {"min", ReduceOp::Min}};
const std::pair<std::string_view, SyncKind> kSyncs[] = {{"barrier", SyncKind::Barrier},
                                                        {"sentinel", SyncKind::Sentinel},
                                                        {"ll", SyncKind::LL},
                                                        {"ll128", SyncKind::LL128},
                                                        {"ll128_atomic", SyncKind::LL128Atomic}};

} // namespace

std::string_view name(CollectiveKind kind) {
  return spell(kKinds, kind);
}
std::string_view name(DType type) {
  return spell(kDTypes, type);
}
std::string_view name(ReduceOp op) {
  return spell(kOps, op);
}
std::string_view name(SyncKind sync) {
  return spell(kSyncs, sync);
}

std::optional<CollectiveKind> parseCollectiveKind(std::string_view t) {
  return lookup(kKinds, t);
}
std::optional<DType> parseDType(std::string_view t) {
  return lookup(kDTypes, t);
}
std::optional<ReduceOp> parseReduceOp(std::string_view t) {
  return lookup(kOps, t);
}
std::optional<SyncKind> parseSyncKind(std::string_view t) {
  return lookup(kSyncs, t);
}

unsigned sizeOf(DType type) {
  return type == DType::F32 ? 4 : 2;
}

std::string_view cudaTypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "float";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  }
  return "?";
}

} // namespace collc
