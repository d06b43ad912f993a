#include "tools/bench/CompileTimes.h"

#include "runtime/Jit.h"
#include "tools/command/CommandSupport.h"

#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>

namespace collc::driver {

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

} // namespace

Expected<CompileTimes> measureCompileTimes(const SpecSource& spec, const CompileOptions& options,
                                           const std::string& arch) {
  CompileTimes times;
  Clock::time_point start = Clock::now();
  auto compiled = compileCollective(spec, options, std::cerr);
  if (!compiled)
    return compiled.takeError();
  times.frontEndMs = millisecondsSince(start);
  times.variant = fmt::format("{}/{} {} {}, {} ranks, {}", compiled->specName, name(compiled->sync),
                              name(compiled->dtype), name(compiled->op), compiled->nranks, arch);

  llvm::SmallString<128> cacheDir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("collc-compile-times", cacheDir))
    return makeError("cannot make a private kernel cache directory: " + ec.message());
  JitOptions jit;
  jit.arch = arch;
  jit.cacheDir = std::string(cacheDir.str());
  auto timed = [&](const JitOptions& with, double& ms, bool& cacheHit) -> Error {
    Clock::time_point begin = Clock::now();
    auto result = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, with);
    ms = millisecondsSince(begin);
    if (!result)
      return result.takeError();
    cacheHit = result->cacheHit;
    return Error::success();
  };
  JitOptions uncached = jit;
  uncached.useCache = false;
  bool coldHit = false, againHit = false;
  Error err = timed(jit, times.coldMs, coldHit);
  if (!err)
    err = timed(uncached, times.coldAgainMs, againHit);
  if (!err)
    err = timed(jit, times.warmMs, times.warmWasHit);
  llvm::sys::fs::remove_directories(cacheDir);
  if (err)
    return err;
  times.coldWasMiss = !coldHit;
  return times;
}

} // namespace collc::driver
