// A time that counts only when the result it came with was checked correct: what the bench modes
// that measure instances directly (--dispatch, --instances) record per size.
#ifndef COLLC_TOOLS_BENCH_CHECKEDTIMING_H
#define COLLC_TOOLS_BENCH_CHECKEDTIMING_H

#include "runtime/CollectiveInstance.h"
#include "tools/bench/BenchResults.h"
#include "tools/harness/RunHarness.h"

namespace collc::driver {

/// One run of runAndCheck on `instance` (options.count elements, timed): its time, or a Wrong
/// timing with the first mismatches where the result was wrong; an error (CUDA, the watchdog)
/// as the Expected's error.
Expected<BenchTiming> checkedTiming(SymmetricWorld& world, CollectiveInstance& instance,
                                    const RunOptions& options);

} // namespace collc::driver

#endif // COLLC_TOOLS_BENCH_CHECKEDTIMING_H
