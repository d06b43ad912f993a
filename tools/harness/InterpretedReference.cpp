#include "tools/harness/InterpretedReference.h"

#include "tools/harness/ParallelChunks.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace collc {
namespace {

std::vector<double> load(ElementType type, const void* data, int64_t elems) {
  std::vector<double> values(static_cast<size_t>(elems), std::nan(""));
  if (data)
    forEachChunk(uint64_t(elems), [&](uint64_t, uint64_t begin, uint64_t end) {
      for (uint64_t i = begin; i < end; ++i)
        values[i] = loadElement(type, data, i);
    });
  return values;
}

interpret::Call makeCall(const ir::Program& spec, const CompiledCollective& compiled,
                         uint64_t count, Span<const void* const> inputs,
                         const std::vector<std::vector<const void*>>& aux,
                         const std::vector<std::vector<const void*>>& written) {
  interpret::Call call;
  call.nranks = compiled.nranks;
  call.count = int64_t(count);
  call.root = compiled.root;
  call.rowLength = compiled.rowLength;
  call.op = compiled.op;
  call.eps = compiled.eps;
  const int64_t inElems = interpret::inputElements(spec, call);
  const std::vector<int64_t> auxElems = interpret::auxElements(spec, call);
  for (int r = 0; r < compiled.nranks; ++r) {
    call.input.push_back(load(elementTypeOf(compiled.dtype), inputs[size_t(r)], inElems));
    std::vector<std::vector<double>> perBuffer;
    for (size_t k = 0; k < auxElems.size(); ++k)
      perBuffer.push_back(load(compiled.auxType(k),
                               k < aux[size_t(r)].size() ? aux[size_t(r)][k] : nullptr,
                               auxElems[k]));
    call.aux.push_back(std::move(perBuffer));
    std::vector<std::vector<double>> asWritten(auxElems.size());
    for (size_t k = 0; r < int(written.size()) && k < written[size_t(r)].size(); ++k)
      if (k < auxElems.size() && written[size_t(r)][k])
        asWritten[k] = load(compiled.auxType(k), written[size_t(r)][k], auxElems[k]);
    call.rowsAsWritten.push_back(std::move(asWritten));
  }
  return call;
}

double normUnit(DType type) {
  switch (type) {
  case DType::F32:
    return 1e-5;
  case DType::F16:
    return 0x1p-10;
  case DType::BF16:
    return 0x1p-7;
  }
  return 0;
}

bool matches(double value, double want, double bound) {
  if (std::isnan(want))
    return std::isnan(value);
  if (std::isinf(want))
    return value == want;
  return std::fabs(value - want) <= bound; // false for NaN and infinity
}

} // namespace

interpret::Rounding roundingOf(DType type) {
  return interpret::Rounding{sumTolerance(type, 1), tinyTolerance(type), normUnit(type),
                             normUnit(DType::F32)};
}

InterpretedReference interpretReference(const ir::Program& spec, const CompiledCollective& compiled,
                                        uint64_t count, Span<const void* const> inputs,
                                        const std::vector<std::vector<const void*>>& aux,
                                        const std::vector<std::vector<const void*>>& written) {
  interpret::BoundedResult result = interpret::interpretBounded(
      spec, spec.steps, makeCall(spec, compiled, count, inputs, aux, written),
      roundingOf(compiled.dtype));
  return InterpretedReference{std::move(result.value), std::move(result.bound),
                              result.nearRoundingBoundary};
}

Comparison compareInterpreted(ElementType type, const std::vector<double>& want,
                              const std::vector<double>& bound, const void* got,
                              std::string_view label, unsigned maxReported) {
  Comparison comparison;
  auto passes = [&](uint64_t i) {
    return std::isnan(bound[i]) || matches(loadElement(type, got, i), want[i], bound[i]);
  };
  auto report = [&](uint64_t i) {
    const double value = loadElement(type, got, i);
    char numbers[96];
    if (bound[i] > 0 && std::isfinite(want[i]))
      std::snprintf(numbers, sizeof numbers, "%.9g (|diff| %.3g > bound %.3g)", want[i],
                    std::fabs(value - want[i]), bound[i]);
    else
      std::snprintf(numbers, sizeof numbers, "%.9g (must match exactly)", want[i]);
    comparison.firstMismatches += std::string(label) + "[" + std::to_string(i) + "]: got " +
                                  formatElement(type, got, i) + ", expected " + numbers + "\n";
  };
  comparison.mismatches = countFailures(want.size(), maxReported, passes, report);
  return comparison;
}

} // namespace collc
