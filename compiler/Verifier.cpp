#include "compiler/Verifier.h"

#include "abi/CollectiveShapes.h"
#include "compiler/ExpandSteps.h"
#include "compiler/Postcondition.h"
#include "compiler/RowEpilogue.h"

#include <algorithm>
#include <set>

namespace collc {
namespace {

constexpr int64_t kMaxCellsPerRank = 1 << 22;
constexpr int64_t kMaxLoopTrips = 1024;
/// Aux user buffers (a residual, a weight) hold the caller's data, which rides along with the
/// input's contributions: element i of aux buffer a on rank r is (kAuxTag * (a + 1) + r, i).
constexpr int kAuxTag = 1 << 16;

/// The contributions of the collective's input, without those of aux buffers.
std::vector<Contribution> inputPart(const std::vector<Contribution>& value) {
  std::vector<Contribution> part;
  for (const Contribution& c : value)
    if (c.first < kAuxTag)
      part.push_back(c);
  return part;
}

struct Cell {
  std::vector<Contribution> value; // sorted multiset
  bool written = false;
  bool atomic = false;
  int writerStep = -2; // -1: present before the collective starts (the input)
  int writerRank = -1;
  int64_t writerIndex = 0; // element-loop index of the write
  int64_t writerBound = 0; // element-loop bound of the write
  llvm::SMLoc writerLoc;
  int readStep = -2;
  int lastAccessStep = -2;
  int lastAccessRank = -1;
  int reads = 0; // reads in this call
  int64_t lastAccessIndex = 0;
  int64_t lastAccessBound = 0;
};

struct ResolvedRegion {
  int owner;
  int bufferIndex;
  int64_t slot, offset, length, bound;
};

/// Thrown (and caught in verify()) to stop at the first broken proof; the diagnostic is already
/// out.
struct ProofFailed {};

class Simulation {
public:
  /// `steps`: the program's steps unrolled for `nranks` (ExpandSteps.h); `root`: the root rank
  /// of a broadcast or reduce.
  Simulation(const ir::Program& program, const std::vector<ir::Step>& steps, Diagnostics& diags,
             int nranks, int64_t count, int root)
      : program_(program), steps_(steps), diags_(diags), nranks_(nranks), count_(count),
        root_(root) {}

  /// Folds this simulation's facts into `result`.
  void report(VerifyResult& result) const {
    result.indexAligned &= indexAligned_;
    result.localAligned &= localAligned_;
    result.remoteWriteOrdering |= remoteWriteOrdering_;
    result.usesAtomics |= usesAtomics_;
    result.remoteDataReadOnce &= remoteDataReadOnce_;
    for (const auto& [from, to] : dataEdges_)
      result.exchangesAreMutual &= dataEdges_.count({to, from}) != 0;
    result.remotelyWritten.insert(remotelyWritten_.begin(), remotelyWritten_.end());
    result.locallyWritten.insert(locallyWritten_.begin(), locallyWritten_.end());
  }

  /// The row length of this run (a spec with `rows`); 0 for a spec without rows.
  void setRowLength(int64_t rowLength) { rowLength_ = rowLength; }

  void run() {
    allocate();
    for (size_t s = 0; s < steps_.size(); ++s) {
      step_ = int(s);
      rowStep_ = hasRowStatement(steps_[s]);
      for (const auto& wait : steps_[s].waits)
        waited_.insert(wait.step);
      for (int r = 0; r < nranks_; ++r) {
        rank_ = r;
        ir::Env env;
        env.rank = r;
        env.nranks = nranks_;
        env.count = count_;
        env.root = root_;
        env.rowLength = rowLength_;
        for (const auto& stmt : steps_[s].body)
          execute(stmt, env);
      }
    }
    checkWaitsMatched();
    checkPostcondition();
    // Data a peer wrote and nobody read would greet a later call's reader as if it had arrived.
    for (int r = 0; r < nranks_; ++r)
      for (const auto& buffer : memory_[r])
        for (const auto& slot : buffer)
          for (const Cell& c : slot)
            if (c.writerStep >= 0 && c.writerRank != r && c.reads == 0)
              remoteDataReadOnce_ = false;
  }

private:
  std::string where() const {
    return " (nranks=" + std::to_string(nranks_) + ", n=" + std::to_string(count_) +
           (hasRoot(program_.kind) ? ", root=" + std::to_string(root_) : "") + ")";
  }

