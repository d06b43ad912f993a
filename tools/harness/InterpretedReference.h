// The reference of every spec: its data flow interpreted in float64 (compiler/interpret/) on the
// call's own inputs and aux buffers, each element with the bound a device's rounding may move it
// by, and the comparison that holds a kernel's results to it. The spec being run is its own
// reference, whatever its kind or buffers. No CUDA.
#ifndef COLLC_TOOLS_HARNESS_INTERPRETEDREFERENCE_H
#define COLLC_TOOLS_HARNESS_INTERPRETEDREFERENCE_H

#include "abi/CompiledCollective.h"
#include "compiler/interpret/Interpreter.h"
#include "tools/harness/HostData.h"

#include <string_view>
#include <vector>

namespace collc {

/// What every rank's output and aux buffers must hold, and how far each element may be from it
/// (interpret::BoundedResult: 0 for a copy, NaN where the spec leaves the element unwritten).
struct InterpretedReference {
  interpret::Result value, bound;
  /// Quantized elements whose float64 value lies within the fp32 computation's error of a
  /// rounding boundary (interpret::BoundedResult::nearRoundingBoundary): the only ones not held
  /// bit for bit.
  int64_t nearRoundingBoundary = 0;
};

/// The rounding a kernel of `type` may do, as the bounds' units (HostData.h's tolerances):
///   sum:     sumTolerance(type, 1) per term of a sum, of the sum of the terms' magnitudes
///            (f32 1e-6, 16 times float's unit roundoff: adds in float in any order; f16 2^-11,
///            bf16 2^-8: their unit roundoffs, for a sum rounded once or at every add, as the
///            packed 16-bit atomics do), plus tinyTolerance (a subnormal flushed to zero);
///   rmsnorm: f32 1e-5 (the sum of squares in float over a row, rsqrtf's 2 ulp, two products),
///            f16 2^-10 and bf16 2^-7 (twice the unit roundoff: the float steps and the last
///            rounding to the type), relative to the result; a quantized norm, never rounded
///            to the type, f32's 1e-5 for every type.
interpret::Rounding roundingOf(DType type);

/// Interprets `spec` (steps expanded for compiled.nranks) for one call of `count` elements.
/// inputs[r] is rank r's input, aux[r][k] its aux buffer k, of its own element type (null for
/// one the kernel writes: it starts unwritten). written[r][k], where given and not null, is what
/// the kernel left in rank r's aux buffer k: a quantized output is referenced from the rows the
/// kernel wrote and its norm read (interpret::Call::rowsAsWritten), so that its bound is the
/// norm's float steps alone. Throws interpret::InterpretError where the spec cannot be
/// interpreted.
InterpretedReference interpretReference(const ir::Program& spec, const CompiledCollective& compiled,
                                        uint64_t count, Span<const void* const> inputs,
                                        const std::vector<std::vector<const void*>>& aux,
                                        const std::vector<std::vector<const void*>>& written = {});

/// Compares `got` (elements of `type`) with `want` within `bound`: NaN must be NaN, an infinity
/// the same infinity, a copy (bound 0) equal (-0.0 and +0.0 compare equal: the sentinel strategy
/// sends -0.0 as +0.0). Elements the spec leaves unwritten (bound NaN) are not compared. Mismatch
/// lines read "LABEL[17]: got 1.5 (0x3fc00000), expected 1.25 (|diff| 0.25 > bound 0.0001)".
Comparison compareInterpreted(ElementType type, const std::vector<double>& want,
                              const std::vector<double>& bound, const void* got,
                              std::string_view label, unsigned maxReported = 4);
inline Comparison compareInterpreted(DType type, const std::vector<double>& want,
                                     const std::vector<double>& bound, const void* got,
                                     std::string_view label, unsigned maxReported = 4) {
  return compareInterpreted(elementTypeOf(type), want, bound, got, label, maxReported);
}

} // namespace collc

#endif // COLLC_TOOLS_HARNESS_INTERPRETEDREFERENCE_H
