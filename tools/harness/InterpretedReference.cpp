#include "tools/harness/InterpretedReference.h"

#include <cmath>
#include <string>

namespace collc {
namespace {

std::vector<double> load(DType type, const void* data, int64_t elems, bool magnitude) {
  std::vector<double> values(static_cast<size_t>(elems));
  for (int64_t i = 0; i < elems; ++i) {
    const double value = data ? loadElement(type, data, uint64_t(i)) : std::nan("");
    values[size_t(i)] = magnitude ? std::fabs(value) : value;
  }
  return values;
}

interpret::Call makeCall(const ir::Program& spec, const CompiledCollective& compiled,
                         uint64_t count, Span<const void* const> inputs,
                         const std::vector<std::vector<const void*>>& aux, bool magnitude) {
  interpret::Call call;
  call.nranks = compiled.nranks;
  call.count = int64_t(count);
  call.root = compiled.root;
  call.rowLength = compiled.rowLength;
  call.op = magnitude ? ReduceOp::Sum : compiled.op;
  call.eps = compiled.eps;
  const int64_t inElems = interpret::inputElements(spec, call);
  const std::vector<int64_t> auxElems = interpret::auxElements(spec, call);
  for (int r = 0; r < compiled.nranks; ++r) {
    call.input.push_back(load(compiled.dtype, inputs[size_t(r)], inElems, magnitude));
    std::vector<std::vector<double>> perBuffer;
    for (size_t k = 0; k < auxElems.size(); ++k)
      perBuffer.push_back(load(compiled.dtype,
                               k < aux[size_t(r)].size() ? aux[size_t(r)][k] : nullptr, auxElems[k],
                               magnitude));
    call.aux.push_back(std::move(perBuffer));
  }
  return call;
}

} // namespace

InterpretedReference interpretReference(const ir::Program& spec, const CompiledCollective& compiled,
                                        uint64_t count, Span<const void* const> inputs,
                                        const std::vector<std::vector<const void*>>& aux) {
  InterpretedReference reference;
  reference.value = interpret::interpret(
      spec, spec.steps, makeCall(spec, compiled, count, inputs, aux, /*magnitude=*/false));
  reference.scale = interpret::interpret(
      spec, spec.steps, makeCall(spec, compiled, count, inputs, aux, /*magnitude=*/true));
  return reference;
}

Comparison compareInterpreted(DType type, int terms, const std::vector<double>& want,
                              const std::vector<double>& scale, const void* got,
                              std::string_view label, unsigned maxReported) {
  Comparison comparison;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      continue; // the spec leaves the element unwritten: the kind does not specify it
    const double value = loadElement(type, got, i);
    const double tolerance =
        sumTolerance(type, terms) * (i < scale.size() ? scale[i] : std::fabs(want[i])) +
        tinyTolerance(type);
    if (std::fabs(value - want[i]) <= tolerance)
      continue;
    if (comparison.mismatches++ < maxReported)
      comparison.firstMismatches += std::string(label) + "[" + std::to_string(i) + "]: got " +
                                    formatElement(type, got, i) + ", expected " +
                                    std::to_string(want[i]) + " (tolerance " +
                                    std::to_string(tolerance) + ")\n";
  }
  return comparison;
}

} // namespace collc
