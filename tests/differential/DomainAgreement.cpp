#include "tests/differential/DomainAgreement.h"

#include "compiler/interpret/Interpreter.h"
#include "compiler/verify/Simulation.h"

#include <cmath>

namespace collc::differential {
namespace {

/// A value for element `index` of rank `rank`'s buffer `tag` (0: the input; k: aux buffer k - 1):
/// an integer below 2^20 mixed from the three, so that two elements rarely share one and a sum of
/// up to the proof's 512 contributions stays exact in float64.
double valueOf(int rank, int tag, int64_t index) {
  uint64_t x = uint64_t(index) * 0x9E3779B97F4A7C15ull ^ uint64_t(rank) * 0xC2B2AE3D27D4EB4Full ^
               uint64_t(tag) * 0x165667B19E3779F9ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return double(1 + (x & 0xFFFFF));
}

std::vector<double> buffer(int64_t elems, int rank, int tag) {
  std::vector<double> values;
  for (int64_t i = 0; i < elems; ++i)
    values.push_back(valueOf(rank, tag, i));
  return values;
}

} // namespace

std::string checkDomainsAgree(const ir::Program& spec, int nranks, int64_t count, int root,
                              int64_t rowLength, Agreement& covered) {
  const std::string where = "nranks " + std::to_string(nranks) + " n " + std::to_string(count) +
                            " root " + std::to_string(root);
  interpret::Call call;
  call.nranks = nranks;
  call.count = count;
  call.root = root;
  call.rowLength = rowLength;
  call.op = ReduceOp::Sum;
  proof::FinalSources sources;
  interpret::Result values;
  try {
    const int64_t inElems = interpret::inputElements(spec, call);
    const std::vector<int64_t> auxElems = interpret::auxElements(spec, call);
    for (int r = 0; r < nranks; ++r) {
      call.input.push_back(buffer(inElems, r, 0));
      std::vector<std::vector<double>> aux;
      for (size_t k = 0; k < auxElems.size(); ++k)
        aux.push_back(buffer(auxElems[k], r, int(k) + 1));
      call.aux.push_back(std::move(aux));
    }
    values = interpret::interpret(spec, spec.steps, call);
  } catch (const interpret::InterpretError& error) {
    return "the reference cannot run the spec, " + where + ": " + error.what();
  }
  proof::RunConfig config;
  config.nranks = nranks;
  config.root = root;
  config.count = proof::Affine::constant(count);
  config.rowLength = rowLength;
  try {
    sources = proof::finalSources(spec, spec.steps, config);
  } catch (const proof::RunFailed&) {
    return "the proof refuses the spec, " + where;
  } catch (const proof::AffineError& error) {
    return "the proof cannot run the spec (" + error.why + "), " + where;
  }
  for (const auto& [id, ranks] : sources) {
    const ir::Buffer& b = spec.buffer(id);
    for (int r = 0; r < nranks; ++r) {
      const std::vector<double>& got = b.role == ir::BufferRole::Output
                                           ? values.output[size_t(r)]
                                           : values.aux[size_t(r)][size_t(b.auxIndex)];
      const std::vector<proof::ElementSources>& want = ranks[size_t(r)];
      if (got.size() != want.size())
        return b.name + " on rank " + std::to_string(r) + ": the reference has " +
               std::to_string(got.size()) + " elements, the proof " + std::to_string(want.size()) +
               ", " + where;
      for (size_t e = 0; e < want.size(); ++e) {
        const std::string element = b.name + "[" + std::to_string(e) + "] on rank " +
                                    std::to_string(r) + ", " + where + ": ";
        if (!want[e]) {
          if (!std::isnan(got[e]))
            return element + "the proof says nothing writes it; the reference holds " +
                   std::to_string(got[e]);
          ++covered.unwritten;
          continue;
        }
        if (std::isnan(got[e]))
          return element + "the proof says it is written; the reference leaves it unwritten";
        bool rowWise = false;
        double sum = 0;
        for (const proof::Source& s : *want[e]) {
          rowWise |= s.anyIndex;
          sum += valueOf(s.rank, s.tag, s.index);
        }
        if (rowWise) {
          ++covered.rowWise;
          continue;
        }
        if (got[e] != sum)
          return element + "the reference holds " + std::to_string(got[e]) + ", but the " +
                 std::to_string(want[e]->size()) + " elements the proof says reach it sum to " +
                 std::to_string(sum);
        ++covered.summed;
      }
    }
  }
  return "";
}

} // namespace collc::differential
