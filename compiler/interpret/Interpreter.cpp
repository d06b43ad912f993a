#include "compiler/interpret/Interpreter.h"

#include "compiler/execute/Walker.h"
#include "compiler/interpret/Float4.h"
#include "compiler/interpret/Float8.h"
#include "compiler/ir/RowOps.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

namespace collc::interpret {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// body(begin, end) over [0, length), split into fixed chunks over up to 16 threads (this one
/// too) where the length is large: element loops of a statement are independent.
template <typename Body> void parallelFor(int64_t length, Body body) {
  constexpr int64_t kChunk = int64_t(1) << 16;
  const int64_t chunks = (length + kChunk - 1) / kChunk;
  const int64_t threads =
      std::min<int64_t>({chunks, int64_t(std::max(1u, std::thread::hardware_concurrency())), 16});
  if (threads <= 1) {
    body(int64_t(0), length);
    return;
  }
  auto run = [&](int64_t first) {
    for (int64_t c = first; c < chunks; c += threads)
      body(c * kChunk, std::min(length, (c + 1) * kChunk));
  };
  std::vector<std::thread> workers;
  for (int64_t t = 1; t < threads; ++t)
    workers.emplace_back(run, t);
  run(0);
  for (std::thread& worker : workers)
    worker.join();
}

/// An element of the bounded domain: its value, and what its bound is made of. The terms of the
/// sum it is since the last rmsnorm (a copy of an input is one term, a line at zero none) and
/// the sum of their magnitudes, so that the sum's rounding is bounded whatever the order the device
/// adds them in; and the bound carried from an rmsnorm it was computed from (NaN: never written;
/// a float, since a bound needs no more digits, which keeps an element at 24 bytes).
struct Tracked {
  double value = kNaN, magnitude = kNaN;
  float carried = std::numeric_limits<float>::quiet_NaN();
  int32_t terms = 0;
};

double valueOf(double element) {
  return element;
}
double valueOf(const Tracked& element) {
  return element.value;
}

template <typename Element> Element unwrittenElement();
template <> double unwrittenElement<double>() {
  return kNaN;
}
template <> Tracked unwrittenElement<Tracked>() {
  return Tracked{};
}

template <typename Element> Element zeroElement();
template <> double zeroElement<double>() {
  return 0.0;
}
template <> Tracked zeroElement<Tracked>() {
  return Tracked{0, 0, 0, 0};
}

template <typename Element> Element givenElement(double value);
template <> double givenElement<double>(double value) {
  return value;
}
template <> Tracked givenElement<Tracked>(double value) {
  return Tracked{value, std::fabs(value), 0, 1};
}

double add(double a, double b) {
  return a + b;
}
Tracked add(const Tracked& a, const Tracked& b) {
  return Tracked{a.value + b.value, a.magnitude + b.magnitude, a.carried + b.carried,
                 a.terms + b.terms};
}

/// The reduction operator. Max and min propagate NaN, as the device's operators do
/// (compiler/device/combine_*.cuh), and pick one operand whole.
template <typename Element> Element combine(ReduceOp op, const Element& a, const Element& b) {
  if (op == ReduceOp::Sum)
    return add(a, b);
  if (std::isnan(valueOf(a)))
    return a;
  if (std::isnan(valueOf(b)))
    return b;
  const bool pickA = op == ReduceOp::Max ? valueOf(a) >= valueOf(b) : valueOf(a) <= valueOf(b);
  return pickA ? a : b;
}

/// How far a device may be from `element` (BoundedResult).
double boundOf(const Tracked& element, const Rounding& rounding) {
  if (std::isnan(element.carried))
    return kNaN;
  if (!std::isfinite(element.value))
    return 0;
  const double sum =
      element.terms > 1 ? element.terms * rounding.sumUnit * element.magnitude + rounding.tiny : 0;
  return double(element.carried) + sum;
}

/// One row of rmsnorm: out = rows * weight / sqrt(mean(rows^2) + eps).
void normalizeRow(const double* rows, const double* weight, double* out, int64_t h, double eps,
                  const Rounding&) {
  double squares = 0;
  for (int64_t k = 0; k < h; ++k)
    squares += rows[k] * rows[k];
  const double scale = 1.0 / std::sqrt(squares / double(h) + eps);
  for (int64_t k = 0; k < h; ++k)
    out[k] = rows[k] * scale * weight[k];
}

/// The same with bounds. The device normalises its own rows, each off by up to e_k; the mean
/// square is then off by up to mean(2|y|e + e^2), which moves the scale 1/sqrt(ms) by up to half
/// that relative to ms (first order, with the error taken off ms so that the bound stays on the
/// safe side). Both errors scale by |weight|, the weight's own error by |y| * scale; the kernel's
/// float steps add normUnit of the result.
void normalizeRow(const Tracked* rows, const Tracked* weight, Tracked* out, int64_t h, double eps,
                  const Rounding& rounding) {
  double squares = 0, squaresError = 0;
  for (int64_t k = 0; k < h; ++k) {
    const double y = rows[k].value, e = boundOf(rows[k], rounding);
    squares += y * y;
    squaresError += 2 * std::fabs(y) * e + e * e;
  }
  const double ms = squares / double(h) + eps;
  const double msError = squaresError / double(h);
  const double scale = 1 / std::sqrt(ms);
  const double scaleRelative =
      ms > msError ? 0.5 * msError / (ms - msError) : std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < h; ++k) {
    const double y = rows[k].value, e = boundOf(rows[k], rounding);
    const double w = weight[k].value, ew = boundOf(weight[k], rounding);
    const double value = y * scale * w;
    const double bound = std::fabs(w) * scale * (e + (std::fabs(y) + e) * scaleRelative) +
                         std::fabs(y) * scale * ew + rounding.normUnit * std::fabs(value) +
                         rounding.tiny;
    out[k] = Tracked{value, std::fabs(value), float(bound), 1};
  }
}

