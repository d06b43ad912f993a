#include "runtime/Watchdog.h"

#include <cstdio>
#include <cstdlib>

namespace collc {

uint64_t defaultWatchdogTimeoutNs() {
  constexpr uint64_t kDefault = 5'000'000'000;
  static const uint64_t timeout = [] {
    const char* text = std::getenv("COLLC_WATCHDOG_TIMEOUT");
    if (!text || !*text)
      return kDefault;
    char* end = nullptr;
    double seconds = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(seconds > 0) || seconds > 3600) {
      std::fprintf(stderr,
                   "collc: ignoring COLLC_WATCHDOG_TIMEOUT='%s': expected seconds in (0, 3600]\n",
                   text);
      return kDefault;
    }
    return uint64_t(seconds * 1e9);
  }();
  return timeout;
}

} // namespace collc
