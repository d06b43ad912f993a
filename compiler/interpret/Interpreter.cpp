#include "compiler/interpret/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace collc::interpret {
namespace {

/// Loops the interpreter runs before it calls a program unreasonable (the verifier's own limit).
constexpr int64_t kMaxLoopTrips = 1024;

using Values = std::vector<double>;

/// One slot's elements as a caller's buffer or scratch holds them.
using Slots = std::vector<Values>;

/// What one rank's memory is: every buffer's slots. Aux buffers and the input are the caller's.
using RankMemory = std::vector<Slots>;

ir::Env baseEnv(const Call& call, int rank) {
  ir::Env env;
  env.rank = rank;
  env.nranks = call.nranks;
  env.count = call.count;
  env.root = call.root;
  env.rowLength = call.rowLength;
  return env;
}

int64_t evaluateOrThrow(const ir::Expr& e, const ir::Env& env, const std::string& what) {
  std::string why;
  auto value = ir::evaluate(e, env, &why);
  if (!value)
    throw InterpretError("cannot evaluate " + what + ": " + why);
  return *value;
}

/// Elements of one slot of `buffer` and its slot count for a call.
std::pair<int64_t, int64_t> shapeOf(const ir::Buffer& buffer, const Call& call) {
  const ir::Env env = baseEnv(call, 0);
  const int64_t slots = evaluateOrThrow(buffer.slots, env, "the slots of '" + buffer.name + "'");
  const int64_t elems = evaluateOrThrow(buffer.slotElems, env, "the size of '" + buffer.name + "'");
  if (slots < 1 || elems < 0 || elems > (int64_t(1) << 32))
    throw InterpretError("buffer '" + buffer.name + "' has " + std::to_string(slots) +
                         " slots of " + std::to_string(elems) + " elements");
  return {slots, elems};
}

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

class Machine {
public:
  Machine(const ir::Program& program, const std::vector<ir::Step>& steps, const Call& call)
      : program_(program), steps_(steps), call_(call) {}

  Result run() {
    allocate();
    for (const ir::Step& step : steps_)
      for (int r = 0; r < call_.nranks; ++r) {
        rank_ = r;
        registers_.clear();
        ir::Env env = baseEnv(call_, r);
        for (const ir::Stmt& stmt : step.body)
          execute(stmt, env);
      }
    return collect();
  }

private:
  /// A region of some rank's memory, resolved to its slot.
  struct Place {
    Values* slot = nullptr;
    int64_t offset = 0, length = 0;
  };

