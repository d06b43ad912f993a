// Reading small texts the runtime is given (tuning tables, environment variables, rendezvous
// addresses): trimming, splitting into fields, and whole decimal numbers.
#ifndef COLLC_RUNTIME_TEXTPARSING_H
#define COLLC_RUNTIME_TEXTPARSING_H

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

namespace collc {

/// White space: what trim() drops.
inline constexpr std::string_view kWhiteSpace = " \t\n\v\f\r";

/// `text` without the leading `chars`.
inline std::string_view trimLeft(std::string_view text, std::string_view chars = kWhiteSpace) {
  size_t first = text.find_first_not_of(chars);
  return first == std::string_view::npos ? std::string_view() : text.substr(first);
}

/// `text` without the trailing `chars`.
inline std::string_view trimRight(std::string_view text, std::string_view chars = kWhiteSpace) {
  size_t last = text.find_last_not_of(chars);
  return last == std::string_view::npos ? std::string_view() : text.substr(0, last + 1);
}

/// `text` without leading or trailing `chars`.
inline std::string_view trim(std::string_view text, std::string_view chars = kWhiteSpace) {
  return trimRight(trimLeft(text, chars), chars);
}

/// The pieces of `text` between `separator`s, in order; with `keepEmpty` false, the empty ones
/// are left out. "a\n" is {"a", ""} with keepEmpty.
std::vector<std::string_view> splitText(std::string_view text, char separator,
                                        bool keepEmpty = true);

/// The whole of `text` as a decimal number of type T (a leading '-' only for a signed T); nullopt
/// for anything else: empty, other characters, white space, or a value T cannot hold.
template <class T> std::optional<T> parseDecimal(std::string_view text) {
  static_assert(std::is_integral_v<T>, "parseDecimal reads integers");
  bool negative = false;
  if (std::is_signed_v<T> && !text.empty() && text.front() == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  if (text.empty())
    return std::nullopt;
  // Accumulated as a magnitude, so that the most negative value of T is read too.
  using Magnitude = std::make_unsigned_t<T>;
  const Magnitude limit = negative ? Magnitude(std::numeric_limits<T>::max()) + 1
                                   : Magnitude(std::numeric_limits<T>::max());
  Magnitude value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    const Magnitude digit = Magnitude(c - '0');
    if (value > (limit - digit) / 10)
      return std::nullopt;
    value = Magnitude(value * 10 + digit);
  }
  if (!negative)
    return T(value);
  return value == 0 ? T(0) : T(-T(value - 1) - 1);
}

} // namespace collc

#endif // COLLC_RUNTIME_TEXTPARSING_H
