// The ABI headers' text for the code generator, from the copy embedded at build time.
#include <string_view>
#include <utility>
#include <vector>

namespace collc {
namespace embedded {
const std::vector<std::pair<std::string_view, std::string_view>>& abiFiles();
}

std::string_view kernelAbiHeader() {
  return embedded::abiFiles().front().second;
}

std::string_view kernelRankLaunchHeader() {
  for (const auto& [name, text] : embedded::abiFiles())
    if (name == "collc_rank_launch.h")
      return text;
  return {};
}

} // namespace collc
