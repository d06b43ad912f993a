#include "compiler/interpret/Interpreter.h"

#include "compiler/execute/Walker.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace collc::interpret {
namespace {

using Values = std::vector<double>;

/// One slot's elements as a caller's buffer or scratch holds them.
using Slots = std::vector<Values>;

/// What one rank's memory is: every buffer's slots. Aux buffers and the input are the caller's.
using RankMemory = std::vector<Slots>;

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

double combine(ReduceOp op, double a, double b) {
  switch (op) {
  case ReduceOp::Sum:
    return a + b;
  case ReduceOp::Max:
    return std::max(a, b);
  case ReduceOp::Min:
    return std::min(a, b);
  }
  return a + b;
}

/// The reference's domain of the executor: every element holds a float64.
class Machine : private ConcreteArith, public execute::Walker<Machine, Values> {
  friend class execute::Walker<Machine, Values>;

public:
  Machine(const ir::Program& program, const std::vector<ir::Step>& steps, const Call& call)
      : Walker(program, steps, callShape(program, call), arith), call_(call) {}

  Result run() {
    allocate();
    walk();
    return collect();
  }

  /// Elements of one slot of `buffer` for the call.
  int64_t elementsOf(const ir::Buffer& buffer) {
    const auto [slots, elems] = shapeOf(buffer);
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
      const auto [slotsA, elemsA] = shapeOf(a);
      const auto [slotsB, elemsB] = shapeOf(b);
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
        const int64_t slots = shapeOf(buffer).first;
        const int64_t elems = elementsOf(buffer);
        // What no statement writes reads as NaN: an output element a kind leaves unspecified.
        Slots& memory = memory_[size_t(r)][b];
        memory.assign(size_t(slots),
                      Values(size_t(elems), std::numeric_limits<double>::quiet_NaN()));
        const Values* given = nullptr;
        if (buffer.role == ir::BufferRole::Input)
          given = &call_.input[size_t(r)];
        else if (buffer.role == ir::BufferRole::Aux) {
          if (buffer.auxIndex < 0 || size_t(buffer.auxIndex) >= call_.aux[size_t(r)].size())
            throw InterpretError("no data for aux buffer '" + buffer.name + "'");
          given = &call_.aux[size_t(r)][size_t(buffer.auxIndex)];
        } else if (buffer.role == ir::BufferRole::Scratch)
          for (Values& slot : memory)
            std::fill(slot.begin(), slot.end(), 0.0); // accumulation lines start at zero
        if (given) {
          if (slots != 1 || int64_t(given->size()) != elems)
            throw InterpretError("buffer '" + buffer.name + "' holds " + std::to_string(elems) +
                                 " elements; " + std::to_string(given->size()) + " given");
          memory[0] = *given;
        }
      }
  }

