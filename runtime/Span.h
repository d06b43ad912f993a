// A view of contiguous elements owned elsewhere (a vector, an array, one element for the length of
// a call): what the runtime's functions take where they only read (Span<const T>) or fill
// (Span<T>) a caller's elements. C++20's std::span, in the little the runtime needs.
#ifndef COLLC_RUNTIME_SPAN_H
#define COLLC_RUNTIME_SPAN_H

#include <cstddef>
#include <type_traits>
#include <utility>

namespace collc {

template <class T> class Span {
public:
  constexpr Span() = default;
  constexpr Span(T* data, size_t size) : data_(data), size_(size) {}
  /// A vector, std::array or string of elements T's pointer can point at.
  template <class Container,
            std::enable_if_t<std::is_convertible_v<decltype(std::declval<Container&>().data()), T*>,
                             int> = 0>
  constexpr Span(Container&& container) : data_(container.data()), size_(container.size()) {}
  template <size_t N> constexpr Span(T (&array)[N]) : data_(array), size_(N) {}
  /// One element, read only: `synchronize({stream})`.
  template <class U = T, std::enable_if_t<std::is_const_v<U>, int> = 0>
  constexpr Span(const std::remove_const_t<T>& one) : data_(&one), size_(1) {}
  /// A read-only view of a writable one.
  template <class U, std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>, int> = 0>
  constexpr Span(Span<U> other) : data_(other.data()), size_(other.size()) {}

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](size_t i) const { return data_[i]; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }
  constexpr T& front() const { return data_[0]; }
  constexpr T& back() const { return data_[size_ - 1]; }

private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

} // namespace collc

#endif // COLLC_RUNTIME_SPAN_H