/// A row of rmsnorm's values quantized in place: q = e4m3(x / scale), rounded to nearest even
/// and saturating, as the device's conversion (Float8.h). NaN stays NaN.
void quantizeRow(double* row, int64_t h, double scale, const Rounding&, int64_t&) {
  for (int64_t k = 0; k < h; ++k)
    row[k] = fromE4M3(toE4M3(row[k] / scale));
}

/// The same with bounds. The device divides its float value, off by up to the norm's bound, by
/// the scale (one more rounding), then rounds that float exactly: where every value within that
/// distance rounds to one code, the device's code is the reference's, bit for bit (bound 0);
/// otherwise the value lies within the fp32 computation's error of a rounding boundary and the
/// device may give either neighbour: the bound spans them, and the case is counted.
void quantizeRow(Tracked* row, int64_t h, double scale, const Rounding& rounding,
                 int64_t& nearBoundary) {
  constexpr double kFloatUnit = 0x1p-23; // twice float's unit roundoff: one more rounding, safely
  for (int64_t k = 0; k < h; ++k) {
    const double x = row[k].value / scale;
    const double q = fromE4M3(toE4M3(x));
    double bound = 0;
    if (std::isfinite(x)) {
      const double spread = boundOf(row[k], rounding) / std::fabs(scale) * (1 + kFloatUnit) +
                            std::fabs(x) * kFloatUnit + rounding.tiny / std::fabs(scale);
      const double low = fromE4M3(toE4M3(x - spread));
      const double high = fromE4M3(toE4M3(x + spread));
      if (low != q || high != q) {
        bound = std::max(std::fabs(low - q), std::fabs(high - q));
        ++nearBoundary;
      }
    }
    row[k] = Tracked{q, std::fabs(q), float(bound), 1};
  }
}

/// A row of rmsnorm's values quantized in place with its own scale (interpret/Float8.h's
/// per-token FP8): scale = tokenScaleE4M3(amaxOfNumbers(row)), q = e4m3(x / scale).
void quantizeRowPerToken(double* row, int64_t h, double& scale, const Rounding&, int64_t&) {
  scale = tokenScaleE4M3(amaxOfNumbers(row, h));
  for (int64_t k = 0; k < h; ++k)
    row[k] = fromE4M3(toE4M3(row[k] / scale));
}

/// The same with bounds. The device's amax is of its own float values, each off by up to its
/// bound, so the amax is off by up to the largest bound, and the scale by that over 448 plus the
/// division's rounding: the scale's bound. Each code then as quantizeRow, with the device's
/// quotient x' / s' also moved by the scale's error (|x| * ds / (s * (s - ds)) at most): where
/// every value in reach rounds to one code the device's is the reference's (bound 0); otherwise
/// the case is counted and the bound spans the neighbours.
void quantizeRowPerToken(Tracked* row, int64_t h, Tracked& scaleOut, const Rounding& rounding,
                         int64_t& nearBoundary) {
  constexpr double kFloatUnit = 0x1p-23; // twice float's unit roundoff: one more rounding, safely
  std::vector<double> values(static_cast<size_t>(h));
  double largestBound = 0;
  for (int64_t k = 0; k < h; ++k) {
    values[size_t(k)] = row[k].value;
    const double b = boundOf(row[k], rounding);
    if (std::isfinite(row[k].value))
      largestBound = std::max(largestBound, std::isnan(b) ? kInfinity : b);
  }
  const double scale = tokenScaleE4M3(amaxOfNumbers(values.data(), h));
  const double scaleBound = std::isfinite(scale) ? largestBound / kE4M3Max + scale * kFloatUnit : 0;
  scaleOut = Tracked{scale, std::fabs(scale), float(scaleBound), 1};
  for (int64_t k = 0; k < h; ++k) {
    const double x = row[k].value / scale;
    const double q = fromE4M3(toE4M3(x));
    double bound = 0;
    if (std::isfinite(x) && std::isfinite(scale)) {
      const double low = scale - scaleBound;
      const double spread =
          low > 0
              ? (boundOf(row[k], rounding) + rounding.tiny) / low * (1 + kFloatUnit) +
                    std::fabs(row[k].value) * scaleBound / (scale * low) + std::fabs(x) * kFloatUnit
              : kInfinity;
      const double lowQ = fromE4M3(toE4M3(x - spread));
      const double highQ = fromE4M3(toE4M3(x + spread));
      if (lowQ != q || highQ != q) {
        bound = std::max(std::fabs(lowQ - q), std::fabs(highQ - q));
        ++nearBoundary;
      }
    }
    row[k] = Tracked{q, std::fabs(q), float(bound), 1};
  }
}

