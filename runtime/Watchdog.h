// The bound on every poll of a generated kernel: how long a rank waits for a peer's signal or data
// before it gives up and reports where it was waiting (collc_watchdog).
#ifndef COLLC_RUNTIME_WATCHDOG_H
#define COLLC_RUNTIME_WATCHDOG_H

#include <cstdint>

namespace collc {

/// 5 s, unless $COLLC_WATCHDOG_TIMEOUT gives another number of seconds (0 < s <= 3600; an
/// unreadable value is reported once on stderr and ignored). The API (CollectiveInstance::create,
/// setTimeoutNs) and `collc run --timeout` override it.
uint64_t defaultWatchdogTimeoutNs();

} // namespace collc

#endif // COLLC_RUNTIME_WATCHDOG_H
