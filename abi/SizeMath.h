// Sizes in elements and bytes that cannot wrap. Every size collc computes for a call (what the
// runtime allocates, what the kernel indexes) is at most kMaxSize = 2^63 - 1; an operation whose
// result would be larger gives kTooLarge, and so does any operation on kTooLarge. So a size is
// either exact or kTooLarge, never a small wrapped number: a caller checks fitsSize and refuses the
// count with its own message (runtime/HeapSize.h: sizesProblem), and a size it forgets to check
// is one no allocation can satisfy.
#ifndef COLLC_ABI_SIZEMATH_H
#define COLLC_ABI_SIZEMATH_H

#include <cstdint>

namespace collc {

inline constexpr uint64_t kMaxSize = uint64_t(INT64_MAX);
inline constexpr uint64_t kTooLarge = UINT64_MAX;

constexpr bool fitsSize(uint64_t size) {
  return size <= kMaxSize;
}

/// `value` as a size: itself, or kTooLarge past kMaxSize.
constexpr uint64_t asSize(uint64_t value) {
  return fitsSize(value) ? value : kTooLarge;
}

constexpr uint64_t sizeAdd(uint64_t a, uint64_t b) {
  // Both at most 2^63 - 1: the sum cannot wrap 64 bits.
  return fitsSize(a) && fitsSize(b) ? asSize(a + b) : kTooLarge;
}

inline uint64_t sizeMul(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  if (!fitsSize(a) || !fitsSize(b) || __builtin_mul_overflow(a, b, &product))
    return kTooLarge;
  return asSize(product);
}

/// ceil(value / divisor) for divisor >= 1.
constexpr uint64_t sizeDivCeil(uint64_t value, uint64_t divisor) {
  return fitsSize(value) ? value / divisor + (value % divisor != 0) : kTooLarge;
}

/// The least multiple of `align` (>= 1) that is at least `value`.
inline uint64_t sizeAlignUp(uint64_t value, uint64_t align) {
  return sizeMul(sizeDivCeil(value, align), align);
}

} // namespace collc

#endif // COLLC_ABI_SIZEMATH_H