/// The value of element k of a packed NVFP4 row.
double nvfp4Element(const Nvfp4Row& q, int64_t k) {
  return fromE2M1(uint8_t(q.packed[size_t(k / 2)] >> (k % 2 * 4)));
}

/// A row of rmsnorm's values quantized in place as NVFP4 (interpret/Float4.h's quantizeNvfp4
/// with the global scale G): each element becomes its E2M1 code's value, scales[b] block b's
/// E4M3 scale's.
void quantizeRowNvfp4(double* row, int64_t h, double globalScale, double* scales, const Rounding&,
                      int64_t&) {
  const Nvfp4Row q = quantizeNvfp4(std::vector<double>(row, row + h), globalScale);
  for (int64_t k = 0; k < h; ++k)
    row[k] = nvfp4Element(q, k);
  for (size_t b = 0; b < q.scales.size(); ++b)
    scales[b] = fromE4M3(q.scales[b]);
}

/// The same with bounds. The device's block amax is of its own float values, each off by up to
/// its bound, so its scale argument G * amax / 6 is off by up to G times the block's largest bound
/// over 6, plus its three float roundings: where every argument in reach rounds to one E4M3 code
/// the scale is the reference's (bound 0); otherwise either neighbour may be the device's (the
/// bound spans them; counted). Each element is then x * G / SF under every scale in reach, off by
/// its own bound times the factor plus two float roundings: where every value in reach rounds to
/// the reference's code, bound 0; otherwise the bound spans the codes in reach (counted).
void quantizeRowNvfp4(Tracked* row, int64_t h, double globalScale, Tracked* scales,
                      const Rounding& rounding, int64_t& nearBoundary) {
  constexpr double kFloatUnit = 0x1p-23; // twice float's unit roundoff: one more rounding, safely
  std::vector<double> values(static_cast<size_t>(h));
  for (int64_t k = 0; k < h; ++k)
    values[size_t(k)] = row[k].value;
  const Nvfp4Row reference = quantizeNvfp4(values, globalScale);
  auto factorOf = [&](uint8_t scaleBits) {
    const double scale = fromE4M3(scaleBits);
    return scale != 0 ? globalScale / scale : 0.0;
  };
  for (int64_t begin = 0, b = 0; begin < h; begin += kNvfp4BlockSize, ++b) {
    const int64_t end = std::min(h, begin + kNvfp4BlockSize);
    double amax = 0, largestBound = 0;
    for (int64_t k = begin; k < end; ++k) {
      const double v = row[k].value, bound = boundOf(row[k], rounding);
      if (!std::isnan(v))
        amax = std::max(amax, std::fabs(v));
      if (std::isfinite(v))
        largestBound = std::max(largestBound, std::isnan(bound) ? kInfinity : bound);
    }
    const uint8_t scaleBits = reference.scales[size_t(b)];
    std::vector<uint8_t> inReach = {scaleBits};
    const double argument = globalScale * amax / kE2M1Max;
    if (std::isfinite(argument)) {
      const double spread =
          std::fabs(globalScale) * (largestBound + rounding.tiny) / kE2M1Max * (1 + kFloatUnit) +
          std::fabs(argument) * 2 * kFloatUnit;
      for (double reach : {argument - spread, argument + spread}) {
        const uint8_t bits = toE4M3(reach);
        if (std::find(inReach.begin(), inReach.end(), bits) == inReach.end())
          inReach.push_back(bits);
      }
    }
    const double scale = fromE4M3(scaleBits);
    double scaleBound = 0;
    for (uint8_t bits : inReach)
      scaleBound = std::max(scaleBound, std::fabs(fromE4M3(bits) - scale));
    nearBoundary += scaleBound > 0;
    scales[b] = Tracked{scale, std::fabs(scale), float(scaleBound), 1};
    for (int64_t k = begin; k < end; ++k) {
      const double q = nvfp4Element(reference, k);
      const double x = row[k].value, xBound = boundOf(row[k], rounding);
      double bound = 0;
      for (uint8_t bits : inReach) {
        const double factor = factorOf(bits);
        const double y = x * factor;
        if (!std::isfinite(y)) { // NaN and infinities: one code whatever the error
          bound = std::max(bound, std::fabs(fromE2M1(toE2M1(y)) - q));
          continue;
        }
        const double spread = ((std::isnan(xBound) ? kInfinity : xBound) + rounding.tiny) *
                                  std::fabs(factor) * (1 + kFloatUnit) +
                              std::fabs(y) * 2 * kFloatUnit;
        for (double reach : {y - spread, y + spread})
          bound = std::max(bound, std::fabs(fromE2M1(toE2M1(reach)) - q));
      }
      nearBoundary += bound > 0;
      row[k] = Tracked{q, std::fabs(q), float(bound), 1};
    }
  }
}

