// A tuned variant (runtime/TuningTable.h) as compile options: where the tuner's and the
// dispatcher's choices meet the compiler.
#ifndef COLLC_PIPELINE_TUNEDOPTIONS_H
#define COLLC_PIPELINE_TUNEDOPTIONS_H

#include "compiler/Compile.h"
#include "runtime/TuningTable.h"

namespace collc {

/// Sets the choices `variant` makes (sync and launch shape) in `options`; the fields it leaves
/// unset stay unset there too, so the spec's own defaults apply.
void applyTunedVariant(const TunedVariant& variant, CompileOptions& options);

} // namespace collc

#endif // COLLC_PIPELINE_TUNEDOPTIONS_H
