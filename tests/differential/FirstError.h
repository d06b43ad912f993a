// The first error of a compiler's diagnostics, for tests that check where a spec is refused.
#pragma once

#include <string>

namespace collc::differential {

/// The first "file:line:col: error: ..." line of `diagnostics`, or empty.
inline std::string firstError(const std::string& diagnostics) {
  for (size_t begin = 0; begin < diagnostics.size();) {
    const size_t end = diagnostics.find('\n', begin);
    const std::string line = diagnostics.substr(begin, end - begin);
    if (line.find(": error: ") != std::string::npos)
      return line;
    if (end == std::string::npos)
      break;
    begin = end + 1;
  }
  return "";
}

} // namespace collc::differential
