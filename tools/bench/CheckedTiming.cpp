#include "tools/bench/CheckedTiming.h"

namespace collc::driver {

Expected<BenchTiming> checkedTiming(SymmetricWorld& world, CollectiveInstance& instance,
                                    const RunOptions& options) {
  auto report = runAndCheck(world, instance, instance.compiled(), options);
  if (!report)
    return report.takeError();
  if (!report->correct)
    return BenchTiming::wrong(report->firstMismatches);
  return BenchTiming::measured(report->usPerOp);
}

} // namespace collc::driver
