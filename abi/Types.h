// The vocabulary shared by every stage: collective kinds, element types, reduction operators,
// synchronization strategies and scratch storage, with their spellings in specs and on the command
// line.
//
// The registry tables below are the one list of each: the parsers, the names, the lists that
// messages and help texts print (nameList), the C API's conversions and the loops of the tuner and
// the reports are made from them. Where a list cannot be made from them (the public enums of
// include/collc/collc.h, python/collc/_capi.py), tests/compiler/RegistryTest.cpp fails when it
// differs from the table.
#ifndef COLLC_ABI_TYPES_H
#define COLLC_ABI_TYPES_H

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace collc {

// Each value is registered below, in this order (Types.cpp checks it).
enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll };
enum class DType { F32, F16, BF16 };
/// The element type of one buffer: the variant's DType, or a type the spec fixes for that buffer
/// (`out: fp8e4m3[n]`, `scale: f32[1]`), which quantized outputs and their scales need. F4E2M1
/// packs two elements into a byte: element 2i in the low nibble of byte i, element 2i + 1 in its
/// high nibble (torch.float4_e2m1fn_x2's order).
enum class ElementType { F32, F16, BF16, F8E4M3, F4E2M1 };
enum class ReduceOp { Sum, Max, Min };
/// Every sync strategy, in registry order: X(Enumerator, "spelling", C value, experimental). The
/// one list of strategies: SyncKind, kSyncRegistry and the compiler's table of lowerings
/// (compiler/sync/Strategy.h: LL's is syncStrategyLL(), defined in compiler/sync/LL.cpp) are made
/// from it. C values count from 1 (0 is COLLC_SYNC_DEFAULT, the spec's own strategy).
/// `experimental`: refused unless asked for explicitly (CompileOptions::experimentalLL128), and
/// left out of the lists of strategies that check, the footprint and the tuner try.
#define COLLC_SYNC_STRATEGIES(X)                                                                   \
  X(Barrier, "barrier", 1, false)                                                                  \
  X(Sentinel, "sentinel", 2, false)                                                                \
  X(LL, "ll", 3, false)                                                                            \
  X(LL128, "ll128", 4, true)                                                                       \
  X(LL128Atomic, "ll128_atomic", 5, false)

#define COLLC_SYNC_ENUMERATOR(kind, spelling, cValue, experimental) kind,
enum class SyncKind { COLLC_SYNC_STRATEGIES(COLLC_SYNC_ENUMERATOR) };
#undef COLLC_SYNC_ENUMERATOR

/// How a scratch buffer's elements are laid out in memory, chosen by the sync strategy: the IR's
/// buffers carry it (compiler/ir/IR.h) and the runtime sizes the heap by it (ScratchBuffer::bytes).
enum class ScratchStorage {
  Elements,           // plain elements
  Packets,            // LL: every 8 bytes of data travel in a 16-byte packet with two flags
  AtomicLines,        // ll128_atomic: whole 128-byte lines that every rank adds into
  LineHeads,          // ll128_atomic: one element per 8 of slotElems (every line's first)
  LL128Lines,         // LL128: 120 bytes of data and the call's flag in every 128-byte line
  LL128LinesPerChunk, // LL128 with every one of nranks chunks of a slot starting a line
};

/// One registered value: its spelling (specs, command line, tuning tables, bundles, Python) and
/// its value in the C API's enum. The C enumerator is the spelling in capitals after the enum's
/// prefix: COLLC_ + "BF16", COLLC_SYNC_ + "LL128_ATOMIC" (RegistryTest checks collc.h).
template <typename Enum> struct Registered {
  Enum value;
  std::string_view name;
  int cValue;
};

/// A sync strategy's entry (COLLC_SYNC_STRATEGIES above says what `experimental` means).
struct RegisteredSync : Registered<SyncKind> {
  bool experimental = false;
};

inline constexpr Registered<CollectiveKind> kCollectiveKindRegistry[] = {
    {CollectiveKind::AllReduce, "allreduce", 0},
    {CollectiveKind::AllGather, "allgather", 1},
    {CollectiveKind::ReduceScatter, "reducescatter", 2},
    {CollectiveKind::Broadcast, "broadcast", 3},
    {CollectiveKind::Reduce, "reduce", 4},
    {CollectiveKind::AllToAll, "alltoall", 5}};
inline constexpr Registered<DType> kDTypeRegistry[] = {
    {DType::F32, "f32", 0}, {DType::F16, "f16", 1}, {DType::BF16, "bf16", 2}};
/// C values as include/collc/collc.h's collc_element_type (the first three equal collc_dtype's).
inline constexpr Registered<ElementType> kElementTypeRegistry[] = {
    {ElementType::F32, "f32", 0},
    {ElementType::F16, "f16", 1},
    {ElementType::BF16, "bf16", 2},
    {ElementType::F8E4M3, "fp8e4m3", 3},
    {ElementType::F4E2M1, "fp4e2m1", 4}};
inline constexpr Registered<ReduceOp> kReduceOpRegistry[] = {
    {ReduceOp::Sum, "sum", 0}, {ReduceOp::Max, "max", 1}, {ReduceOp::Min, "min", 2}};
#define COLLC_SYNC_ENTRY(kind, spelling, cValue, experimental)                                     \
  {{SyncKind::kind, spelling, cValue}, experimental},