  void allocate() {
    if (int(call_.input.size()) != call_.nranks || int(call_.aux.size()) != call_.nranks)
      throw InterpretError("data for " + std::to_string(call_.input.size()) +
                           " ranks given; the "
                           "call has " +
                           std::to_string(call_.nranks));
    shareMemory();
    memory_.assign(size_t(call_.nranks), RankMemory(program_.buffers.size()));
    for (int r = 0; r < call_.nranks; ++r)
      for (size_t b = 0; b < program_.buffers.size(); ++b) {
        if (storage_[b] != b)
          continue; // another buffer's memory
        const ir::Buffer& buffer = program_.buffers[b];
        const auto [slots, elems] = shapeOf(buffer, call_);
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

  /// storage_[b]: the buffer whose memory buffer b is (itself unless the call aliases it).
  void shareMemory() {
    storage_.resize(program_.buffers.size());
    for (size_t b = 0; b < storage_.size(); ++b)
      storage_[b] = b;
    auto alias = [&](ir::BufferId user, ir::BufferId owner, const std::string& what) {
      if (user < 0 || owner < 0)
        throw InterpretError(what + ": the program has no such buffer");
      const ir::Buffer& a = program_.buffer(user);
      const ir::Buffer& b = program_.buffer(owner);
      if (shapeOf(a, call_) != shapeOf(b, call_) || shapeOf(b, call_).first != 1)
        throw InterpretError(what + ": '" + a.name + "' and '" + b.name + "' differ in size");
      storage_[size_t(user)] = storage_[size_t(owner)];
    };
    if (call_.inPlace)
      alias(program_.output(), program_.input(), "in place");
    auto auxBuffer = [&](int index) {
      for (size_t b = 0; b < program_.buffers.size(); ++b)
        if (program_.buffers[b].role == ir::BufferRole::Aux &&
            program_.buffers[b].auxIndex == index)
          return ir::BufferId(b);
      return ir::BufferId(-1);
    };
    for (const auto& [written, read] : call_.auxAliases)
      alias(auxBuffer(written), auxBuffer(read),
            "aux buffers " + std::to_string(written) + " and " + std::to_string(read));
  }

  Result collect() const {
    Result result;
    const ir::BufferId out = program_.output();
    for (int r = 0; r < call_.nranks; ++r) {
      result.output.push_back(out >= 0 ? memory_[size_t(r)][storage_[size_t(out)]][0] : Values());
      std::vector<Values> aux;
      for (size_t b = 0; b < program_.buffers.size(); ++b) {
        const ir::Buffer& buffer = program_.buffers[b];
        if (buffer.role != ir::BufferRole::Aux)
          continue;
        if (aux.size() <= size_t(buffer.auxIndex))
          aux.resize(size_t(buffer.auxIndex) + 1);
        aux[size_t(buffer.auxIndex)] = memory_[size_t(r)][storage_[b]][0];
      }
      result.aux.push_back(std::move(aux));
    }
    return result;
  }

  Place resolve(const ir::Region& region, const ir::Env& env) {
    const std::string what = "'" + region.text + "'";
    const int64_t owner =
        region.owner ? evaluateOrThrow(region.owner, env, "the owner of " + what) : rank_;
    if (owner < 0 || owner >= call_.nranks)
      throw InterpretError(what + " on rank " + std::to_string(rank_) + " names rank " +
                           std::to_string(owner));
    Slots& slots = memory_[size_t(owner)][storage_[size_t(region.buffer)]];
    const int64_t slot = evaluateOrThrow(region.slot, env, "the slot of " + what);
    if (slot < 0 || slot >= int64_t(slots.size()))
      throw InterpretError(what + " on rank " + std::to_string(rank_) + ": slot " +
                           std::to_string(slot) + " of " + std::to_string(slots.size()));
    Place place;
    place.slot = &slots[size_t(slot)];
    place.offset = evaluateOrThrow(region.offset, env, "the offset of " + what);
    place.length = evaluateOrThrow(region.length, env, "the length of " + what);
    if (place.offset < 0 || place.length < 0 ||
        place.offset + place.length > int64_t(place.slot->size()))
      throw InterpretError(what + " on rank " + std::to_string(rank_) + " covers [" +
                           std::to_string(place.offset) + ", " +
                           std::to_string(place.offset + place.length) + ") of a slot of " +
                           std::to_string(place.slot->size()));
    return place;
  }

  /// The first `length` elements an operand reads (with its set variable bound as given).
  Values read(const ir::Operand& operand, int64_t length, const ir::Env& env) {
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
             const ir::Env& env) {
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

  int64_t lengthOf(const ir::Operand& operand, const ir::Env& env) {
    if (operand.load == ir::LoadKind::Register) {
      auto it = registers_.find(operand.reg);
      return it == registers_.end() ? 0 : int64_t(it->second.size());
    }
    return resolve(operand.region, env).length;
  }

  void execute(const ir::Stmt& stmt, ir::Env& env) {
    switch (stmt->kind) {
    case ir::StmtKind::For: {
      const auto& s = stmt->as<ir::For>();
      const int64_t begin = evaluateOrThrow(s.begin, env, "a loop's start");
      const int64_t end = evaluateOrThrow(s.end, env, "a loop's end");
      if (end - begin > kMaxLoopTrips)
        throw InterpretError("a loop of " + std::to_string(end - begin) + " trips");
      for (int64_t i = begin; i < end; ++i) {
        env.vars[s.index] = i;
        env.vars[s.var] = evaluateOrThrow(s.value, env, "loop variable '" + s.var + "'");
        for (const ir::Stmt& inner : s.body)
          execute(inner, env);
      }
      env.vars.erase(s.index);
      env.vars.erase(s.var);
      return;
    }
    case ir::StmtKind::If: {
      const auto& s = stmt->as<ir::If>();
      if (evaluateOrThrow(s.condition, env, "a condition") != 0)
        for (const ir::Stmt& inner : s.body)
          execute(inner, env);
      return;
    }
    case ir::StmtKind::Put: {
      const auto& s = stmt->as<ir::Put>();
      write(s.target, read(s.source, lengthOf(s.source, env), env), s.store, false, env);
      return;
    }
    case ir::StmtKind::AtomicAdd: {
      const auto& s = stmt->as<ir::AtomicAdd>();
      write(s.target, read(s.source, lengthOf(s.source, env), env), ir::StoreKind::Plain, true,
            env);
      return;
    }
    case ir::StmtKind::Assign:
      assign(stmt->as<ir::Assign>(), env);
      return;
    case ir::StmtKind::RowNorm:
      rowNorm(stmt->as<ir::RowNorm>(), env);
      return;
    case ir::StmtKind::ElementLoop:
      for (const ir::Stmt& inner : stmt->as<ir::ElementLoop>().body)
        execute(inner, env);
      return;
    case ir::StmtKind::RowLoop:
      for (const ir::Stmt& inner : stmt->as<ir::RowLoop>().body)
        execute(inner, env);
      return;
    case ir::StmtKind::Barrier:
      return; // steps already run in order on every rank
    case ir::StmtKind::Let: {
      const auto& s = stmt->as<ir::Let>();
      registers_[s.reg] = read(s.value, lengthOf(s.value, env), env);
      return;
    }
    }
  }

  void assign(const ir::Assign& s, ir::Env& env) {
    const int64_t length = resolve(s.target, env).length;
    std::vector<Values> operands;
    for (const ir::Operand& operand : s.operands) {
      if (!operand.set) {
        operands.push_back(read(operand, length, env));
        continue;
      }
      // The same ranks in the same order as the verifier binds them.
      for (int i = 0; i < call_.nranks; ++i) {
        if (*operand.set == ir::LoopRange::Peers && i == call_.nranks - 1)
          break;
        env.vars[operand.setVar] =
            *operand.set == ir::LoopRange::Peers ? (rank_ + 1 + i) % call_.nranks : i;
        operands.push_back(read(operand, length, env));
      }
      env.vars.erase(operand.setVar);
    }
    if (operands.empty())
      throw InterpretError("an assignment to '" + s.target.text + "' without operands");
    Values result = operands[0];
    if (s.reduce)
      for (size_t k = 1; k < operands.size(); ++k)
        for (int64_t i = 0; i < length; ++i)
          result[size_t(i)] = combine(call_.op, result[size_t(i)], operands[k][size_t(i)]);
    for (const ir::Operand& addend : s.addends) {
      const Values values = read(addend, length, env);
      for (int64_t i = 0; i < length; ++i)
        result[size_t(i)] += values[size_t(i)];
    }
    if (!s.keep.empty())
      registers_[s.keep] = result;
    write(s.target, result, s.store, false, env);
  }

  void rowNorm(const ir::RowNorm& s, const ir::Env& env) {
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

  const ir::Program& program_;
  const std::vector<ir::Step>& steps_;
  const Call& call_;
  std::vector<RankMemory> memory_;
  std::vector<size_t> storage_;
  std::map<std::string, Values> registers_;
  int rank_ = 0;
};

} // namespace

int64_t inputElements(const ir::Program& program, const Call& call) {
  const ir::BufferId in = program.input();
  return in < 0 ? 0 : shapeOf(program.buffer(in), call).second;
}

std::vector<int64_t> auxElements(const ir::Program& program, const Call& call) {
  std::vector<int64_t> sizes;
  for (const ir::Buffer& buffer : program.buffers)
    if (buffer.role == ir::BufferRole::Aux) {
      if (sizes.size() <= size_t(buffer.auxIndex))
        sizes.resize(size_t(buffer.auxIndex) + 1);
      sizes[size_t(buffer.auxIndex)] = shapeOf(buffer, call).second;
    }
  return sizes;
}

Result interpret(const ir::Program& program, const std::vector<ir::Step>& steps, const Call& call) {
  return Machine(program, steps, call).run();
}

} // namespace collc::interpret
