#include "compiler/DiagnosticText.h"
#include "runtime/BundleFile.h"
#include "runtime/Jit.h"
#include "tools/collc/Commands.h"

#include <cstdlib>
#include <iostream>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>
#include <set>

namespace collc::driver {

const Command kEmitCommand{
    "emit",
    "emit SPEC --emit=ast|ir|cuda|ptx|cubin|bundle [options]",
    "Compile one variant of a spec and print a stage of it: the parsed tree, the lowered IR, the\n"
    "generated CUDA source, NVRTC's PTX or cubin, or a bundle (no GPU needed).",
    "Binary output (cubin, bundle) needs -o FILE. PTX, cubin and bundle go through the JIT cache\n"
    "($COLLC_CACHE_DIR, else $XDG_CACHE_HOME/collc, else ~/.cache/collc).\n"
    "A bundle is the variant ahead of time: its description and one cubin per --arch\n"
    "(--arch=sm_90,sm_100), loaded later by the runtime alone (loadBundle, runtime/BundleFile.h)\n"
    "or run with 'collc run FILE'. The format is in\n"
    "docs/bundles.md.\n",
    [] {
      std::vector<OptionSpec> options = {
          {"emit", "KIND", "ast, ir, cuda, ptx, cubin or bundle (default: cuda)"},
          {"o", "FILE", "write to FILE instead of stdout"},
          {"arch", "SM",
           "target architecture for ptx/cubin (default: sm_90); for a bundle a "
           "comma-separated list, one cubin each (sm_90,sm_100)"},
          {"with-source", "",
           "with --emit=bundle: store the CUDA source too (the runtime "
           "never needs it)"},
          {"print-ir-after-all", "",
           "with --emit=ir: print the IR after every step of the lowering"},
          {"no-format", "", "leave the emitted CUDA as generated (skip clang-format)"},
          {"verbose", "",
           "where NVRTC refuses: the generated CUDA source, numbered, after the error"},
          {"help", "", "show this help"}};
      auto variant = variantOptions();
      options.insert(options.end(), variant.begin(), variant.end());
      return options;
    }(),
    1};

namespace {

/// The architectures of --arch=sm_80,sm_90 for a bundle; empty with `error` set on a bad list.
std::vector<std::string> bundleArchs(const std::string& list, std::string& error) {
  std::vector<std::string> archs;
  std::set<std::string> seen;
  size_t begin = 0;
  for (;;) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string arch = list.substr(begin, end - begin);
    if (arch.size() <= 3 || arch.compare(0, 3, "sm_") != 0)
      return error = "--arch for a bundle takes real architectures such as sm_80,sm_90, not '" +
                     arch + "'",
             std::vector<std::string>{};
    if (!seen.insert(arch).second)
      return error = "--arch names " + arch + " twice", std::vector<std::string>{};
    archs.push_back(arch);
    if (end == list.size())
      return archs;
    begin = end + 1;
  }
}

/// Compiles `compiled` for every architecture and writes the bundle to `path`, with the text of
/// `spec` (which `collc run BUNDLE` checks the results against, interpreted).
int emitBundle(CompiledCollective compiled, const SpecSource& spec,
               const std::vector<std::string>& archs, bool withSource, bool verbose,
               const std::string& path) {
  CollectiveBundle bundle;
  bundle.specName = spec.bufferName;
  bundle.specText = spec.text;
  for (const std::string& arch : archs) {
    JitOptions jit;
    jit.arch = arch;
    jit.sourceInErrors = verbose;
    auto image = compileCuda(compiled.cudaSource, compiled.kernelName, JitOutput::Cubin, jit);
    if (!image)
      return reportError(image.takeError());
    bundle.cubins.push_back({arch, std::move(image->image)});
  }
  if (!withSource)
    compiled.cudaSource.clear();
  bundle.compiled = std::move(compiled);
  if (Error err = writeBundle(path, bundle))
    return reportError(std::move(err));
  return kSuccess;
}

} // namespace

int runEmit(const ParsedArguments& args) {
  std::string kind = args.get("emit").value_or("cuda");
  if (kind != "ast" && kind != "ir" && kind != "cuda" && kind != "ptx" && kind != "cubin" &&
      kind != "bundle")
    return usageError("unknown --emit kind '" + kind +
                      "'; expected ast, ir, cuda, ptx, cubin or bundle");
  if ((kind == "cubin" || kind == "bundle") && !args.has("o"))
    return usageError("--emit=" + kind + " writes binary data: give an output file with -o FILE");
  if (args.has("with-source") && kind != "bundle")
    return usageError("--with-source goes with --emit=bundle");
  std::vector<std::string> archs;
  if (kind == "bundle") {
    std::string archError;
    archs = bundleArchs(args.get("arch").value_or("sm_90"), archError);
    if (archs.empty())
      return usageError(archError);
  }
  CompileOptions options;
  std::string error;
  if (!parseVariant(args, options, error))
    return usageError(error);
  options.formatSource = !args.has("no-format");

  std::string text;
  DiagnosticText stage(text);
  if (kind == "ast")
    options.printAst = &stage;
  if (kind == "ir") {
    options.printIr = &stage;
    options.printIrAfterAll = args.has("print-ir-after-all");
  }
  auto spec = loadSpec(args.positionals()[0]);
  if (!spec)
    return reportError(spec.takeError());
  if (kind == "ast") {
    // The tree is printed as soon as it is parsed, even if a later check fails.
    auto compiled = compileCollective(*spec, options, std::cerr);
    llvm::outs() << stage.str();
    return compiled ? kSuccess : reportError(compiled.takeError());
  }
  auto compiled = compileCollective(*spec, options, std::cerr);
  if (!compiled)
    return reportError(compiled.takeError());
  if (kind == "bundle")
    return emitBundle(std::move(*compiled), *spec, archs, args.has("with-source"),
                      args.has("verbose"), *args.get("o"));
  if (kind == "cuda") {
    text = compiled->cudaSource;
  } else if (kind == "ptx" || kind == "cubin") {
    JitOptions jit;
    jit.arch = args.get("arch").value_or("sm_90");
    jit.sourceInErrors = args.has("verbose");
    auto image = compileCuda(compiled->cudaSource, compiled->kernelName,
                             kind == "ptx" ? JitOutput::Ptx : JitOutput::Cubin, jit);
    if (!image)
      return reportError(image.takeError());
    text = image->image;
  } else {
    text = stage.str();
  }
  if (auto path = args.get("o")) {
    std::error_code ec;
    llvm::raw_fd_ostream file(*path, ec,
                              kind == "cubin" ? llvm::sys::fs::OF_None : llvm::sys::fs::OF_Text);
    if (ec)
      return usageError("cannot write '" + *path + "': " + ec.message());
    file << text;
    return kSuccess;
  }
  llvm::outs() << text;
  return kSuccess;
}

} // namespace collc::driver