  [[noreturn]] void fail(llvm::SMLoc loc, const std::string& message) {
    diags_.error(loc, message + where());
    throw ProofFailed{};
  }

  int64_t eval(const ir::Expr& e, const ir::Env& env, llvm::SMLoc loc) {
    std::string why;
    auto value = ir::evaluate(e, env, &why);
    if (!value)
      fail(loc, "cannot evaluate expression: " + why);
    return *value;
  }

  void allocate() {
    ir::Env env;
    env.nranks = nranks_;
    env.count = count_;
    env.root = root_;
    env.rowLength = rowLength_;
    memory_.assign(nranks_, {});
    for (int r = 0; r < nranks_; ++r) {
      for (const auto& b : program_.buffers) {
        const ir::Buffer* buffer = &b;
        int64_t slots = eval(buffer->slots, env, buffer->loc);
        int64_t elems = eval(buffer->slotElems, env, buffer->loc);
        if (slots < 1 || elems < 0)
          fail(buffer->loc, "buffer '" + buffer->name + "' has a negative or empty size");
        if (slots > 64 || elems > kMaxCellsPerRank / slots)
          fail(buffer->loc, "buffer '" + buffer->name + "' is too large to verify (" +
                                std::to_string(slots) + " slots of " + std::to_string(elems) +
                                " elements)");
        std::vector<std::vector<Cell>> cells(slots, std::vector<Cell>(elems));
        if (buffer->role == ir::BufferRole::Input) {
          for (int64_t i = 0; i < elems; ++i) {
            Cell& cell = cells[0][i];
            cell.value = {{r, i}};
            cell.written = true;
            cell.writerStep = -1;
            cell.writerRank = r;
          }
        }
        if (buffer->role == ir::BufferRole::Aux) {
          for (int64_t i = 0; i < elems; ++i) {
            Cell& cell = cells[0][i];
            cell.value = {{kAuxTag * (buffer->auxIndex + 1) + r, i}};
            cell.written = true;
            cell.writerStep = -1;
            cell.writerRank = r;
          }
        }
        memory_[r].push_back(std::move(cells));
      }
    }
  }

  ResolvedRegion resolve(const ir::Region& region, const ir::Env& env) {
    ResolvedRegion r;
    r.owner = region.owner ? int(eval(region.owner, env, region.loc)) : env.rank;
    if (region.owner &&
        (eval(region.owner, env, region.loc) < 0 || eval(region.owner, env, region.loc) >= nranks_))
      fail(region.loc, "peer " + std::to_string(eval(region.owner, env, region.loc)) + " of '" +
                           region.text + "' is not a rank on rank " + std::to_string(env.rank));
    r.bufferIndex = region.buffer;
    r.slot = eval(region.slot, env, region.loc);
    r.offset = eval(region.offset, env, region.loc);
    r.length = eval(region.length, env, region.loc);
    r.bound = eval(region.bound, env, region.loc);
    const auto& slots = memory_[r.owner][r.bufferIndex];
    if (r.slot < 0 || r.slot >= int64_t(slots.size()))
      fail(region.loc, "slot " + std::to_string(r.slot) + " of '" + region.text +
                           "' is out of range: '" + program_.buffer(region).name + "' has " +
                           std::to_string(slots.size()) + " slots (on rank " +
                           std::to_string(env.rank) + ")");
    int64_t size = int64_t(slots[r.slot].size());
    if (r.offset < 0 || r.length < 0 || r.offset + r.length > size)
      fail(region.loc, "'" + region.text + "' on rank " + std::to_string(env.rank) +
                           " covers elements [" + std::to_string(r.offset) + ", " +
                           std::to_string(r.offset + r.length) + ") of a slot of " +
                           std::to_string(size));
    return r;
  }

  Cell& cell(const ResolvedRegion& r, int64_t j) {
    return memory_[r.owner][r.bufferIndex][r.slot][r.offset + j];
  }

