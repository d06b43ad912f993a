// The collc command: check, emit, run and list collective specs.
#include "dsl/Diagnostics.h"
#include "runtime/Jit.h"
#include "tools/bench/BenchCommand.h"
#include "tools/collc/Commands.h"
#include "tools/collc/VersionCommand.h"
#include "tools/launch/NvlinkMulticast.h"

#include <llvm/Support/raw_ostream.h>

namespace collc::driver {
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
