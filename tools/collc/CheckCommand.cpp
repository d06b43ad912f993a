#include "tools/collc/Commands.h"

#include <llvm/Support/raw_ostream.h>

namespace collc::driver {

const Command kCheckCommand{
    "check",
    "check SPEC",
    "Parse, check and verify a spec for every rank count it declares. SPEC is a path or the name\n"
    "of a standard spec (see 'collc list'). Diagnostics go to stderr as file:line:col: error: ...",
    "The verifier runs the spec's data flow symbolically for each rank count and proves the\n"
    "collective's postcondition, the ordering of every read after the write it depends on, the\n"
    "absence of races, and that scratch is written before it is read. A broadcast or reduce is\n"
    "proved for every root. The spec's own sync strategy and launch shape are then lowered for\n"
    "every rank count, so a strategy it cannot use is refused at its 'sync' clause.\n",
    {},
    1};

int runCheck(const ParsedArguments& args) {
  auto spec = fromCompiler(loadSpec(args.positionals()[0]));
  if (!spec)
    return reportError(spec.takeError());
  bool specError = false;
  if (Error error = compilerError(checkSpec(*spec, llvm::errs()), &specError))
    return reportError(std::move(error), specError);
  llvm::outs() << spec->bufferName << ": ok\n";
  return kSuccess;
}

} // namespace collc::driver
