// `collc bench --compile-times`: what a user waits for the first time a variant is needed (the
// front end, then a cold NVRTC compile) and every time after (a hit in the disk cache). Needs no
// GPU: NVRTC is a library.
#ifndef COLLC_TOOLS_BENCH_COMPILETIMES_H
#define COLLC_TOOLS_BENCH_COMPILETIMES_H

#include "compiler/Compile.h"
#include "runtime/Status.h"
#include "tools/bench/BenchResults.h"

#include <string>

namespace collc::driver {

/// Compiles `spec` for `options` (front end, timed), then NVRTC to a cubin for `arch` three
/// times: into an empty private cache (cold: must be this process's first NVRTC compile to be
/// truly cold), with the cache off (NVRTC already loaded), and again into the cache (a hit). The
/// private cache is removed afterwards. Errors: the spec's (diagnostics on stderr; a spec error),
/// NVRTC's.
Expected<CompileTimes> measureCompileTimes(const SpecSource& spec, const CompileOptions& options,
                                           const std::string& arch);

} // namespace collc::driver

#endif // COLLC_TOOLS_BENCH_COMPILETIMES_H
