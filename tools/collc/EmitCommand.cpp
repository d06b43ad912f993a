#include "runtime/Jit.h"
#include "tools/collc/Commands.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

namespace collc::driver {

const Command kEmitCommand{
    "emit",
    "emit SPEC --emit=ast|ir|cuda|ptx|cubin [options]",
    "Compile one variant of a spec and print a stage of it: the parsed tree, the lowered IR, the\n"
    "generated CUDA source, or NVRTC's PTX or cubin (no GPU needed).",
    "Binary output (cubin) needs -o FILE. PTX and cubin go through the JIT cache\n"
    "($COLLC_CACHE_DIR, else $XDG_CACHE_HOME/collc, else ~/.cache/collc).\n",
    [] {
      std::vector<OptionSpec> options = {
          {"emit", "KIND", "ast, ir, cuda, ptx or cubin (default: cuda)"},
          {"o", "FILE", "write to FILE instead of stdout"},
          {"arch", "SM", "target architecture for ptx/cubin (default: sm_90)"},
          {"print-ir-after-all", "", "with --emit=ir: print the IR after every pass"},
          {"no-format", "", "leave the emitted CUDA as generated (skip clang-format)"},
          {"help", "", "show this help"}};
      auto variant = variantOptions();
      options.insert(options.end(), variant.begin(), variant.end());
      return options;
    }(),
    1};

int runEmit(const ParsedArguments& args) {
  std::string kind = args.get("emit").value_or("cuda");
  if (kind != "ast" && kind != "ir" && kind != "cuda" && kind != "ptx" && kind != "cubin")
    return usageError("unknown --emit kind '" + kind + "'; expected ast, ir, cuda, ptx or cubin");
  if (kind == "cubin" && !args.has("o"))
    return usageError("--emit=cubin writes binary data: give an output file with -o FILE");
  CompileOptions options;
  std::string error;
  if (!parseVariant(args, options, error))
    return usageError(error);
  options.formatSource = !args.has("no-format");

  std::string text;
  llvm::raw_string_ostream stage(text);
  if (kind == "ast")
    options.printAst = &stage;
  if (kind == "ir") {
    options.printIr = &stage;
    options.printIrAfterAll = args.has("print-ir-after-all");
  }
  auto spec = fromCompiler(loadSpec(args.positionals()[0]));
  if (!spec)
    return reportError(spec.takeError());
  if (kind == "ast") {
    // The tree is printed as soon as it is parsed, even if a later check fails.
    bool specError = false;
    auto compiled = fromCompiler(compileCollective(*spec, options, llvm::errs()), &specError);
    llvm::outs() << stage.str();
    return compiled ? kSuccess : reportError(compiled.takeError(), specError);
  }
  bool specError = false;
  auto compiled = fromCompiler(compileCollective(*spec, options, llvm::errs()), &specError);
  if (!compiled)
    return reportError(compiled.takeError(), specError);
  if (kind == "cuda") {
    text = compiled->cudaSource;
  } else if (kind == "ptx" || kind == "cubin") {
    JitOptions jit;
    jit.arch = args.get("arch").value_or("sm_90");
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