  const std::string& stepName(int step) const { return steps_[step].name; }
  /// What a `wait` names: a repetition `ring[s=2]` of a repeated step is waited for as `ring`.
  std::string waitName(int step) const {
    const std::string& name = steps_[step].name;
    return name.substr(0, name.find('['));
  }

  bool waitedFor(int step) const { return waited_.count(step) != 0; }

  void markWaitUsed(int writerStep) {
    // The latest wait for writerStep up to now is the one that orders this access.
    for (int t = step_; t > writerStep; --t)
      for (const auto& wait : steps_[t].waits)
        if (wait.step == writerStep) {
          usedWaits_.insert({t, writerStep, rank_});
          return;
        }
  }

  /// Reads element j of a region on this rank; `index`/`bound` identify the reading thread.
  const std::vector<Contribution>& read(const ir::Region& region, const ResolvedRegion& r,
                                        int64_t j, int64_t index, int64_t bound) {
    Cell& c = cell(r, j);
    const std::string what = "'" + region.text + "' (element " + std::to_string(r.offset + j) +
                             ") on rank " + std::to_string(rank_);
    if (!c.written)
      fail(region.loc, "reads " + what + " before anything writes it");
    bool sameThread = c.writerIndex == index && c.writerBound == bound;
    if (c.writerStep >= 0) {
      if (c.writerRank != rank_) {
        if (c.writerStep == step_)
          fail(region.loc, "race: reads " + what + " while rank " + std::to_string(c.writerRank) +
                               " writes it in the same step; move the read to a later step "
                               "that waits for '" +
                               stepName(step_) + "'");
        if (!waitedFor(c.writerStep)) {
          diags_.error(region.loc, "reads " + what + ", which rank " +
                                       std::to_string(c.writerRank) + " wrote in step '" +
                                       stepName(c.writerStep) +
                                       "', without waiting for it; add "
                                       "'wait " +
                                       waitName(c.writerStep) + "' to this step" + where());
          diags_.note(c.writerLoc, "written here");
          throw ProofFailed{};
        }
        markWaitUsed(c.writerStep);
        indexAligned_ &= sameThread;
        dataEdges_.insert({c.writerRank, rank_});
        remoteDataReadOnce_ &= ++c.reads <= 1;
      } else if (!sameThread) {
        if (c.writerStep == step_)
          fail(region.loc,
               "reads " + what +
                   ", which another thread of this rank writes in "
                   "the same step (a race); split the step and wait for the first part");
        if (!waitedFor(c.writerStep)) {
          diags_.error(region.loc, "reads " + what + ", which this rank wrote in step '" +
                                       stepName(c.writerStep) +
                                       "' over a different element "
                                       "range, without waiting for it; add 'wait " +
                                       waitName(c.writerStep) + "'" + where());
          diags_.note(c.writerLoc, "written here");
          throw ProofFailed{};
        }
        markWaitUsed(c.writerStep);
        indexAligned_ = false;
        localAligned_ = false;
      }
    }
    c.readStep = step_;
    c.lastAccessStep = step_;
    c.lastAccessRank = rank_;
    c.lastAccessIndex = index;
    c.lastAccessBound = bound;
    return c.value;
  }

  /// What a write needs of its statement.
  struct Writer {
    llvm::SMLoc loc;
    const ir::Region& target;
    bool atomic;
  };

