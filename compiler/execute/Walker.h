// The one executor of a program's data flow. A walker runs `steps` for one configuration (rank
// count, root, count n, row length): step after step, within a step rank after rank, statement
// after statement. It owns what every run of the IR shares: the environment and the evaluation of
// expressions, loops and their limit, conditions, where a region lies, the binding of a slot set's
// variable to each rank of the set, which buffers share memory, and the registers a thread holds.
// What an element holds is its value domain's: the proof's is the multiset of input and aux
// elements that reached it, with n affine (verify/Simulation.cpp); the reference's is a float64
// (interpret/Interpreter.cpp). A domain derives from Walker<Itself, ItsRegister> and implements the
// data statements (put, atomicAdd, assign, row, let), barrier, memory (slotCount, slotSize),
// and fail(loc, message), which does not return.
//
// Registers: a register is what one thread holds in the generated kernel, so it lives as long as
// that thread's variables do: for one element loop, or, in a row loop, for the whole row (its
// threads keep their vectors of the row); never past a rank's step. A read of a register outside
// that life is refused by the domain, as it finds no register.
#ifndef COLLC_COMPILER_EXECUTE_WALKER_H
#define COLLC_COMPILER_EXECUTE_WALKER_H

#include "compiler/execute/Affine.h"
#include "compiler/execute/PaddedRows.h"
#include "compiler/ir/IR.h"

#include <map>
#include <string>
#include <vector>