ir::BufferId auxBuffer(const ir::Program& program, int index) {
  for (size_t b = 0; b < program.buffers.size(); ++b)
    if (program.buffers[b].role == ir::BufferRole::Aux && program.buffers[b].auxIndex == index)
      return ir::BufferId(b);
  return ir::BufferId(-1);
}

/// The call as the executor's configuration: its buffers passed as one memory as alias pairs.
execute::Shape callShape(const ir::Program& program, const Call& call) {
  execute::Shape shape{
      call.nranks, call.root, execute::Affine::constant(call.count), call.rowLength, {}};
  auto alias = [&](ir::BufferId user, ir::BufferId owner, const std::string& what) {
    if (user < 0 || owner < 0)
      throw InterpretError(what + ": the program has no such buffer");
    shape.aliases.push_back({user, owner});
  };
  if (call.inPlace)
    alias(program.output(), program.input(), "in place");
  for (const auto& [written, read] : call.auxAliases)
    alias(auxBuffer(program, written), auxBuffer(program, read),
          "aux buffers " + std::to_string(written) + " and " + std::to_string(read));
  return shape;
}

/// Numbers: every value the walker computes is a plain one.
struct ConcreteArith {
  execute::Arith arith{false};
};

/// What the call leaves in the caller's memory, as elements of a domain.
template <typename Element> struct Memory {
  std::vector<std::vector<Element>> output;           // [rank]
  std::vector<std::vector<std::vector<Element>>> aux; // [rank][auxIndex]
};