  void write(const Writer& stmt, const ResolvedRegion& r, int64_t j, int64_t index, int64_t bound,
             std::vector<Contribution> value) {
    Cell& c = cell(r, j);
    const ir::Region& region = stmt.target;
    bool atomic = stmt.atomic;
    const std::string what = "'" + region.text + "' (element " + std::to_string(r.offset + j) +
                             ") on rank " + std::to_string(r.owner);
    if (atomic && !c.written)
      fail(stmt.loc, "atomic_add into " + what + " before anything initializes it");
    if (c.writerStep == step_ && c.writerRank >= 0) {
      bool sameThread = c.writerRank == rank_ && c.writerIndex == index && c.writerBound == bound;
      if (!(atomic && c.atomic) && !sameThread) {
        diags_.error(stmt.loc, "race: " + what + " is written by rank " +
                                   std::to_string(c.writerRank) + " and by rank " +
                                   std::to_string(rank_) + " in step '" + stepName(step_) + "'" +
                                   where());
        diags_.note(c.writerLoc, "the other write");
        throw ProofFailed{};
      }
    }
    if (r.owner != rank_ && c.readStep == step_)
      fail(stmt.loc, "race: rank " + std::to_string(rank_) + " writes " + what +
                         " while that rank reads it in the same step");
    if (r.owner != rank_ && c.lastAccessStep >= 0 && c.lastAccessStep < step_ &&
        c.lastAccessRank != rank_) {
      bool ordered = false;
      for (int w : waited_)
        if (w >= c.lastAccessStep) {
          ordered = true;
          markWaitUsed(w);
          break;
        }
      if (!ordered)
        fail(stmt.loc, "rank " + std::to_string(rank_) + " overwrites " + what + ", which rank " +
                           std::to_string(c.lastAccessRank) + " used in step '" +
                           stepName(c.lastAccessStep) + "', without waiting for that step");
      remoteWriteOrdering_ = true;
      indexAligned_ &= c.lastAccessIndex == index && c.lastAccessBound == bound;
    }
    usesAtomics_ |= atomic;
    if (r.owner != rank_) {
      remotelyWritten_.insert(r.bufferIndex);
    } else if (program_.buffer(stmt.target).role == ir::BufferRole::Scratch) {
      locallyWritten_.insert(r.bufferIndex);
    }
    c.reads = 0;
    // An atomic add accumulates onto what the element holds; a plain write replaces it.
    if (atomic)
      c.value.insert(c.value.end(), value.begin(), value.end());
    else
      c.value = std::move(value);
    std::sort(c.value.begin(), c.value.end());
    c.written = true;
    c.atomic = atomic;
    c.writerStep = step_;
    c.writerRank = rank_;
    c.writerIndex = index;
    c.writerBound = bound;
    c.writerLoc = stmt.loc;
    c.lastAccessStep = step_;
    c.lastAccessRank = rank_;
    c.lastAccessIndex = index;
    c.lastAccessBound = bound;
  }