inline constexpr RegisteredSync kSyncRegistry[] = {COLLC_SYNC_STRATEGIES(COLLC_SYNC_ENTRY)};
#undef COLLC_SYNC_ENTRY
/// Scratch storage has no C value (the runtime's bundles spell it; the C API never shows it).
inline constexpr Registered<ScratchStorage> kScratchStorageRegistry[] = {
    {ScratchStorage::Elements, "elements", -1},
    {ScratchStorage::Packets, "packets", -1},
    {ScratchStorage::AtomicLines, "atomic_lines", -1},
    {ScratchStorage::LineHeads, "line_heads", -1},
    {ScratchStorage::LL128Lines, "ll128_lines", -1},
    {ScratchStorage::LL128LinesPerChunk, "ll128_lines_per_chunk", -1}};

/// The registry of each enum, for the templates below.
constexpr const auto& registry(CollectiveKind) {
  return kCollectiveKindRegistry;
}
constexpr const auto& registry(DType) {
  return kDTypeRegistry;
}
constexpr const auto& registry(ElementType) {
  return kElementTypeRegistry;
}
constexpr const auto& registry(ReduceOp) {
  return kReduceOpRegistry;
}
constexpr const auto& registry(SyncKind) {
  return kSyncRegistry;
}
constexpr const auto& registry(ScratchStorage) {
  return kScratchStorageRegistry;
}

/// The spelling in specs, on the command line and in tuning tables: "allreduce", "bf16", "sum",
/// "ll128_atomic"; "?" for a value that is not registered. Pure functions, safe from any thread.
template <typename Enum, typename = decltype(registry(Enum{}))>
constexpr std::string_view name(Enum value) {
  for (const auto& entry : registry(value))
    if (entry.value == value)
      return entry.name;
  return "?";
}

/// The inverse of name(): nullopt for a spelling that names nothing (the caller reports it).
template <typename Enum> constexpr std::optional<Enum> parseName(std::string_view text) {
  for (const auto& entry : registry(Enum{}))
    if (entry.name == text)
      return entry.value;
  return std::nullopt;
}
inline std::optional<CollectiveKind> parseCollectiveKind(std::string_view text) {
  return parseName<CollectiveKind>(text);
}
inline std::optional<DType> parseDType(std::string_view text) {
  return parseName<DType>(text);
}
inline std::optional<ReduceOp> parseReduceOp(std::string_view text) {
  return parseName<ReduceOp>(text);
}
inline std::optional<SyncKind> parseSyncKind(std::string_view text) {
  return parseName<SyncKind>(text);
}

/// The value whose C API enumerator is `cValue`; nullopt for none.
template <typename Enum> constexpr std::optional<Enum> fromCValue(int cValue) {
  for (const auto& entry : registry(Enum{}))
    if (entry.cValue == cValue)
      return entry.value;
  return std::nullopt;
}
/// The C API's enumerator of a registered value (-1 for one that is not registered).
template <typename Enum, typename = decltype(registry(Enum{}))> constexpr int cValueOf(Enum value) {
  for (const auto& entry : registry(value))
    if (entry.value == value)
      return entry.cValue;
  return -1;
}

/// "a, b or c": names joined by ", ", the last two by lastSeparator.
std::string joinNames(const std::string_view* names, size_t count, std::string_view lastSeparator);

/// Every registered spelling of the enum for a message or a help text: "f32, f16 or bf16" (with
/// lastSeparator " or "), "barrier, sentinel, ll, ll128, ll128_atomic" (with ", ").
/// withExperimental false leaves out the experimental strategies.
template <typename Enum>
std::string nameList(std::string_view lastSeparator = " or ", bool withExperimental = true) {
  std::string_view names[std::size(registry(Enum{}))];
  size_t count = 0;
  for (const auto& entry : registry(Enum{})) {
    if constexpr (std::is_same_v<Enum, SyncKind>)
      if (entry.experimental && !withExperimental)
        continue;
    names[count++] = entry.name;
  }
  return joinNames(names, count, lastSeparator);
}

/// A sync strategy's registry entry.
const RegisteredSync& registered(SyncKind sync);

/// Every value of an enum's registry, in its order, for loops in tests and the tuner.
template <typename Entry, size_t N> constexpr auto valuesOf(const Entry (&table)[N]) {
  std::array<decltype(table[0].value), N> values{};
  for (size_t i = 0; i < N; ++i)
    values[i] = table[i].value;
  return values;
}
inline constexpr auto kAllCollectiveKinds = valuesOf(kCollectiveKindRegistry);
inline constexpr auto kAllDTypes = valuesOf(kDTypeRegistry);
inline constexpr auto kAllReduceOps = valuesOf(kReduceOpRegistry);
inline constexpr auto kAllSyncKinds = valuesOf(kSyncRegistry);

/// Bytes of one element.
unsigned sizeOf(DType type);
/// Bytes of `elements` elements of `type`: an fp4e2m1 buffer of an odd count ends in a half-used
/// byte. kTooLarge past kMaxSize (abi/SizeMath.h).
uint64_t bytesOf(ElementType type, uint64_t elements);
/// A format only quantized outputs and their block scales have (fp8e4m3, fp4e2m1): a kernel writes
/// it, nothing in collc reads or fills it as an input.
constexpr bool isQuantized(ElementType type) {
  return type == ElementType::F8E4M3 || type == ElementType::F4E2M1;
}
/// The element type a buffer of type `T` has in a variant of `type`.
ElementType elementTypeOf(DType type);
/// The CUDA type of one element in a generated kernel: float, or f16 and bf16 (2-byte storage
/// types the kernel's prelude defines, compiler/device/types.cuh).
std::string_view cudaTypeName(DType type);

} // namespace collc

#endif // COLLC_ABI_TYPES_H
