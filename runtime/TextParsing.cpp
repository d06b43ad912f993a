#include "runtime/TextParsing.h"

namespace collc {

std::vector<std::string_view> splitText(std::string_view text, char separator, bool keepEmpty) {
  std::vector<std::string_view> pieces;
  for (size_t start = 0;;) {
    size_t end = text.find(separator, start);
    std::string_view piece = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (keepEmpty || !piece.empty())
      pieces.push_back(piece);
    if (end == std::string_view::npos)
      return pieces;
    start = end + 1;
  }
}

} // namespace collc
