#include "runtime/Watchdog.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace collc {

std::optional<uint64_t> parseWatchdogTimeout(std::string_view text) {
  const std::string copy(text); // strtod wants a terminated string
  char* end = nullptr;
  const double seconds = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || !(seconds > 0) || seconds > 3600)
    return std::nullopt;
  return uint64_t(seconds * 1e9);
}

uint64_t defaultWatchdogTimeoutNs() {
  static const uint64_t timeout = [] {
    const char* text = std::getenv("COLLC_WATCHDOG_TIMEOUT");
    if (!text || !*text)
      return kBuiltInWatchdogTimeoutNs;
    if (std::optional<uint64_t> parsed = parseWatchdogTimeout(text))
      return *parsed;
    std::fprintf(stderr,
                 "collc: ignoring COLLC_WATCHDOG_TIMEOUT='%s': expected seconds in (0, 3600]\n",
                 text);
    return kBuiltInWatchdogTimeoutNs;
  }();
  return timeout;
}

} // namespace collc
