// The collc command: check, emit, run and list collective specs.
#include "dsl/Diagnostics.h"
#include "runtime/Jit.h"
#include "tools/collc/Commands.h"
#include "tools/collc/VersionCommand.h"
#include "tools/launch/NvlinkMulticast.h"

#include <cstring>
#include <llvm/Support/raw_ostream.h>

namespace collc::driver {

std::vector<OptionSpec> variantOptions() {
  return {
      {"ranks", "R", "rank count to compile for (default 2; run: the GPU count)"},
      {"dtype", "T", "element type: f32, f16 or bf16 (default f32)"},
      {"op", "O", "reduction: sum, max or min (default sum)"},
      {"root", "R", "root rank of a broadcast or reduce (default 0), compiled into the kernel"},
      {"hidden", "H", "row length of a spec with rows (e.g. the hidden size of allreduce_rmsnorm)"},
      {"eps", "E", "rmsnorm's epsilon (default 1e-6)"},
      {"sync", "S",
       "sync strategy, overriding the spec's: barrier, sentinel, ll, ll128, ll128_atomic"},
      {"blocks", "B", "thread blocks per rank (default: the spec's launch)"},
      {"threads", "N", "threads per block"},
      {"vector", "BYTES", "bytes per memory operation: 2, 4, 8 or 16"},
      {"unroll", "K", "vectors per thread per loop iteration"},
      {"whole-stores", "0|1",
       "1: store every whole vector with one instruction of its width (default: the spec's, "
       "else 0)"},
      {"no-pdl", "",
       "launch without programmatic dependent launch (no overlap with the "
       "previous kernel)"},
      {"experimental-ll128", "",
       "compile --sync ll128 although it is disabled (it has returned wrong results; for "
       "investigation only)"}};
}

bool parseVariant(const ParsedArguments& args, CompileOptions& options, std::string& error,
                  bool syncMayBeAll) {
  if (auto text = args.get("dtype")) {
    auto value = parseDType(*text);
    if (!value)
      return error = "unknown --dtype '" + *text + "'; expected f32, f16 or bf16", false;
    options.dtype = *value;
  }
  if (auto text = args.get("op")) {
    auto value = parseReduceOp(*text);
    if (!value)
      return error = "unknown --op '" + *text + "'; expected sum, max or min", false;
    options.op = *value;
  }
  if (auto text = args.get("sync"); text && !(syncMayBeAll && *text == "all")) {
    auto value = parseSyncKind(*text);
    if (!value)
      return error = "unknown --sync '" + *text +
                     "'; expected barrier, sentinel, ll, ll128 or ll128_atomic",
             false;
    options.sync = *value;
  }
  struct IntOption {
    const char* name;
    std::optional<int>* target;
  };
  std::optional<int> ranks, root, hidden;
  for (IntOption o :
       {IntOption{"ranks", &ranks}, IntOption{"root", &root}, IntOption{"hidden", &hidden},
        IntOption{"blocks", &options.blocks}, IntOption{"threads", &options.threads},
        IntOption{"vector", &options.vectorBytes}, IntOption{"unroll", &options.unroll},
        IntOption{"whole-stores", &options.wholeStores}}) {
    auto text = args.get(o.name);
    if (!text)
      continue;
    auto value = parseSize(*text);
    if (!value || *value > 1000000)
      return error = std::string("--") + o.name + " takes a positive integer, not '" + *text + "'",
             false;
    *o.target = int(*value);
  }
  if (ranks)
    options.nranks = *ranks;
  if (root)
    options.root = *root;
  if (hidden)
    options.rowLength = *hidden;
  if (auto text = args.get("eps")) {
    char* end = nullptr;
    const double eps = std::strtod(text->c_str(), &end);
    if (text->empty() || *end != '\0' || !(eps >= 0) || eps > 1)
      return error = "--eps takes a number in [0, 1], not '" + *text + "'", false;
    options.eps = float(eps);
  }
  if (args.has("no-pdl"))
    options.programmaticLaunch = false;
  if (args.has("experimental-ll128"))
    options.experimentalLL128 = true;
  return true;
}

int reportError(Error error, bool specError) {
  llvm::errs() << (specError ? "collc: " : "collc: error: ") << error.message() << "\n";
  return kUserError;
}

int usageError(const std::string& message) {
  llvm::errs() << "collc: error: " << message << "\n";
  return kUserError;
}

std::string firstError(const std::string& diagnostics) {
  size_t at = diagnostics.find("error: ");
  size_t begin = at == std::string::npos ? 0 : at + 7;
  std::string line = diagnostics.substr(begin, diagnostics.find('\n', begin) - begin);
  return line.empty() ? "refused by the compiler" : line;
}

namespace {

const char* const kToolHelp =
    "collc - a compiler for GPU collective kernels\n"
    "\n"
    "USAGE: collc <command> [options]\n"
    "\n"
    "COMMANDS:\n"
    "  list            the specs of the standard library\n"
    "  check SPEC      parse, check and verify a spec for every rank count it declares\n"
    "  emit SPEC       print the AST, IR, CUDA, PTX or cubin of one variant\n"
    "  run SPEC        run one variant on this machine's GPUs, check it and time it\n"
    "  bench SPEC|all  time variants over a sweep of sizes against NCCL, in one table\n"
    "  tune SPEC|all   search variants per size on this machine; write the tuning table\n"
    "  help [COMMAND]  this text, or a command's options\n"
    "  --version       collc's version; NVRTC, CUDA runtime and NCCL: built with, loaded\n"
    "\n"
    "SPEC is a path to a .coll file or the name of a standard spec. 'collc COMMAND --help' lists\n"
    "a command's options. Exit status: 0 success, 1 error in the input or environment, 2 internal\n"
    "error in collc.\n";

const Command kListCommand{
    "list",
    "list",
    "Print the names of the standard library's specs, one a line: each is a SPEC the other\n"
    "commands take ('collc check allreduce_oneshot').",
    "",
    {{"help", "", "show this help"}},
    0};

int list() {
  for (const auto& name : stdlibNames())
    llvm::outs() << name << "\n";
  return kSuccess;
}

const Command* findCommand(const std::string& name) {
  for (const Command* command :
       {&kListCommand, &kCheckCommand, &kEmitCommand, &kRunCommand, &kBenchCommand, &kTuneCommand})
    if (command->name == name)
      return command;
  return nullptr;
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    llvm::errs() << kToolHelp;
    return kUserError;
  }
  std::string name = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (name == "--help" || name == "-h" || (name == "help" && rest.empty())) {
    llvm::outs() << kToolHelp;
    return kSuccess;
  }
  if (name == "--version")
    return printVersion();
  if (name == "help") {
    if (rest.size() > 1)
      return usageError("'collc help' takes one command, not " + std::to_string(rest.size()) +
                        "; see 'collc --help'");
    const Command* command = findCommand(rest[0]);
    if (!command)
      return usageError("no command '" + rest[0] + "'; see 'collc --help'");
    llvm::outs() << helpText(*command);
    return kSuccess;
  }
  const Command* command = findCommand(name);
  if (!command)
    return usageError("unknown command '" + name + "'; see 'collc --help'");
  for (const auto& arg : rest)
    if (arg == "--help" || arg == "-h") {
      llvm::outs() << helpText(*command);
      return kSuccess;
    }
  ParsedArguments args;
  std::string error;
  if (!parseArguments(*command, rest, args, error))
    return usageError(error);
  if (command == &kListCommand)
    return list();
  if (command == &kCheckCommand)
    return runCheck(args);
  if (command == &kEmitCommand)
    return runEmit(args);
  if (command == &kBenchCommand)
    return runBench(args);
  if (command == &kTuneCommand)
    return runTune(args);
  return runRun(args);
}

} // namespace
} // namespace collc::driver

int main(int argc, char** argv) {
  // The GPU machine's rule, before anything loads NCCL; children started by --procs inherit it.
  collc::keepNvlinkMulticastOff();
  try {
    return collc::driver::dispatch(argc, argv);
  } catch (const collc::InternalError& e) {
    llvm::errs() << "collc: " << e.what() << "\n";
    return collc::driver::kInternalError;
  } catch (const std::exception& e) {
    llvm::errs() << "collc: internal error: " << e.what() << "\n";
    return collc::driver::kInternalError;
  }
}
