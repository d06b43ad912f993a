// Step 1 of dispatch by size in full: the plan (runtime/Dispatcher.h) and every variant it may
// pick compiled by collc's compiler and NVRTC (disk cache). No GPU needed.
#ifndef COLLC_PIPELINE_COMPILEDISPATCH_H
#define COLLC_PIPELINE_COMPILEDISPATCH_H

#include "runtime/Dispatcher.h"
#include "runtime/Status.h"

namespace collc {

/// Reads the table, makes the plan and compiles each of its variants for request.arch (empty:
/// GPU 0's architecture, or sm_90 without a GPU). A variant that does not compile is an error that
/// names it and the table row's source (a table edited by hand may name a spec that no longer
/// exists). `mostBlocksPerRank` (0: none) caps each variant's blocks below what the plan names:
/// ranks that share one GPU (SharedGpuWorld) must keep all their blocks resident at once
/// (runtime/CoResidency.h), and the plan gives one rank the whole GPU's multiprocessors. The
/// variants then keep the plan's TunedVariant, and their CompiledCollective says the blocks.
Expected<DispatchProgram> compileDispatchProgram(const DispatchRequest& request,
                                                 int mostBlocksPerRank = 0);

} // namespace collc

#endif // COLLC_PIPELINE_COMPILEDISPATCH_H
