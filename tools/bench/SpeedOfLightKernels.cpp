#include "tools/bench/SpeedOfLightKernels.h"

#include <utility>
#include <vector>

namespace collc {

namespace embedded {
// SpeedOfLightKernelFiles.cpp, generated from SpeedOfLightKernels.cuh (tools/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& speedOfLightKernelFiles();
} // namespace embedded

std::string_view speedOfLightKernelText() {
  return embedded::speedOfLightKernelFiles().front().second;
}

} // namespace collc
