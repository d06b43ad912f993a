#include "tools/collc/Commands.h"

#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

namespace collc::driver {

const Command kCheckCommand{
    "check",
    "check SPEC",
    "Parse, check and verify a spec for every rank count it declares. SPEC is a path or the name\n"
    "of a standard spec (see 'collc list'). Diagnostics go to stderr as file:line:col: error: ...",
    "The verifier runs the spec's data flow for every rank count it declares, every root and\n"
    "every count n (n symbolic, residue by residue), and proves the collective's postcondition,\n"
    "the ordering of every read after the write it depends on, the absence of races, and that\n"
    "scratch is written before it is read (what is and is not proved: dsl/README.md). The spec's\n"
    "own sync strategy is then lowered for every rank count and the lowered program checked the\n"
    "same way, so a strategy it cannot use is refused at its 'sync' clause. The last line says\n"
    "how many runs the proof took, and which buffers the caller may pass as one.\n",
    {},
    1};

int runCheck(const ParsedArguments& args) {
  auto spec = fromCompiler(loadSpec(args.positionals()[0]));
  if (!spec)
    return reportError(spec.takeError());
  CheckReport report;
  bool specError = false;
  if (Error error = compilerError(checkSpec(*spec, llvm::errs(), &report), &specError))
    return reportError(std::move(error), specError);
  llvm::outs() << spec->bufferName << ": ok\n";
  llvm::outs() << "  proved for nranks " << report.minRanks << ".." << report.maxRanks
               << ", every root and every n: " << report.runs << " runs, " << report.work
               << " steps of work (limit " << report.workLimit << "), "
               << llvm::format("%.2f", report.seconds) << " s\n";
  llvm::outs() << "  in place (out is in): " << (report.inPlace ? "allowed" : "not allowed")
               << "\n";
  for (const auto& [written, read] : report.auxAliases)
    llvm::outs() << "  '" << written << "' may be the same memory as '" << read << "'\n";
  return kSuccess;
}

} // namespace collc::driver