  void execute(const ir::Stmt& stmt, ir::Env& env) {
    switch (stmt->kind) {
    case ir::StmtKind::ElementLoop:
    case ir::StmtKind::RowLoop:
    case ir::StmtKind::Barrier:
    case ir::StmtKind::Let:
      internalError("the verifier runs on the spec's statements, before lowering");
    case ir::StmtKind::If: {
      const auto& s = stmt->as<ir::If>();
      if (eval(s.condition, env, s.loc) != 0)
        for (const auto& inner : s.body)
          execute(inner, env);
      return;
    }
    case ir::StmtKind::For: {
      const auto& s = stmt->as<ir::For>();
      int64_t begin = eval(s.begin, env, s.loc), end = eval(s.end, env, s.loc);
      if (end - begin > kMaxLoopTrips)
        fail(s.loc, "loop runs " + std::to_string(end - begin) + " times; at most " +
                        std::to_string(kMaxLoopTrips) + " are supported");
      for (int64_t i = begin; i < end; ++i) {
        env.vars[s.index] = i;
        env.vars[s.var] = eval(s.value, env, s.loc);
        for (const auto& inner : s.body)
          execute(inner, env);
      }
      env.vars.erase(s.index);
      env.vars.erase(s.var);
      return;
    }
    case ir::StmtKind::Put:
    case ir::StmtKind::AtomicAdd: {
      const bool atomic = stmt->kind == ir::StmtKind::AtomicAdd;
      const ir::Operand& source =
          atomic ? stmt->as<ir::AtomicAdd>().source : stmt->as<ir::Put>().source;
      const ir::Region& target =
          atomic ? stmt->as<ir::AtomicAdd>().target : stmt->as<ir::Put>().target;
      ResolvedRegion src = resolve(source.region, env);
      ResolvedRegion dst = resolve(target, env);
      if (dst.length < src.length)
        fail(stmt->loc, "destination '" + target.text + "' holds " + std::to_string(dst.length) +
                            " elements but the source '" + source.region.text + "' has " +
                            std::to_string(src.length));
      for (int64_t j = 0; j < src.length; ++j) {
        auto value = read(source.region, src, j, j, src.bound);
        write({stmt->loc, target, atomic}, dst, j, j, src.bound, value);
      }
      return;
    }
    case ir::StmtKind::Assign: {
      const auto& s = stmt->as<ir::Assign>();
      ResolvedRegion dst = resolve(s.target, env);
      // Expand operands: a slot set binds its variable to every rank of the set.
      std::vector<std::pair<const ir::Region*, ResolvedRegion>> inputs;
      auto addOperand = [&](const ir::Region& region) {
        ResolvedRegion resolved = resolve(region, env);
        if (resolved.length < dst.length)
          fail(region.loc, "operand '" + region.text + "' has " + std::to_string(resolved.length) +
                               " elements but the target '" + s.target.text + "' needs " +
                               std::to_string(dst.length));
        inputs.push_back({&region, resolved});
      };
      for (const auto& operand : s.operands) {
        if (!operand.set) {
          addOperand(operand.region);
          continue;
        }
        for (int i = 0; i < nranks_; ++i) {
          int q = *operand.set == ir::LoopRange::Peers ? (env.rank + 1 + i) % nranks_ : i;
          if (*operand.set == ir::LoopRange::Peers && i == nranks_ - 1)
            break;
          env.vars[operand.setVar] = q;
          addOperand(operand.region);
        }
        env.vars.erase(operand.setVar);
      }
      std::vector<std::pair<const ir::Region*, ResolvedRegion>> addends;
      for (const auto& addend : s.addends) {
        ResolvedRegion resolved = resolve(addend.region, env);
        if (resolved.length < dst.length)
          fail(addend.region.loc, "'" + addend.region.text + "' has " +
                                      std::to_string(resolved.length) +
                                      " elements but the target '" + s.target.text + "' needs " +
                                      std::to_string(dst.length));
        addends.push_back({&addend.region, resolved});
      }
      for (int64_t j = 0; j < dst.length; ++j) {
        std::vector<Contribution> value;
        for (auto& [region, resolved] : inputs) {
          const auto& part = read(*region, resolved, j, thread(j), threadBound(dst.bound));
          value.insert(value.end(), part.begin(), part.end());
        }
        for (auto& [region, resolved] : addends) {
          const auto& part = read(*region, resolved, j, thread(j), threadBound(dst.bound));
          value.insert(value.end(), part.begin(), part.end());
        }
        write({s.loc, s.target, false}, dst, j, thread(j), threadBound(dst.bound),
              std::move(value));
      }
      return;
    }
    case ir::StmtKind::RowNorm:
      executeRowNorm(stmt->as<ir::RowNorm>(), env);
      return;
    }
  }

  // In a step split by rows the block that owns row t computes all of it: "thread" t of the
  // pseudo-bound -rowLength (no element loop has a negative bound) stands for that block.
  int64_t thread(int64_t j) const { return rowStep_ ? j / rowLength_ : j; }
  int64_t threadBound(int64_t bound) const { return rowStep_ ? -rowLength_ : bound; }

