// The bound on every poll of a generated kernel: how long a rank waits for a peer's signal or data
// before it gives up and reports where it was waiting (collc_watchdog).
#ifndef COLLC_RUNTIME_WATCHDOG_H
#define COLLC_RUNTIME_WATCHDOG_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace collc {

/// The bound where nothing else is asked for: 5 s.
inline constexpr uint64_t kBuiltInWatchdogTimeoutNs = 5'000'000'000;

/// The default of every watchdog bound in collc (CollectiveInstance::create, Dispatcher::create,
/// the tool's --timeout): 5 s, unless $COLLC_WATCHDOG_TIMEOUT gives another number of seconds
/// (0 < s <= 3600; a value that is not is reported once on stderr and ignored). The variable is
/// read here only, once, the first time this is called.
uint64_t defaultWatchdogTimeoutNs();

/// The bound `text` gives in seconds, in nanoseconds; nullopt unless it is a number in (0, 3600].
std::optional<uint64_t> parseWatchdogTimeout(std::string_view text);

} // namespace collc

#endif // COLLC_RUNTIME_WATCHDOG_H
