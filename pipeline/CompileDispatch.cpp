#include "pipeline/CompileDispatch.h"

#include "compiler/Compile.h"
#include "pipeline/TunedOptions.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"

#include <fmt/format.h>
#include <sstream>

namespace collc {

namespace {

Error dispatchError(const std::string& message) {
  return makeError("dispatch: " + message);
}

Expected<DispatchVariant> compileVariant(const TunedVariant& variant,
                                         const DispatchRequest& request, const std::string& arch,
                                         int mostBlocksPerRank) {
  auto fail = [&](const std::string& why) {
    return dispatchError("variant " + variant.text() + ": " + why);
  };
  auto spec = loadSpec(variant.spec);
  if (!spec)
    return fail(toString(spec.takeError()));
  CompileOptions options;
  options.dtype = request.dtype;
  options.op = request.op;
  options.nranks = request.nranks;
  applyTunedVariant(variant, options);
  if (mostBlocksPerRank > 0 && options.blocks && *options.blocks > mostBlocksPerRank)
    options.blocks = mostBlocksPerRank;
  std::ostringstream diag;
  auto compiled = compileCollective(*spec, options, diag);
  // A variant that names no blocks has the spec's own, known only once it is compiled.
  if (compiled && mostBlocksPerRank > 0 && compiled->launch.blocks > mostBlocksPerRank) {
    options.blocks = mostBlocksPerRank;
    compiled = compileCollective(*spec, options, diag);
  }
  if (!compiled) {
    consumeError(compiled.takeError());
    return fail("the compiler refused it:\n" + diag.str());
  }
  if (compiled->kind != request.collective)
    return fail(
        fmt::format("it is an {}, not an {}", name(compiled->kind), name(request.collective)));
  JitOptions jit;
  jit.arch = arch;
  auto cubin = compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
  if (!cubin)
    return fail("NVRTC: " + toString(cubin.takeError()));
  return DispatchVariant{variant, std::move(*compiled), std::move(cubin->image)};
}

/// The request's NVRTC target: its own, else GPU 0's, else sm_90.
std::string targetArch(const DispatchRequest& request) {
  if (!request.arch.empty())
    return request.arch;
  Expected<int> gpus = gpuCount();
  if (!gpus) {
    consumeError(gpus.takeError());
    return "sm_90";
  }
  std::string arch = gpuArch(0);
  return arch.empty() ? "sm_90" : arch;
}

} // namespace

Expected<DispatchProgram> compileDispatchProgram(const DispatchRequest& request,
                                                 int mostBlocksPerRank) {
  // The built-in rule names only specs that declare the request's rank count.
  auto declaredRanks = [](const std::string& name) -> std::optional<std::pair<int, int>> {
    auto ranks = collc::declaredRanks(std::string_view(name));
    if (!ranks) {
      consumeError(ranks.takeError());
      return std::nullopt; // its compile says why
    }
    return *ranks;
  };
  auto program = DispatchProgram::plan(request, declaredRanks);
  if (!program)
    return program.takeError();
  const std::string arch = targetArch(request);
  std::vector<DispatchVariant> variants;
  for (const TunedVariant& variant : program->plan().variants) {
    auto compiled = compileVariant(variant, request, arch, mostBlocksPerRank);
    if (!compiled)
      return joinErrors(compiled.takeError(),
                        dispatchError("the plan came from " + program->plan().source));
    variants.push_back(std::move(*compiled));
  }
  if (Error err = program->setVariants(std::move(variants)))
    return err;
  return program;
}

} // namespace collc