/// The reference's domain of the executor: every element holds a float64 (Element double), or a
/// float64 and what its bound is made of (Element Tracked).
template <typename Element>
class Machine : private ConcreteArith,
                public execute::Walker<Machine<Element>, std::vector<Element>> {
  using Values = std::vector<Element>;
  /// One slot's elements as a caller's buffer or scratch holds them.
  using Slots = std::vector<Values>;
  /// What one rank's memory is: every buffer's slots. Aux buffers and the input are the caller's.
  using RankMemory = std::vector<Slots>;
  using Base = execute::Walker<Machine<Element>, std::vector<Element>>;
  friend Base;
  using Base::forEachOperand;
  using Base::memoryOf;
  using Base::place;
  using Base::program_;
  using Base::registers_;
  using Base::shape_;
  using Base::shapeOf;
  using Base::walk;

public:
  Machine(const ir::Program& program, const std::vector<ir::Step>& steps, const Call& call,
          const Rounding& rounding = {})
      : Base(program, steps, callShape(program, call), arith), call_(call), rounding_(rounding) {}

  Memory<Element> run() {
    allocate();
    walk();
    return collect();
  }

  /// Elements of one slot of buffer `id` for the call.
  int64_t elementsOf(ir::BufferId id) {
    const ir::Buffer& buffer = program_.buffer(id);
    const auto [slots, elems] = shapeOf(id);
    if (elems.v > (int64_t(1) << 32))
      throw InterpretError("buffer '" + buffer.name + "' has " + std::to_string(slots) +
                           " slots of " + std::to_string(elems.v) + " elements");
    return elems.v;
  }

private:
  /// A region of some rank's memory, resolved to its slot.
  struct Place {
    Values* slot = nullptr;
    int64_t offset = 0, length = 0;
  };

  // ------------------------------------------------------------------ the walker's hooks
  [[noreturn]] void fail(llvm::SMLoc, const std::string& message) { throw InterpretError(message); }
  void beginStep(const ir::Step&) {}
  void beginRank() {}
  void onStatement() {}
  void barrier(const ir::Barrier&) {} // steps already run in order on every rank
  int64_t slotCount(int owner, ir::BufferId buffer) const {
    return int64_t(memory_[size_t(owner)][size_t(storage_[size_t(buffer)])].size());
  }
  execute::Affine slotSize(int owner, ir::BufferId buffer, int64_t slot) const {
    return execute::Affine::constant(
        int64_t(memory_[size_t(owner)][size_t(storage_[size_t(buffer)])][size_t(slot)].size()));
  }

  // ------------------------------------------------------------------ memory
  void allocate() {
    if (int(call_.input.size()) != call_.nranks || int(call_.aux.size()) != call_.nranks)
      throw InterpretError("data for " + std::to_string(call_.input.size()) +
                           " ranks given; the call has " + std::to_string(call_.nranks));
    storage_ = memoryOf();
    for (const auto& [user, owner] : shape_.aliases) {
      const ir::Buffer& a = program_.buffer(user);
      const ir::Buffer& b = program_.buffer(owner);
      const auto [slotsA, elemsA] = shapeOf(user);
      const auto [slotsB, elemsB] = shapeOf(owner);
      if (slotsA != 1 || slotsB != 1 || elemsA.v != elemsB.v)
        throw InterpretError("'" + a.name + "' and '" + b.name +
                             "' are passed as one memory but differ in size");
    }
    memory_.assign(size_t(call_.nranks), RankMemory(program_.buffers.size()));
    for (int r = 0; r < call_.nranks; ++r)
      for (size_t b = 0; b < program_.buffers.size(); ++b) {
        if (size_t(storage_[b]) != b)
          continue; // another buffer's memory
        const ir::Buffer& buffer = program_.buffers[b];
        const int64_t slots = shapeOf(ir::BufferId(b)).first;
        const int64_t elems = elementsOf(ir::BufferId(b));
        // What no statement writes reads as NaN: an output element a kind leaves unspecified.
        Slots& memory = memory_[size_t(r)][b];
        memory.assign(size_t(slots), Values(size_t(elems), unwrittenElement<Element>()));
        const std::vector<double>* given = nullptr;
        if (buffer.role == ir::BufferRole::Input)
          given = &call_.input[size_t(r)];
        else if (buffer.role == ir::BufferRole::Aux) {
          if (buffer.auxIndex < 0 || size_t(buffer.auxIndex) >= call_.aux[size_t(r)].size())
            throw InterpretError("no data for aux buffer '" + buffer.name + "'");
          given = &call_.aux[size_t(r)][size_t(buffer.auxIndex)];
        } else if (buffer.role == ir::BufferRole::Scratch)
          for (Values& slot : memory)
            std::fill(slot.begin(), slot.end(), zeroElement<Element>()); // lines start at zero
        if (given) {
          if (slots != 1 || int64_t(given->size()) != elems)
            throw InterpretError("buffer '" + buffer.name + "' holds " + std::to_string(elems) +
                                 " elements; " + std::to_string(given->size()) + " given");
          std::transform(given->begin(), given->end(), memory[0].begin(), givenElement<Element>);
        }
      }
  }

  Memory<Element> collect() const {
    Memory<Element> result;
    const ir::BufferId out = program_.output();
    for (int r = 0; r < call_.nranks; ++r) {
      result.output.push_back(out >= 0 ? memory_[size_t(r)][size_t(storage_[size_t(out)])][0]
                                       : Values());
      std::vector<Values> aux;
      for (size_t b = 0; b < program_.buffers.size(); ++b) {
        const ir::Buffer& buffer = program_.buffers[b];
        if (buffer.role != ir::BufferRole::Aux)
          continue;
        if (aux.size() <= size_t(buffer.auxIndex))
          aux.resize(size_t(buffer.auxIndex) + 1);
        aux[size_t(buffer.auxIndex)] = memory_[size_t(r)][size_t(storage_[b])][0];
      }
      result.aux.push_back(std::move(aux));
    }
    return result;
  }

  Place resolve(const ir::Region& region, const execute::Env& env) {
    const execute::Place p = place(region, env);
    Slots& slots = memory_[size_t(p.owner)][size_t(storage_[size_t(p.buffer)])];
    return Place{&slots[size_t(p.slot)], p.offset.v, p.length.v};
  }

  // ------------------------------------------------------------------ statements
  // Operands are read in place (a view into memory or a register), and results are built in
  // buffers kept across statements: a large call reuses its pages instead of faulting new ones in
  // for every statement.

  /// The first `length` elements an operand reads (with its set variable bound as given). A line
  /// taken (TakeLine) is copied into `taken` first, since taking it zeroes it.
  const Element* read(const ir::Operand& operand, int64_t length, const execute::Env& env,
                      Values& taken) {
    if (operand.load == ir::LoadKind::Register) {
      auto it = registers_.find(operand.reg);
      if (it == registers_.end() || int64_t(it->second.size()) < length)
        throw InterpretError("register '" + operand.reg + "' read before it holds " +
                             std::to_string(length) + " elements");
      return it->second.data();
    }
    Place place = resolve(operand.region, env);
    if (place.length < length)
      throw InterpretError("'" + operand.region.text + "' has " + std::to_string(place.length) +
                           " elements; " + std::to_string(length) + " are read");
    Element* first = place.slot->data() + place.offset;
    if (operand.load != ir::LoadKind::TakeLine)
      return first;
    taken.assign(first, first + length);
    std::fill(first, first + length, zeroElement<Element>()); // zeroed for the next call
    return taken.data();
  }

  /// Writes (or adds) `length` elements from `values`, which may lie in memory the target
  /// overlaps: then they are copied first, so that every element reads its value from before.
  void write(const ir::Region& target, const Element* values, int64_t length, ir::StoreKind store,
             bool accumulate, const execute::Env& env) {
    Place place = resolve(target, env);
    if (place.length < length)
      throw InterpretError("'" + target.text + "' holds " + std::to_string(place.length) +
                           " elements; " + std::to_string(length) + " are written");
    accumulate |= store == ir::StoreKind::LineAdd;
    Element* out = place.slot->data() + place.offset;
    if (values < out + length && out < values + length) {
      overlap_.assign(values, values + length);
      values = overlap_.data();
    }
    parallelFor(length, [&](int64_t begin, int64_t end) {
      if (accumulate)
        for (int64_t i = begin; i < end; ++i)
          out[i] = add(out[i], values[i]);
      else
        std::copy(values + begin, values + end, out + begin);
    });
  }

  int64_t lengthOf(const ir::Operand& operand, const execute::Env& env) {
    if (operand.load == ir::LoadKind::Register) {
      auto it = registers_.find(operand.reg);
      return it == registers_.end() ? 0 : int64_t(it->second.size());
    }
    return resolve(operand.region, env).length;
  }

  void put(const ir::Put& s, const execute::Env& env) {
    const int64_t length = lengthOf(s.source, env);
    write(s.target, read(s.source, length, env, taken_), length, s.store, false, env);
  }

  void atomicAdd(const ir::AtomicAdd& s, const execute::Env& env) {
    const int64_t length = lengthOf(s.source, env);
    write(s.target, read(s.source, length, env, taken_), length, ir::StoreKind::Plain, true, env);
  }

  void let(const ir::Let& s, const execute::Env& env) {
    const int64_t length = lengthOf(s.value, env);
    const Element* values = read(s.value, length, env, taken_);
    registers_[s.reg] = Values(values, values + length);
  }

  void assign(const ir::Assign& s, execute::Env& env) {
    const int64_t length = resolve(s.target, env).length;
    // Operands taken as lines need buffers of their own; a plain read is a view.
    std::vector<Values> taken;
    std::vector<std::pair<const Element*, bool>> operands; // (values, addend)
    forEachOperand(s, env, [&](const ir::Operand& operand, bool addend) {
      taken.emplace_back();
      operands.push_back({read(operand, length, env, taken.back()), addend});
    });
    if (operands.empty() || operands[0].second)
      throw InterpretError("an assignment to '" + s.target.text + "' without operands");
    Values& result = result_;
    result.resize(size_t(length));
    parallelFor(length, [&](int64_t begin, int64_t end) {
      std::copy(operands[0].first + begin, operands[0].first + end, result.begin() + begin);
      for (size_t k = 1; k < operands.size(); ++k) {
        const auto& [values, addend] = operands[k];
        if (addend)
          for (int64_t i = begin; i < end; ++i)
            result[size_t(i)] = add(result[size_t(i)], values[i]);
        else if (s.reduce)
          for (int64_t i = begin; i < end; ++i)
            result[size_t(i)] = combine(call_.op, result[size_t(i)], values[i]);
      }
    });
    if (!s.keep.empty())
      registers_[s.keep] = result;
    write(s.target, result.data(), length, s.store, false, env);
  }

  /// A row statement: its op's float64 meaning over each row of the target.
  void row(const ir::RowStmt& s, const execute::Env& env) {
    const int64_t length = resolve(s.target, env).length;
    const int64_t h = call_.rowLength;
    if (h <= 0 || length % h != 0)
      throw InterpretError("'" + std::string(ir::rowOpInfo(s.op).displayName) + "' over " +
                           std::to_string(length) + " elements with rows of " + std::to_string(h));
    Values takenRows, takenParam;
    const Element* rows = read(s.rows, length, env, takenRows);
    Values& result = result_;
    result.resize(size_t(length));
    switch (s.op) {
    case ir::RowOp::RmsNorm: {
      const Element* weight = read(s.params.at(0), h, env, takenParam);
      for (int64_t row = 0; row < length / h; ++row)
        normalizeRow(rows + row * h, weight, &result[size_t(row * h)], h, call_.eps, rounding_);
      break;
    }
    case ir::RowOp::RmsNormFp8: {
      bool asWritten = false;
      rows = rowsAsWritten(s.rows, length, env, takenRows, rows, asWritten);
      const Element* weight = read(s.params.at(0), h, env, takenParam);
      Values takenScale;
      const double scale = valueOf(*read(s.params.at(1), 1, env, takenScale));
      // The norm in float, never rounded to T before its quantization.
      const Rounding inFloat = normInFloat(asWritten);
      for (int64_t row = 0; row < length / h; ++row) {
        Element* out = &result[size_t(row * h)];
        normalizeRow(rows + row * h, weight, out, h, call_.eps, inFloat);
        quantizeRow(out, h, scale, inFloat, nearBoundary_);
      }
      break;
    }
    case ir::RowOp::RmsNormFp8PerToken: {
      bool asWritten = false;
      rows = rowsAsWritten(s.rows, length, env, takenRows, rows, asWritten);
      const Element* weight = read(s.params.at(0), h, env, takenParam);
      const Rounding inFloat = normInFloat(asWritten);
      std::vector<Element> scales(size_t(length / h));
      for (int64_t row = 0; row < length / h; ++row) {
        Element* out = &result[size_t(row * h)];
        normalizeRow(rows + row * h, weight, out, h, call_.eps, inFloat);
        quantizeRowPerToken(out, h, scales[size_t(row)], inFloat, nearBoundary_);
      }
      // The second output, element t from row t (the statement's only access of it).
      write(s.params.at(1).region, scales.data(), length / h, ir::StoreKind::Plain, false, env);
      break;
    }
    case ir::RowOp::RmsNormNvfp4:
    case ir::RowOp::RmsNormNvfp4Swizzled: {
      bool asWritten = false;
      rows = rowsAsWritten(s.rows, length, env, takenRows, rows, asWritten);
      const Element* weight = read(s.params.at(0), h, env, takenParam);
      Values takenGlobal;
      const double globalScale = valueOf(*read(s.params.at(2), 1, env, takenGlobal));
      const Rounding inFloat = normInFloat(asWritten);
      const int64_t blocks = (h + kNvfp4BlockSize - 1) / kNvfp4BlockSize;
      std::vector<Element> scales(size_t(length / h * blocks));
      for (int64_t row = 0; row < length / h; ++row) {
        Element* out = &result[size_t(row * h)];
        normalizeRow(rows + row * h, weight, out, h, call_.eps, inFloat);
        quantizeRowNvfp4(out, h, globalScale, &scales[size_t(row * blocks)], inFloat,
                         nearBoundary_);
      }
      // The second output, row t's blocks from row t (the statement's only access of it).
      writeBlockScales(s.params.at(1).region, scales, length / h, blocks,
                       s.op == ir::RowOp::RmsNormNvfp4Swizzled, env);
      break;
    }
    }
    write(s.target, result.data(), length, s.store, false, env);
  }

  /// NVFP4's block scales (`rowCount` rows of `blocks`) into `target`: linear, row t's block b at
  /// t * blocks + b; or swizzled (interpret/Float4.h's nvfp4SwizzledOffset), each row's padding
  /// blocks up to a multiple of 4 written as zero scales, the padding rows left as they are.
  void writeBlockScales(const ir::Region& target, const std::vector<Element>& scales,
                        int64_t rowCount, int64_t blocks, bool swizzled, const execute::Env& env) {
    if (!swizzled) {
      write(target, scales.data(), rowCount * blocks, ir::StoreKind::Plain, false, env);
      return;
    }
    Place place = resolve(target, env);
    const int64_t padded = (blocks + 3) / 4 * 4;
    if (uint64_t(place.length) < nvfp4SwizzledBytes(uint64_t(rowCount), uint64_t(blocks)))
      throw InterpretError(
          "'" + target.text + "' holds " + std::to_string(place.length) +
          " elements; the swizzled scales of " + std::to_string(rowCount) + " rows need " +
          std::to_string(nvfp4SwizzledBytes(uint64_t(rowCount), uint64_t(blocks))));
    Element* out = place.slot->data() + place.offset;
    for (int64_t t = 0; t < rowCount; ++t)
      for (int64_t b = 0; b < padded; ++b)
        out[nvfp4SwizzledOffset(uint64_t(t), uint64_t(b), uint64_t(blocks))] =
            b < blocks ? scales[size_t(t * blocks + b)] : zeroElement<Element>();
  }

  /// The rows a quantizing statement normalizes: the kernel's own values of the aux buffer it
  /// reads where the call gives them (Call::rowsAsWritten), exact (asWritten); else `interpreted`.
  const Element* rowsAsWritten(const ir::Operand& operand, int64_t length, const execute::Env& env,
                               Values& taken, const Element* interpreted, bool& asWritten) {
    asWritten = false;
    if (operand.load == ir::LoadKind::Register)
      return interpreted;
    const execute::Place p = place(operand.region, env);
    const ir::Buffer& buffer = program_.buffer(p.buffer);
    if (buffer.role != ir::BufferRole::Aux || size_t(p.owner) >= call_.rowsAsWritten.size())
      return interpreted;
    const auto& perBuffer = call_.rowsAsWritten[size_t(p.owner)];
    if (size_t(buffer.auxIndex) >= perBuffer.size() || perBuffer[size_t(buffer.auxIndex)].empty())
      return interpreted;
    const std::vector<double>& written = perBuffer[size_t(buffer.auxIndex)];
    if (p.slot != 0 || p.offset.v + length > int64_t(written.size()))
      throw InterpretError("'" + operand.region.text + "': the kernel's values of '" + buffer.name +
                           "' hold " + std::to_string(written.size()) + " elements; " +
                           std::to_string(length) + " are read");
    taken.resize(size_t(length));
    std::transform(written.begin() + p.offset.v, written.begin() + p.offset.v + length,
                   taken.begin(), givenElement<Element>);
    asWritten = true;
    return taken.data();
  }

  /// The rounding of a quantizing statement's norm: in float, never rounded to T before its
  /// quantization; from rows as the kernel wrote them (exact, no sum in T) only float steps
  /// remain.
  Rounding normInFloat(bool rowsAsWritten) const {
    Rounding inFloat = rounding_;
    inFloat.normUnit = rounding_.floatNormUnit;
    if (rowsAsWritten)
      inFloat.tiny = rounding_.floatTiny;
    return inFloat;
  }

public:
  /// Quantized elements whose value lies within the device's error of a rounding boundary.
  int64_t nearBoundary_ = 0;

private:
  const Call& call_;
  const Rounding rounding_;
  Values taken_, overlap_, result_; // buffers reused across statements (see above)
  std::vector<RankMemory> memory_;
  std::vector<ir::BufferId> storage_; // storage_[b]: the buffer whose memory buffer b is
};