namespace collc::execute {

/// The values an expression's free names take (n affine; a number where Arith is concrete).
using Env = Bindings;

/// Loops one run runs at most before it calls a program unreasonable.
inline constexpr int64_t kMaxLoopTrips = 1024;
/// Slots one buffer may have: one per rank of the most ranks (COLLC_MAX_RANKS).
inline constexpr int64_t kMaxSlots = 72;

/// The configuration every domain runs.
struct Shape {
  int nranks = 2;
  int root = 0;
  Affine count; // n
  int64_t rowLength = 0;
  /// Buffers that are the same memory as another: (alias, original).
  std::vector<std::pair<ir::BufferId, ir::BufferId>> aliases;
};

/// A region resolved for one rank: whose memory, which slot, which elements.
struct Place {
  int owner = 0;
  ir::BufferId buffer = -1;
  int64_t slot = 0;
  Affine offset, length, bound;
};

/// [b]: the buffer whose memory buffer b is, with the buffers of `aliases` (alias, original)
/// sharing memory: itself, unless a pair joins it to another. Pairs may chain (a is b, b is c):
/// every buffer takes the memory of its pairs' root.
inline std::vector<ir::BufferId>
memoryRoots(const ir::Program& program,
            const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases) {
  std::vector<ir::BufferId> root(program.buffers.size());
  for (size_t b = 0; b < root.size(); ++b)
    root[b] = ir::BufferId(b);
  auto find = [&](ir::BufferId b) {
    while (root[size_t(b)] != b)
      b = root[size_t(b)];
    return b;
  };
  for (const auto& [alias, original] : aliases)
    root[size_t(find(alias))] = find(original);
  for (size_t b = 0; b < root.size(); ++b)
    root[b] = find(ir::BufferId(b));
  return root;
}

template <typename Domain, typename Register> class Walker {
protected:
  Walker(const ir::Program& program, const std::vector<ir::Step>& steps, const Shape& shape,
         Arith& arith)
      : program_(program), steps_(steps), shape_(shape), arith_(arith) {
    // With n symbolic a swizzled block-scale matrix is its rows alone (PaddedRows.h); a buffer
    // that shares memory with another keeps its declared size.
    if (!shape_.count.isConstant()) {
      unpadded_ = unpaddedSizes(program_);
      for (const auto& [alias, original] : shape_.aliases)
        for (ir::BufferId b : {alias, original})
          if (size_t(b) < unpadded_.size())
            unpadded_[size_t(b)] = nullptr;
    }
  }

  // ------------------------------------------------------------------ running
  /// Runs every step on every rank; the domain's beginStep(step) and beginRank() come first.
  void walk() {
    for (size_t s = 0; s < steps_.size(); ++s) {
      step_ = int(s);
      domain().beginStep(steps_[s]);
      for (int r = 0; r < shape_.nranks; ++r) {
        rank_ = r;
        registers_.clear();
        Env env = baseEnv(r);
        domain().beginRank();
        for (const ir::Stmt& stmt : steps_[s].body)
          execute(stmt, env);
      }
    }
    registers_.clear();
  }

  Env baseEnv(int rank) const {
    Env env;
    env.rank = rank;
    env.nranks = shape_.nranks;
    env.count = shape_.count;
    env.root = shape_.root;
    env.rowLength = shape_.rowLength;
    env.chunks = &chunks_;
    return env;
  }

  void execute(const ir::Stmt& stmt, Env& env) {
    domain().onStatement();
    switch (stmt->kind) {
    case ir::StmtKind::If: {
      const auto& s = stmt->as<ir::If>();
      if (evalInt(s.condition, env, s.loc) != 0)
        for (const ir::Stmt& inner : s.body)
          execute(inner, env);
      return;
    }
    case ir::StmtKind::For:
      loop(stmt->as<ir::For>(), env);
      return;
    case ir::StmtKind::Put:
      domain().put(stmt->as<ir::Put>(), env);
      return;
    case ir::StmtKind::AtomicAdd:
      domain().atomicAdd(stmt->as<ir::AtomicAdd>(), env);
      return;
    case ir::StmtKind::Assign:
      domain().assign(stmt->as<ir::Assign>(), env);
      return;
    case ir::StmtKind::Row:
      domain().row(stmt->as<ir::RowStmt>(), env);
      return;
    case ir::StmtKind::ElementLoop:
      // A thread per element: neither the vector width nor the unroll is read, which lets a
      // lowered program share the proof of one that differs only in them (loweredProofText).
      if (!inRowLoop_)
        registers_.clear();
      for (const ir::Stmt& inner : stmt->as<ir::ElementLoop>().body)
        execute(inner, env);
      if (!inRowLoop_)
        registers_.clear();
      return;
    case ir::StmtKind::RowLoop:
      inRowLoop_ = true;
      registers_.clear();
      for (const ir::Stmt& inner : stmt->as<ir::RowLoop>().body)
        execute(inner, env);
      registers_.clear();
      inRowLoop_ = false;
      return;
    case ir::StmtKind::Barrier:
      domain().barrier(stmt->as<ir::Barrier>());
      return;
    case ir::StmtKind::Let:
      domain().let(stmt->as<ir::Let>(), env);
      return;
    }
  }

  void loop(const ir::For& s, Env& env) {
    const int64_t begin = evalInt(s.begin, env, s.loc), end = evalInt(s.end, env, s.loc);
    if (std::string why = ir::intLoopProblem(s.begin, begin, s.end, end); !why.empty())
      domain().fail(s.loc, why);
    if (end - begin > kMaxLoopTrips)
      domain().fail(s.loc, "loop runs " + std::to_string(end - begin) + " times; at most " +
                               std::to_string(kMaxLoopTrips) + " are supported");
    for (int64_t i = begin; i < end; ++i) {
      env.vars.set(s.index, i);
      env.vars.set(s.var, evalInt(s.value, env, s.loc));
      for (const ir::Stmt& inner : s.body)
        execute(inner, env);
    }
    env.vars.erase(s.index);
    env.vars.erase(s.var);
  }

  /// Calls visit(operand, addend) for every value an assignment combines, in order: its operands,
  /// a slot set's once for each rank of the set (all ranks from 0; peers from the next rank on,
  /// round the ring) with the set's variable bound to it, then its addends.
  template <typename Visit> void forEachOperand(const ir::Assign& s, Env& env, Visit visit) {
    for (const ir::Operand& operand : s.operands) {
      if (!operand.set) {
        visit(operand, false);
        continue;
      }
      const bool peers = *operand.set == ir::LoopRange::Peers;
      for (int i = 0; i < shape_.nranks - (peers ? 1 : 0); ++i) {
        env.vars.set(operand.setVar, peers ? (rank_ + 1 + i) % shape_.nranks : i);
        visit(operand, false);
      }
      env.vars.erase(operand.setVar);
    }
    for (const ir::Operand& addend : s.addends)
      visit(addend, true);
  }

  // ------------------------------------------------------------------ evaluation
  Affine evalAffine(const ir::Expr& e, const Env& env, llvm::SMLoc loc) {
    std::string why;
    auto value = evaluate(e, env, arith_, &why);
    if (!value)
      domain().fail(loc, "cannot evaluate expression: " + why);
    return *value;
  }

  int64_t evalInt(const ir::Expr& e, const Env& env, llvm::SMLoc loc) {
    Affine value = evalAffine(e, env, loc);
    if (!value.isConstant())
      throw AffineError{"an index, bound or condition that depends on n"};
    return value.v;
  }

  // ------------------------------------------------------------------ memory
  /// `size`, a size of `buffer` (its elements, a region's length or bound), as this run takes
  /// it: a swizzled matrix's declared size is its rows alone where n is symbolic.
  const ir::Expr& sized(ir::BufferId buffer, const ir::Expr& size) const {
    if (buffer >= 0 && size_t(buffer) < unpadded_.size() && unpadded_[size_t(buffer)] &&
        ir::structurallyEqual(size, program_.buffer(buffer).slotElems))
      return unpadded_[size_t(buffer)];
    return size;
  }

  /// Slots and elements a slot of buffer `id` has in this configuration.
  std::pair<int64_t, Affine> shapeOf(ir::BufferId id) {
    const ir::Buffer& buffer = program_.buffer(id);
    const Env env = baseEnv(0);
    const int64_t slots = evalInt(buffer.slots, env, buffer.loc);
    const Affine elems = evalAffine(sized(id, buffer.slotElems), env, buffer.loc);
    if (slots < 1 || arith_.less(elems, Affine::constant(0)))
      domain().fail(buffer.loc, "buffer '" + buffer.name + "' has a negative or empty size");
    if (slots > kMaxSlots)
      domain().fail(buffer.loc, "buffer '" + buffer.name + "' is too large to verify (" +
                                    std::to_string(slots) + " slots)");
    return {slots, elems};
  }

  /// memoryOf()[b]: the buffer whose memory buffer b is (itself, unless the shape aliases it).
  std::vector<ir::BufferId> memoryOf() const { return memoryRoots(program_, shape_.aliases); }

  /// Where `region` lies for this rank: its owner a rank, its slot one of the buffer's, its
  /// elements within the slot (domain().slotCount and slotSize say what the memory holds).
  Place place(const ir::Region& region, const Env& env) {
    Place p;
    p.owner = region.owner ? int(evalInt(region.owner, env, region.loc)) : int(env.rank);
    if (region.owner && (p.owner < 0 || p.owner >= shape_.nranks))
      domain().fail(region.loc, "peer " + std::to_string(p.owner) + " of '" + region.text +
                                    "' is not a rank on rank " + std::to_string(env.rank));
    p.buffer = region.buffer;
    p.slot = evalInt(region.slot, env, region.loc);
    p.offset = evalAffine(region.offset, env, region.loc);
    p.length = evalAffine(sized(region.buffer, region.length), env, region.loc);
    p.bound = evalAffine(sized(region.buffer, region.bound), env, region.loc);
    const int64_t slots = domain().slotCount(p.owner, p.buffer);
    if (p.slot < 0 || p.slot >= slots)
      domain().fail(region.loc, "slot " + std::to_string(p.slot) + " of '" + region.text +
                                    "' is out of range: '" + program_.buffer(region).name +
                                    "' has " + std::to_string(slots) + " slots (on rank " +
                                    std::to_string(env.rank) + ")");
    const Affine size = domain().slotSize(p.owner, p.buffer, p.slot);
    const Affine end = Arith::add(p.offset, p.length);
    if (arith_.less(p.offset, Affine::constant(0)) || arith_.less(p.length, Affine::constant(0)) ||
        arith_.less(size, end))
      domain().fail(region.loc, "'" + region.text + "' on rank " + std::to_string(env.rank) +
                                    " covers elements [" + std::to_string(p.offset.v) + ", " +
                                    std::to_string(end.v) + ") of a slot of " +
                                    std::to_string(size.v));
    return p;
  }

  // ------------------------------------------------------------------ state
  const ir::Program& program_;
  const std::vector<ir::Step>& steps_;
  Shape shape_;
  Arith& arith_;
  int step_ = 0;
  int rank_ = 0;
  bool inRowLoop_ = false;
  /// The registers the running thread holds (see the file's comment for how long).
  std::map<std::string, Register> registers_;
  /// Per buffer, the size it has in place of its declared one (PaddedRows.h), or null.
  std::vector<ir::Expr> unpadded_;
  /// The run's chunks of lengths free of ranks (ChunkValues): every env of the run shares them.
  mutable ChunkValues chunks_;

private:
  Domain& domain() { return static_cast<Domain&>(*this); }
};

} // namespace collc::execute

#endif // COLLC_COMPILER_EXECUTE_WALKER_H
