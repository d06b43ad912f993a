// Rounding sizes and offsets up to a boundary: buffer strides, heap offsets, scratch pages.
#ifndef COLLC_RUNTIME_ALIGN_H
#define COLLC_RUNTIME_ALIGN_H

#include <cstdint>

namespace collc {

/// The least multiple of `align` (nonzero) that is at least `value`.
constexpr uint64_t alignUp(uint64_t value, uint64_t align) {
  return (value + align - 1) / align * align;
}

} // namespace collc

#endif // COLLC_RUNTIME_ALIGN_H