const std::vector<ir::Step> kNoSteps;

/// The values of a bounded domain's memory, or their bounds.
Result project(const Memory<Tracked>& memory, double (*of)(const Tracked&, const Rounding&),
               const Rounding& rounding) {
  auto values = [&](const std::vector<Tracked>& elements) {
    std::vector<double> out(elements.size());
    parallelFor(int64_t(elements.size()), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[size_t(i)] = of(elements[size_t(i)], rounding);
    });
    return out;
  };
  Result result;
  for (size_t r = 0; r < memory.output.size(); ++r) {
    result.output.push_back(values(memory.output[r]));
    std::vector<std::vector<double>> aux;
    for (const std::vector<Tracked>& buffer : memory.aux[r])
      aux.push_back(values(buffer));
    result.aux.push_back(std::move(aux));
  }
  return result;
}

} // namespace

int64_t inputElements(const ir::Program& program, const Call& call) {
  const ir::BufferId in = program.input();
  return in < 0 ? 0 : Machine<double>(program, kNoSteps, call).elementsOf(in);
}

std::vector<int64_t> auxElements(const ir::Program& program, const Call& call) {
  std::vector<int64_t> sizes;
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const ir::Buffer& buffer = program.buffers[b];
    if (buffer.role == ir::BufferRole::Aux) {
      if (sizes.size() <= size_t(buffer.auxIndex))
        sizes.resize(size_t(buffer.auxIndex) + 1);
      sizes[size_t(buffer.auxIndex)] =
          Machine<double>(program, kNoSteps, call).elementsOf(ir::BufferId(b));
    }
  }
  return sizes;
}

Result interpret(const ir::Program& program, const std::vector<ir::Step>& steps, const Call& call) {
  try {
    Memory<double> memory = Machine<double>(program, steps, call).run();
    return Result{std::move(memory.output), std::move(memory.aux)};
  } catch (const execute::AffineError& error) {
    throw InterpretError("a value overflows: " + error.why);
  }
}

BoundedResult interpretBounded(const ir::Program& program, const std::vector<ir::Step>& steps,
                               const Call& call, const Rounding& rounding) {
  try {
    Machine<Tracked> machine(program, steps, call, rounding);
    const Memory<Tracked> memory = machine.run();
    return BoundedResult{
        project(
            memory, [](const Tracked& e, const Rounding&) { return e.value; }, rounding),
        project(memory, boundOf, rounding), machine.nearBoundary_};
  } catch (const execute::AffineError& error) {
    throw InterpretError("a value overflows: " + error.why);
  }
}

} // namespace collc::interpret
