#include "abi/Types.h"

#include "abi/SizeMath.h"

namespace collc {
namespace {

/// Each registry lists its enum's values in order, so that a value's entry is at its index.
template <typename Entry, size_t N> constexpr bool inEnumOrder(const Entry (&table)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (size_t(table[i].value) != i)
      return false;
  return true;
}
static_assert(inEnumOrder(kCollectiveKindRegistry) && inEnumOrder(kDTypeRegistry) &&
              inEnumOrder(kElementTypeRegistry) && inEnumOrder(kReduceOpRegistry) &&
              inEnumOrder(kSyncRegistry) && inEnumOrder(kScratchStorageRegistry));

} // namespace

std::string joinNames(const std::string_view* names, size_t count, std::string_view lastSeparator) {
  std::string list;
  for (size_t i = 0; i < count; ++i) {
    if (i > 0)
      list += i + 1 == count ? lastSeparator : std::string_view(", ");
    list += names[i];
  }
  return list;
}

const RegisteredSync& registered(SyncKind sync) {
  return kSyncRegistry[size_t(sync)]; // in enum order (above)
}

unsigned sizeOf(DType type) {
  return type == DType::F32 ? 4 : 2;
}

uint64_t bytesOf(ElementType type, uint64_t elements) {
  switch (type) {
  case ElementType::F32:
    return sizeMul(elements, 4);
  case ElementType::F16:
  case ElementType::BF16:
    return sizeMul(elements, 2);
  case ElementType::F8E4M3:
    return asSize(elements);
  case ElementType::F4E2M1:
    return sizeDivCeil(elements, 2);
  }
  return kTooLarge;
}

ElementType elementTypeOf(DType type) {
  switch (type) {
  case DType::F32:
    return ElementType::F32;
  case DType::F16:
    return ElementType::F16;
  case DType::BF16:
    return ElementType::BF16;
  }
  return ElementType::F32;
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