  /// `out = rmsnorm(y, weight)`: out[t, k] depends on every element of row t of y and on
  /// weight[k]. The row must be complete when it is read: every element holds what the
  /// collective's output would (for an allreduce, in[j] of every rank exactly once), and was
  /// computed on this rank (a row-wise statement reads its rows twice, which data-arrival
  /// buffers do not allow). The value kept is y[t, k]'s own plus weight[k]'s, so that the
  /// postcondition can check the output element by element.
  void executeRowNorm(const ir::RowNorm& stmt, ir::Env& env) {
    const ir::Region& rowsRegion = stmt.rows.region;
    const ir::Region& weightRegion = stmt.weight.region;
    ResolvedRegion dst = resolve(stmt.target, env);
    ResolvedRegion rows = resolve(rowsRegion, env);
    ResolvedRegion weight = resolve(weightRegion, env);
    const int64_t h = rowLength_;
    if (rows.length < dst.length || weight.length < h)
      fail(stmt.loc, "'rmsnorm' needs rows of " + std::to_string(dst.length) +
                         " elements and a weight of " + std::to_string(h));
    for (int64_t t = 0; t < dst.length / h; ++t) {
      std::vector<std::vector<Contribution>> values;
      for (int64_t k = 0; k < h; ++k) {
        const int64_t j = t * h + k;
        const auto& value = read(rowsRegion, rows, j, t, -h);
        const Cell& c = cell(rows, j);
        const std::string what = "row " + std::to_string(t) + " of '" + rowsRegion.text +
                                 "' on rank " + std::to_string(rank_);
        if (c.writerRank != rank_)
          fail(rowsRegion.loc,
               "'rmsnorm' reads " + what + ", whose element " + std::to_string(j) + " rank " +
                   std::to_string(c.writerRank) +
                   " wrote; a row-wise statement reads rows this rank computed: reduce into a "
                   "local buffer first");
        auto expected = expectedOutput(program_.kind, rank_, root_, nranks_, count_, j);
        if (expected && inputPart(value) != *expected) {
          diags_.error(rowsRegion.loc,
                       "'rmsnorm' reads " + what + " before the row is complete: element " +
                           std::to_string(j) + " holds " + describe(inputPart(value)) +
                           "; every element of a row must be fully reduced before the row is "
                           "normalised" +
                           where());
          if (c.writerStep >= 0)
            diags_.note(c.writerLoc, "last written here");
          throw ProofFailed{};
        }
        values.push_back(value);
      }
      for (int64_t k = 0; k < h; ++k) {
        std::vector<Contribution> value = values[k];
        const auto& w = read(weightRegion, weight, k, t, -h);
        value.insert(value.end(), w.begin(), w.end());
        write({stmt.loc, stmt.target, false}, dst, t * h + k, t, -h, std::move(value));
      }
    }
  }

  std::string describe(const std::vector<Contribution>& value) const {
    if (value.empty())
      return "no input";
    std::string text;
    for (size_t k = 0; k < value.size(); ++k) {
      const int tag = value[k].first / kAuxTag;
      std::string buffer = program_.buffer(program_.input()).name;
      for (const auto& b : program_.buffers)
        if (tag > 0 && b.auxIndex == tag - 1)
          buffer = b.name;
      text += (k ? ", " : "") + buffer + "[" + std::to_string(value[k].second) + "] of rank " +
              std::to_string(value[k].first % kAuxTag);
    }
    return text;
  }

  /// A wait must order something: data the waited step wrote that some rank reads after the wait
  /// (or a write it protects). A rank whose share is empty for this n has nothing to wait for, so
  /// the rule is per configuration, not per rank; reads of data nobody wrote (which would poll
  /// forever) are caught as reads before writes.
  void checkWaitsMatched() {
    // One `wait` of a repeated step (or for one) stands for several waits of the unrolled steps:
    // it is matched when any of them orders something.
    std::vector<std::pair<const ir::Wait*, bool>> written; // by `wait` statement, in order
    for (const auto& step : steps_)
      for (const auto& wait : step.waits) {
        bool used = false;
        for (int r = 0; r < nranks_ && !used; ++r)
          used = usedWaits_.count({step.index, wait.step, r}) != 0;
        auto same = std::find_if(written.begin(), written.end(), [&](const auto& entry) {
          return entry.first->loc.getPointer() == wait.loc.getPointer();
        });
        if (same == written.end())
          written.push_back({&wait, used});
        else
          same->second |= used;
      }
    for (const auto& [wait, used] : written)
      if (!used)
        fail(wait->loc, "nothing that step '" + stepName(wait->step) +
                            "' writes is read after "
                            "this wait, so no signal matches it; wait for the step whose data this "
                            "step reads");
  }