  Result collect() const {
    Result result;
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
  /// The first `length` elements an operand reads (with its set variable bound as given).
  Values read(const ir::Operand& operand, int64_t length, const execute::Env& env) {
    if (operand.load == ir::LoadKind::Register) {
      auto it = registers_.find(operand.reg);
      if (it == registers_.end() || int64_t(it->second.size()) < length)
        throw InterpretError("register '" + operand.reg + "' read before it holds " +
                             std::to_string(length) + " elements");
      return Values(it->second.begin(), it->second.begin() + length);
    }
    Place place = resolve(operand.region, env);
    if (place.length < length)
      throw InterpretError("'" + operand.region.text + "' has " + std::to_string(place.length) +
                           " elements; " + std::to_string(length) + " are read");
    auto first = place.slot->begin() + place.offset;
    Values values(first, first + length);
    if (operand.load == ir::LoadKind::TakeLine)
      std::fill(first, first + length, 0.0); // the taker zeroes the line for the next call
    return values;
  }

  void write(const ir::Region& target, const Values& values, ir::StoreKind store, bool accumulate,
             const execute::Env& env) {
    Place place = resolve(target, env);
    if (place.length < int64_t(values.size()))
      throw InterpretError("'" + target.text + "' holds " + std::to_string(place.length) +
                           " elements; " + std::to_string(values.size()) + " are written");
    accumulate |= store == ir::StoreKind::LineAdd;
    for (size_t i = 0; i < values.size(); ++i) {
      double& element = (*place.slot)[size_t(place.offset) + i];
      element = accumulate ? element + values[i] : values[i];
    }
  }

  int64_t lengthOf(const ir::Operand& operand, const execute::Env& env) {
    if (operand.load == ir::LoadKind::Register) {
      auto it = registers_.find(operand.reg);
      return it == registers_.end() ? 0 : int64_t(it->second.size());
    }
    return resolve(operand.region, env).length;
  }

  void put(const ir::Put& s, const execute::Env& env) {
    write(s.target, read(s.source, lengthOf(s.source, env), env), s.store, false, env);
  }

  void atomicAdd(const ir::AtomicAdd& s, const execute::Env& env) {
    write(s.target, read(s.source, lengthOf(s.source, env), env), ir::StoreKind::Plain, true, env);
  }

  void let(const ir::Let& s, const execute::Env& env) {
    registers_[s.reg] = read(s.value, lengthOf(s.value, env), env);
  }

  void assign(const ir::Assign& s, execute::Env& env) {
    const int64_t length = resolve(s.target, env).length;
    std::vector<Values> operands, addends;
    forEachOperand(s, env, [&](const ir::Operand& operand, bool addend) {
      (addend ? addends : operands).push_back(read(operand, length, env));
    });
    if (operands.empty())
      throw InterpretError("an assignment to '" + s.target.text + "' without operands");
    Values result = operands[0];
    if (s.reduce)
      for (size_t k = 1; k < operands.size(); ++k)
        for (int64_t i = 0; i < length; ++i)
          result[size_t(i)] = combine(call_.op, result[size_t(i)], operands[k][size_t(i)]);
    for (const Values& values : addends)
      for (int64_t i = 0; i < length; ++i)
        result[size_t(i)] += values[size_t(i)];
    if (!s.keep.empty())
      registers_[s.keep] = result;
    write(s.target, result, s.store, false, env);
  }

  void rowNorm(const ir::RowNorm& s, const execute::Env& env) {
    const int64_t length = resolve(s.target, env).length;
    const int64_t h = call_.rowLength;
    if (h <= 0 || length % h != 0)
      throw InterpretError("'rmsnorm' over " + std::to_string(length) + " elements with rows of " +
                           std::to_string(h));
    const Values rows = read(s.rows, length, env);
    const Values weight = read(s.weight, h, env);
    Values result(static_cast<size_t>(length));
    for (int64_t row = 0; row < length / h; ++row) {
      double squares = 0;
      for (int64_t k = 0; k < h; ++k)
        squares += rows[size_t(row * h + k)] * rows[size_t(row * h + k)];
      const double scale = 1.0 / std::sqrt(squares / double(h) + call_.eps);
      for (int64_t k = 0; k < h; ++k)
        result[size_t(row * h + k)] = rows[size_t(row * h + k)] * scale * weight[size_t(k)];
    }
    write(s.target, result, s.store, false, env);
  }

  const Call& call_;
  std::vector<RankMemory> memory_;
  std::vector<ir::BufferId> storage_; // storage_[b]: the buffer whose memory buffer b is
};

} // namespace

const std::vector<ir::Step> kNoSteps;

int64_t inputElements(const ir::Program& program, const Call& call) {
  const ir::BufferId in = program.input();
  return in < 0 ? 0 : Machine(program, kNoSteps, call).elementsOf(program.buffer(in));
}

std::vector<int64_t> auxElements(const ir::Program& program, const Call& call) {
  std::vector<int64_t> sizes;
  for (const ir::Buffer& buffer : program.buffers)
    if (buffer.role == ir::BufferRole::Aux) {
      if (sizes.size() <= size_t(buffer.auxIndex))
        sizes.resize(size_t(buffer.auxIndex) + 1);
      sizes[size_t(buffer.auxIndex)] = Machine(program, kNoSteps, call).elementsOf(buffer);
    }
  return sizes;
}

Result interpret(const ir::Program& program, const std::vector<ir::Step>& steps, const Call& call) {
  try {
    return Machine(program, steps, call).run();
  } catch (const execute::AffineError& error) {
    throw InterpretError("a value overflows: " + error.why);
  }
}

} // namespace collc::interpret
