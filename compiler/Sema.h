// Semantic analysis: resolves the names of a parsed spec, checks what can be checked without
// running it (types, roles, scopes, knobs), and builds the IR. Every problem found is reported at
// its location; analysis goes on after an error so that one run shows them all.
#ifndef COLLC_COMPILER_SEMA_H
#define COLLC_COMPILER_SEMA_H

#include "compiler/ir/IR.h"
#include "dsl/AST.h"
#include "dsl/Diagnostics.h"

#include <memory>

namespace collc {

/// The IR of `spec`, or null if any error was reported.
std::unique_ptr<ir::Program> analyze(const ast::Spec& spec, Diagnostics& diags);

} // namespace collc

#endif // COLLC_COMPILER_SEMA_H