  /// The output, and (for an allreduce) every aux buffer of n elements the spec writes: a fused
  /// epilogue's residual out must hold the allreduce's result as much as the output does.
  void checkPostcondition() {
    for (size_t id = 0; id < program_.buffers.size(); ++id) {
      const ir::Buffer& buffer = program_.buffers[id];
      if (buffer.role == ir::BufferRole::Output)
        checkOutput(ir::BufferId(id));
      if (buffer.role != ir::BufferRole::Aux || program_.kind != CollectiveKind::AllReduce)
        continue;
      const int index = int(id);
      bool written = false;
      for (int r = 0; r < nranks_; ++r)
        for (const Cell& c : memory_[r][index][0])
          written |= c.writerStep >= 0;
      if (written && int64_t(memory_[0][index][0].size()) == count_)
        checkOutput(ir::BufferId(id));
    }
  }

  /// Aux contributions in an output element come from the rank's own buffers, at most once each.
  bool auxIsLocal(const std::vector<Contribution>& value, int rank) const {
    std::set<int> seen;
    for (const Contribution& c : value)
      if (c.first >= kAuxTag && (c.first % kAuxTag != rank || !seen.insert(c.first).second))
        return false;
    return true;
  }

  void checkOutput(ir::BufferId outId) {
    const ir::Buffer* out = &program_.buffer(outId);
    const int outIndex = outId;
    for (int r = 0; r < nranks_; ++r) {
      const auto& cells = memory_[r][outIndex][0];
      for (int64_t i = 0; i < int64_t(cells.size()); ++i) {
        const Cell& c = cells[i];
        auto expected = expectedOutput(program_.kind, r, root_, nranks_, count_, i);
        if (!expected || (c.written && inputPart(c.value) == *expected && auxIsLocal(c.value, r)))
          continue;
        std::string message = "postcondition fails: " + out->name + "[" + std::to_string(i) +
                              "] on rank " + std::to_string(r);
        if (!c.written) {
          message += " is never written";
        } else {
          message += " holds " + describe(c.value);
          message += "; " + describeExpectedOutput(
                                program_.kind, program_.buffer(program_.input()).name, *expected);
        }
        diags_.error(program_.loc, message + where());
        if (c.written)
          diags_.note(c.writerLoc, "last written here");
        throw ProofFailed{};
      }
    }
  }

  const ir::Program& program_;
  const std::vector<ir::Step>& steps_;
  Diagnostics& diags_;
  int nranks_;
  int64_t count_;
  int root_;
  int64_t rowLength_ = 0;
  bool rowStep_ = false; // the step being run is split by rows
  int step_ = 0;
  int rank_ = 0;
  std::set<int> waited_;
  std::set<std::tuple<int, int, int>> usedWaits_; // (waiting step, waited step, rank)
  bool indexAligned_ = true;
  bool localAligned_ = true;
  bool remoteWriteOrdering_ = false;
  bool usesAtomics_ = false;
  bool remoteDataReadOnce_ = true;
  std::set<std::pair<int, int>> dataEdges_; // (writer rank, reader rank) of data read remotely
  std::set<int> remotelyWritten_, locallyWritten_;
  // memory_[rank][buffer][slot][element]
  std::vector<std::vector<std::vector<std::vector<Cell>>>> memory_;
};

} // namespace

VerifyResult verify(const ir::Program& program, Diagnostics& diags) {
  VerifyResult result;
  for (int nranks = program.minRanks; nranks <= program.maxRanks; ++nranks) {
    // Counts (and row lengths) chosen by shapesToVerify (RowEpilogue.h).
    auto steps = expandRepeatedSteps(program, nranks, diags);
    if (!steps)
      return result;
    // The root is a compile-time constant of the variant, so every root is proved: the data flow
    // of a spec may treat some roots differently (e.g. `root + 1` wraps at nranks).
    const int roots = hasRoot(program.kind) ? nranks : 1;
    for (auto [count, rowLength] : shapesToVerify(program, nranks))
      for (int root = 0; root < roots; ++root) {
        Simulation sim(program, *steps, diags, nranks, count, root);
        sim.setRowLength(rowLength);
        try {
          sim.run();
        } catch (const ProofFailed&) {
          return result;
        }
        sim.report(result);
      }
  }
  result.ok = true;
  return result;
}

} // namespace collc
