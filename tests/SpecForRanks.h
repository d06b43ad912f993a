// A stdlib spec compiled at a rank count past the range it declares: the one-GPU suites run every
// spec at 16 to 72 ranks, while the stdlib declares narrower ranges (each spec says why it stops
// where it does). The copy declares `ranks R..R` and nothing else changes, so the compiler still
// proves it at R, as it proves any variant at its own rank count.
#ifndef COLLC_TESTS_SPECFORRANKS_H
#define COLLC_TESTS_SPECFORRANKS_H

#include <optional>
#include <regex>
#include <string>
#include <utility>

namespace collc::tests {

/// The `ranks A..B` a spec declares, or std::nullopt if it has no ranks line.
inline std::optional<std::pair<int, int>> declaredRanks(const std::string& text) {
  std::smatch match;
  if (!std::regex_search(text, match, std::regex(R"((^|\n)\s*ranks\s+(\d+)\s*\.\.\s*(\d+))")))
    return std::nullopt;
  return std::make_pair(std::stoi(match[2]), std::stoi(match[3]));
}

/// Whether `text` declares `nranks` (a spec without a ranks line declares 2..8, dsl/README.md).
inline bool declaresRanks(const std::string& text, int nranks) {
  const auto range = declaredRanks(text).value_or(std::make_pair(2, 8));
  return range.first <= nranks && nranks <= range.second;
}

/// `text` with its ranks line declaring `nranks` alone; "" if it has no ranks line to replace.
inline std::string specTextForRanks(const std::string& text, int nranks) {
  std::smatch match;
  const std::regex line(R"((^|\n)(\s*)ranks\s+\d+\s*\.\.\s*\d+)");
  if (!std::regex_search(text, match, line))
    return "";
  const std::string count = std::to_string(nranks);
  return match.prefix().str() + match[1].str() + match[2].str() + "ranks " + count + ".." + count +
         match.suffix().str();
}

} // namespace collc::tests

#endif // COLLC_TESTS_SPECFORRANKS_H
