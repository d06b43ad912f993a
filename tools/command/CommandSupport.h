// What every collc command shares: its exit status, its error reports and the options that choose
// a variant. Each command returns the process exit status: 0 success, 1 the user's error (a wrong
// spec, a bad option, no GPU for a GPU command), 2 a failure of collc itself.
#ifndef COLLC_TOOLS_COMMAND_COMMANDSUPPORT_H
#define COLLC_TOOLS_COMMAND_COMMANDSUPPORT_H

#include "compiler/Compile.h"
#include "runtime/Status.h"
#include "tools/command/Arguments.h"

namespace collc::driver {

enum ExitCode { kSuccess = 0, kUserError = 1, kInternalError = 2 };

/// The options that choose a variant (--dtype, --op, --ranks, --sync, launch knobs).
std::vector<OptionSpec> variantOptions();
/// Fills `options` from the parsed variant options; false with `error` set on a bad value. With
/// `syncMayBeAll`, --sync=all is accepted and leaves options.sync unset: the caller tries each.
bool parseVariant(const ParsedArguments& args, CompileOptions& options, std::string& error,
                  bool syncMayBeAll = false);
/// --work-limit into `limit` (left as it is without the option); false with `error` set unless it
/// is a positive number of steps.
bool parseWorkLimit(const ParsedArguments& args, int64_t& limit, std::string& error);

/// Reports an error: "collc: error: MESSAGE", or for the spec's error (its diagnostics are printed
/// already) "collc: 2 errors in FILE" (Error::isSpecError says which).
int reportError(Error error);
int usageError(const std::string& message);
/// The first error of compiler diagnostics, without its place: the line a refused variant gets in
/// a table or a note.
std::string firstError(const std::string& diagnostics);

/// Now, as results files date a run: "2026-12-03 13:56:13 UTC".
std::string utcNow();

} // namespace collc::driver

#endif // COLLC_TOOLS_COMMAND_COMMANDSUPPORT_H
