// `collc bench --plot FILE.png`: hands the results, as the JSON of --json, to scripts/plot-bench.py
// (embedded in the tool) under python3 with matplotlib. Plotting is optional equipment: where it
// is missing, this says so and what to install, and the benchmark's table stands regardless.
#ifndef COLLC_TOOLS_BENCH_BENCHPLOT_H
#define COLLC_TOOLS_BENCH_BENCHPLOT_H

#include <string>

namespace collc::driver {

/// Renders `png` from the JSON at `jsonPath`. Returns the exit status: 0 written, 1 python3 or
/// matplotlib missing or the script failed (the message said which, on stderr).
int renderBenchPlot(const std::string& jsonPath, const std::string& png);

} // namespace collc::driver

#endif // COLLC_TOOLS_BENCH_BENCHPLOT_H
