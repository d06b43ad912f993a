// The reference of any spec: its data flow interpreted in float64 (compiler/interpret/) on the
// call's own inputs and aux buffers, so that a spec with buffers no hand-written reference knows
// (a residual added to an AllGather, a second output) is checked like the stdlib kinds. No CUDA.
#ifndef COLLC_TOOLS_HARNESS_INTERPRETEDREFERENCE_H
#define COLLC_TOOLS_HARNESS_INTERPRETEDREFERENCE_H

#include "abi/CompiledCollective.h"
#include "compiler/interpret/Interpreter.h"
#include "tools/harness/HostData.h"

#include <string_view>
#include <vector>

namespace collc {

/// What every rank's output and aux buffers must hold, and the scale of each element's rounding
/// error (the same data flow over the inputs' magnitudes, every operator a sum).
struct InterpretedReference {
  interpret::Result value, scale;
};

/// Interprets `spec` (steps expanded for compiled.nranks) for one call of `count` elements.
/// inputs[r] is rank r's input, aux[r][k] its aux buffer k (null for one the kernel writes: it
/// starts as NaN). Throws interpret::InterpretError where the spec cannot be interpreted.
InterpretedReference interpretReference(const ir::Program& spec, const CompiledCollective& compiled,
                                        uint64_t count, Span<const void* const> inputs,
                                        const std::vector<std::vector<const void*>>& aux);

/// Compares `got` (elements of `type`) with `want` at the tolerance of a sum over `terms` terms
/// (HostData.h's sumTolerance times the scale, plus the type's tiny tolerance). Elements the spec
/// leaves unwritten (NaN in `want`) are not compared.
Comparison compareInterpreted(DType type, int terms, const std::vector<double>& want,
                              const std::vector<double>& scale, const void* got,
                              std::string_view label, unsigned maxReported = 4);

} // namespace collc

#endif // COLLC_TOOLS_HARNESS_INTERPRETEDREFERENCE_H
