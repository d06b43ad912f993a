// The vocabulary shared by every stage: collective kinds, element types, reduction operators and
// synchronization strategies, with their spellings in specs and on the command line.
#ifndef COLLC_ABI_TYPES_H
#define COLLC_ABI_TYPES_H

#include <optional>
#include <string_view>

namespace collc {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll };
enum class DType { F32, F16, BF16 };
enum class ReduceOp { Sum, Max, Min };
enum class SyncKind { Barrier, Sentinel, LL, LL128, LL128Atomic };

/// The spelling in specs, on the command line and in tuning tables: "allreduce", "bf16", "sum",
/// "ll128_atomic". Pure functions, safe from any thread.
std::string_view name(CollectiveKind kind);
std::string_view name(DType type);
std::string_view name(ReduceOp op);
std::string_view name(SyncKind sync);

/// The inverse of name(): nullopt for a spelling that names nothing (the caller reports it).
std::optional<CollectiveKind> parseCollectiveKind(std::string_view text);
std::optional<DType> parseDType(std::string_view text);
std::optional<ReduceOp> parseReduceOp(std::string_view text);
std::optional<SyncKind> parseSyncKind(std::string_view text);

/// Bytes of one element.
unsigned sizeOf(DType type);
/// The CUDA type of one element in a generated kernel: float, or f16 and bf16 (2-byte storage
/// types the kernel's prelude defines, compiler/device/types.cuh).
std::string_view cudaTypeName(DType type);

/// Every value of each enum, for loops in tests and the tuner.
inline constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};
inline constexpr SyncKind kAllSyncKinds[] = {SyncKind::Barrier, SyncKind::Sentinel, SyncKind::LL,
                                             SyncKind::LL128, SyncKind::LL128Atomic};

} // namespace collc

#endif // COLLC_ABI_TYPES_H
