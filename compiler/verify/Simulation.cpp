#include "compiler/verify/Simulation.h"

#include "compiler/Postcondition.h"
#include "compiler/RowEpilogue.h"
#include "compiler/execute/Walker.h"
#include "compiler/interpret/Float4.h"
#include "compiler/ir/RowOps.h"
#include "compiler/ir/Visitor.h"
#include "compiler/verify/ChunkGroups.h"

#include <algorithm>
#include <llvm/ADT/SmallVector.h>
#include <map>
#include <memory>
#include <numeric>
#include <tuple>
#include <unordered_map>

namespace collc::proof {
namespace {

/// Contributions one element may hold: an output element holds at most nranks of the input and
/// one of each aux buffer, so an element past this is of no use to any collective, and the limit
/// keeps chained reductions (whose values multiply) from exhausting memory.
constexpr size_t kMaxContributions = 512;

/// One element of some rank's input (tag 0) or aux buffer (tag k: aux buffer k - 1) that reached
/// an element: its index there is the element's position plus `shift`. A weight's element is
/// `anyIndex`: which one it is matters to no rule (the printed index is the row position).
struct Contribution {
  int rank = 0;
  int tag = 0;
  Affine shift;
  bool anyIndex = false;
};

bool orderedBefore(const Contribution& a, const Contribution& b) {
  return std::tie(a.tag, a.rank, a.anyIndex, a.shift.u, a.shift.w, a.shift.v) <
         std::tie(b.tag, b.rank, b.anyIndex, b.shift.u, b.shift.w, b.shift.v);
}

/// Sorted by orderedBefore. Most elements hold one contribution (a peer's input on its way), kept
/// in place: copying a segment's cell then allocates nothing.
using Value = llvm::SmallVector<Contribution, 1>;

/// Which thread touches an element: the element's index within the statement's element range
/// (its position minus `origin`) in loops of `bound`; or, in a step split by rows, the block
/// that owns the element's row.
struct Thread {
  bool row = false;
  Affine origin, bound;
};

/// One access to an element in this call: by which rank and thread, in which step, where.
struct Access {
  int step = -2;
  int rank = -1;
  Thread thread;
  llvm::SMLoc loc;
  bool accumulates = false; // an atomic or line add: adds commute with one another
};

/// An element's recent accesses: most often one.
using Accesses = llvm::SmallVector<Access, 1>;

struct Cell {
  Value value;
  bool written = false;
  bool atomic = false;
  int writerStep = -2; // -1: present before the collective starts (the caller's data)
  /// The lowest and highest rank whose write or adds the value holds: whether a rank other than
  /// r wrote it does not depend on the order in which ranks' adds of one step are walked.
  int writerLow = -1, writerHigh = -1;
  Thread writer;
  llvm::SMLoc writerLoc;
  /// The writes since the last plain one (that write, then the adds onto it) and the reads since
  /// then (the latest of each rank and thread): whatever conflicts with them later must be
  /// ordered after each one, since threads and ranks run concurrently.
  Accesses recentWrites, recentReads;
  int remoteReads = 0; // reads of data another rank wrote, since that write

  bool writtenByOtherThan(int rank) const { return writerLow != rank || writerHigh != rank; }
  /// A rank other than `rank` whose write the value holds.
  int otherWriter(int rank) const { return writerLow != rank ? writerLow : writerHigh; }
  int writes = 0;      // writes in this call (the lowered program's units are written once)
  int adds = 0;        // accumulation-line adds in this call
  int takes = 0;       // takes of an accumulation line in this call (each zeroes the line)
};

/// Elements [start, next segment's start) that fare alike: their cell is Slot::cells[cell]. Kept
/// apart from the cells, segments are small to move when a split inserts one.
struct Segment {
  Affine start;
  uint32_t cell = 0;
};

struct Slot {
  Affine size;
  // Most slots keep one segment (a peer's inbox): inline, a slot is one allocation.
  llvm::SmallVector<Segment, 2> segments; // the first starts at 0
  llvm::SmallVector<Cell, 1> cells;       // each segment's own

  Cell& cellOf(size_t segment) { return cells[segments[segment].cell]; }
  const Cell& cellOf(size_t segment) const { return cells[segments[segment].cell]; }
};
using SlotPtr = std::shared_ptr<Slot>;

struct Resolved {
  int owner = 0;
  ir::BufferId buffer = -1;
  int64_t slotIndex = 0;
  Affine offset, length, bound;
  Slot* slot = nullptr;
};

/// Relative positions where a statement's pieces begin: a few, kept off the heap.
using Cuts = llvm::SmallVector<Affine, 8>;

/// Elements a register holds, by the element index of the statement that filled it.
struct Register {
  std::vector<std::pair<Affine, Value>> pieces; // [start, next start), last to `length`
  Affine length;
};

execute::Shape runShape(const RunConfig& config) {
  return execute::Shape{config.nranks, config.root, config.count, config.rowLength, config.aliases};
}

/// A region read by a statement: where, as which thread, and how.
struct Read {
  const ir::Operand* operand;
  Resolved where;
};

/// What a lowered run compares with of the spec's run of its configuration (Run::compareWith):
/// every output and aux buffer's first slot on every rank, each segment's start, whether it is
/// written, its value and the bytes its cell counts for (Run::bytesOf), which a split copies.
struct SpecSegment {
  Affine start;
  int64_t bytes = 0;
  uint32_t value = 0; // in SpecResult::values
  bool written = false;
};

struct SpecSlot {
  Affine size;
  std::vector<SpecSegment> segments;
};

struct SpecResult {
  /// Values, each once: an allreduce's elements all hold the same one.
  std::vector<Value> values;
  /// The slots; slotOf[buffer][rank] (-1: not kept) indexes them, one index for buffers that
  /// are one memory.
  std::vector<SpecSlot> slots;
  std::vector<std::vector<int>> slotOf;
  /// What the run recorded (Arith::fresh, Arith::adopt) and the work it did.
  int64_t threshold = 0, limit = INT64_MAX, residueLimit = INT64_MAX, work = 0;

  int64_t bytes() const {
    int64_t total = int64_t(sizeof(SpecResult));
    for (const Value& value : values)
      total += int64_t(sizeof(Value) + value.size() * sizeof(Contribution));
    for (const SpecSlot& slot : slots)
      total += int64_t(sizeof(SpecSlot) + slot.segments.size() * sizeof(SpecSegment));
    for (const auto& ranks : slotOf)
      total += int64_t(ranks.size() * sizeof(int));
    return total;
  }
};

/// The proof's domain of the executor: every element holds its contributions, n is affine, and
/// every access is checked against the rules of the spec or of the lowered program.
class Run : public execute::Walker<Run, Register> {
  friend class execute::Walker<Run, Register>;

public:
  Run(const ir::Program& program, const std::vector<ir::Step>& steps, const RunConfig& config,
      Arith& arith, Diagnostics* diags)
      : Walker(program, steps, runShape(config), arith), config_(config), diags_(diags) {}

  RunFacts run() {
    if (config_.chunkZeroOnly)
      projectOntoChunkZero();
    allocate();
    walk();
    if (config_.chunkZeroOnly && walked_ != rotation_->chunks.size())
      throw AffineError{"chunks"};
    checkPostcondition();
    // Data a peer wrote and nobody read would greet a later call's reader as if it had arrived.
    for (int r = 0; r < config_.nranks; ++r)
      for (const auto& slots : memory_[size_t(r)])
        for (const auto& slot : slots)
          for (size_t i = 0; slot && i < slot->segments.size(); ++i) {
            const Segment& segment = slot->segments[i];
            const Cell& c = slot->cellOf(i);
            if (c.writerStep >= 0 && c.writtenByOtherThan(r) && c.remoteReads == 0)
              facts_.remoteDataReadOnce = false;
            // A take zeroes its line for the next call of its copy; a line left holding adds
            // would hand them to that call's take.
            if (config_.lowered && c.adds > 0 && c.takes == 0)
              fail(c.writerLoc, "the accumulation line of element " + number(segment.start) +
                                    " on rank " + std::to_string(r) +
                                    " receives adds but is never taken in the call, so it is not "
                                    "zeroed for the next call that uses its scratch copy");
          }
    if (config_.chunkZeroOnly)
      completeByRotation();
    // Moved out: what the run does after it (compareWith) adds only to the work, which a move
    // leaves in place for the budget.
    return std::move(facts_);
  }

private:
  // ------------------------------------------------------------------ chunk 0 alone
  /// The chunks of the statements that move elements, where every chunk is chunk 0 renamed
  /// (verify/ChunkGroups.h says why the run of chunk 0 alone then decides); AffineError{"chunks"}
  /// where not, for the caller to run every chunk.
  void projectOntoChunkZero() {
    rotation_ = config_.rotation;
    if (!rotation_) {
      if (!whyChunksAreNotRotations(program_, steps_, config_.nranks, config_.aliases,
                                    &ownRotation_)
               .empty())
        throw AffineError{"chunks"};
      rotation_ = &ownRotation_;
    }
    // Chunk 0 of an n-element buffer (in the runs for large n): [0, chunk_size(n)).
    chunkZeroEnd_ =
        evalAffine(ir::ExprNode::chunkSize(ir::ExprNode::count()), baseEnv(0), program_.loc);
  }

  /// Whether the run of chunk 0 alone passes over the statement the walker is at, one that moves
  /// elements: its hook asks first, before it does anything. The walk gives statements in the
  /// order the check's walk did (neither depends on n).
  bool otherChunk() {
    if (!config_.chunkZeroOnly)
      return false;
    if (walked_ >= rotation_->chunks.size())
      throw AffineError{"chunks"};
    if (rotation_->chunks[walked_++] != 0)
      return true;
    ++chunkZeroWalked_;
    return false;
  }

  /// The facts every chunk's run finds: chunk k's statements are chunk 0's with rank x renamed
  /// (x + k) mod nranks, so a rank that reads another's data is chunk 0's renamed. The other
  /// facts do not name ranks: each chunk finds them alike (sumOnlyAt: noteSumOnly).
  void completeByRotation() {
    // Renaming keeps reader - writer (mod nranks): every writer reaches the readers at those
    // distances. Made in order, the set grows at its end.
    const int nranks = config_.nranks;
    std::vector<bool> distances(size_t(nranks), false);
    for (const auto& [writer, reader] : facts_.dataEdges)
      distances[size_t((reader - writer + nranks) % nranks)] = true;
    std::set<std::pair<int, int>> edges;
    for (int writer = 0; writer < nranks; ++writer)
      for (int reader = 0; reader < nranks; ++reader)
        if (distances[size_t((reader - writer + nranks) % nranks)])
          edges.emplace_hint(edges.end(), writer, reader);
    facts_.dataEdges = std::move(edges);
  }

  // ------------------------------------------------------------------ reporting
  std::string where() const {
    std::string text =
        " (nranks=" + std::to_string(config_.nranks) + ", n=" + std::to_string(config_.count.v) +
        (hasRoot(program_.kind) ? ", root=" + std::to_string(config_.root) : "") + ")";
    return text;
  }

  /// The text of a rule broken in the lowered program starts by naming the strategy.
  std::string lead() const {
    if (!config_.lowered)
      return "";
    return "sync strategy '" + std::string(name(program_.sync)) + "' cannot synchronize '" +
           program_.name + "': in the program it lowers to, ";
  }

  [[noreturn]] void fail(llvm::SMLoc loc, const std::string& message) {
    if (diags_)
      diags_->error(loc, lead() + message + where());
    throw RunFailed{};
  }

  [[noreturn]] void failWithNote(llvm::SMLoc loc, const std::string& message, llvm::SMLoc noteLoc,
                                 const std::string& note) {
    if (diags_) {
      diags_->error(loc, lead() + message + where());
      if (noteLoc.isValid())
        diags_->note(noteLoc, note);
    }
    throw RunFailed{};
  }

  /// A number for a message; only runs that report print them, and those have q fixed.
  static std::string number(const Affine& a) { return std::to_string(a.v); }

  void spend(int64_t work) {
    facts_.work += work;
    if (config_.budget > 0 && facts_.work > config_.budget)
      throw AffineError{"budget"};
  }

  /// Counts `bytes` more of live memory (negative: freed) against the run's limit.
  void account(int64_t bytes) {
    bytes_ += bytes;
    if (bytes_ > kMaxRunBytes)
      throw AffineError{"memory"};
  }
  static int64_t bytesOf(const Cell& c) {
    // A segment: its start and its cell.
    return int64_t(sizeof(Affine) + sizeof(Cell)) + int64_t(c.value.size() * sizeof(Contribution)) +
           int64_t((c.recentWrites.size() + c.recentReads.size()) * sizeof(Access));
  }

  /// `into` + `more` (both sorted), sorted: an atomic add, or the operands of a statement,
  /// meeting in one element. Past kMaxContributions it is an error at `loc`. Costs their sizes.
  void combine(Value& into, const Value& more, llvm::SMLoc loc) {
    checkContributions(into.size() + more.size(), loc);
    spend(int64_t(into.size() + more.size()));
    Value merged;
    merged.reserve(into.size() + more.size());
    std::merge(into.begin(), into.end(), more.begin(), more.end(), std::back_inserter(merged),
               orderedBefore);
    into = std::move(merged);
  }

  void checkContributions(size_t count, llvm::SMLoc loc) {
    if (count > kMaxContributions)
      fail(loc, "an element would hold " + std::to_string(count) +
                    " contributions of input and aux elements; no collective's result holds more "
                    "than nranks of the input and one of each aux buffer, and the verifier "
                    "supports at most " +
                    std::to_string(kMaxContributions) + " (on rank " + std::to_string(rank_) + ")");
  }

  // ------------------------------------------------------------------ the walker's hooks
  void beginStep(const ir::Step& step) {
    // In the spec a step with a row-wise statement is split by rows; the lowered program says
    // so with a row loop.
    rowStep_ = !config_.lowered && hasRowStatement(step);
    for (const auto& wait : step.waits)
      waited_.insert(wait.step);
  }
  void beginRank() { barrier_.reset(); }
  void onStatement() { spend(1); }
  void barrier(const ir::Barrier& s) { barrier_ = s.scope; }
  void put(const ir::Put& s, const execute::Env& env) {
    if (otherChunk())
      return;
    transfer(s.loc, s.source, s.target, false, s.store, env);
  }
  void atomicAdd(const ir::AtomicAdd& s, const execute::Env& env) {
    if (otherChunk())
      return;
    transfer(s.loc, s.source, s.target, true, ir::StoreKind::Plain, env);
  }
  int64_t slotCount(int, ir::BufferId buffer) const {
    return shapes_[size_t(memoryOf_[size_t(buffer)])].first;
  }
  Affine slotSize(int, ir::BufferId buffer, int64_t) const {
    return shapes_[size_t(memoryOf_[size_t(buffer)])].second;
  }
  /// Whether this statement's threads are a row's: a spec's step split by rows, or a row loop.
  bool rowThreads() const { return rowStep_ || inRowLoop_; }

  // ------------------------------------------------------------------ memory
  /// Every rank's buffers, their slots made when first touched (slotAt): a buffer with a slot per
  /// rank on every rank (a root's inbox) would otherwise cost nranks^2 slots a run.
  void allocate() {
    memoryOf_ = memoryOf();
    // Every rank's buffers have the shapes rank 0's have (shapeOf evaluates them as rank 0).
    shapes_.clear();
    for (size_t b = 0; b < program_.buffers.size(); ++b)
      shapes_.push_back(shapeOf(ir::BufferId(b)));
    memory_.assign(size_t(config_.nranks), {});
    for (auto& buffers : memory_) {
      buffers.resize(program_.buffers.size());
      for (size_t b = 0; b < program_.buffers.size(); ++b)
        if (size_t(memoryOf_[b]) == b)
          buffers[b].resize(size_t(shapes_[b].first));
    }
  }

  /// Slot `index` of `buffer` on `owner` (a buffer that is another's memory: that one's), made
  /// as it starts a call where first touched: an input or aux slot holds the rank's own elements,
  /// any other nothing.
  Slot& slotAt(int owner, size_t buffer, int64_t index) {
    const size_t memory = size_t(memoryOf_[buffer]);
    SlotPtr& slot = memory_[size_t(owner)][memory][size_t(index)];
    if (slot)
      return *slot;
    const ir::Buffer& declared = program_.buffers[memory];
    slot = std::make_shared<Slot>();
    slot->size = shapes_[memory].second;
    Cell cell;
    if (declared.role == ir::BufferRole::Input || declared.role == ir::BufferRole::Aux) {
      const int tag = declared.role == ir::BufferRole::Input ? 0 : declared.auxIndex + 1;
      cell.value = {Contribution{owner, tag, Affine::constant(0), false}};
      cell.written = true;
      cell.writerStep = -1;
      cell.writerLow = cell.writerHigh = owner;
    }
    account(bytesOf(cell));
    slot->cells.push_back(std::move(cell));
    slot->segments.push_back(Segment{Affine::constant(0), 0});
    return *slot;
  }

  /// The index of the segment holding position p (0 <= p < size).
  template <typename AnySlot> size_t locate(const AnySlot& slot, const Affine& p) {
    size_t lo = 0, hi = slot.segments.size();
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      if (arith_.lessEqual(slot.segments[mid].start, p))
        lo = mid;
      else
        hi = mid;
    }
    return lo;
  }

  /// Makes p the start of a segment (nothing at 0 or at the end).
  void split(Slot& slot, const Affine& p) {
    if (arith_.lessEqual(p, Affine::constant(0)) || arith_.lessEqual(slot.size, p))
      return;
    const size_t i = locate(slot, p);
    if (arith_.equal(slot.segments[i].start, p))
      return;
    spend(1 + int64_t(slot.cellOf(i).value.size()));
    account(bytesOf(slot.cellOf(i)));
    slot.cells.push_back(slot.cellOf(i));
    slot.segments.insert(slot.segments.begin() + long(i) + 1,
                         Segment{p, uint32_t(slot.cells.size() - 1)});
  }

  /// split() of a kept spec slot: the same comparisons, work and memory as of the run's own.
  void split(SpecSlot& slot, const Affine& p, const std::vector<Value>& values) {
    if (arith_.lessEqual(p, Affine::constant(0)) || arith_.lessEqual(slot.size, p))
      return;
    const size_t i = locate(slot, p);
    if (arith_.equal(slot.segments[i].start, p))
      return;
    spend(1 + int64_t(values[slot.segments[i].value].size()));
    account(slot.segments[i].bytes);
    SpecSegment copy = slot.segments[i];
    copy.start = p;
    slot.segments.insert(slot.segments.begin() + long(i) + 1, copy);
  }

  Affine segmentEnd(const Slot& slot, size_t i) const {
    return i + 1 < slot.segments.size() ? slot.segments[i + 1].start : slot.size;
  }

  Resolved resolve(const ir::Region& region, const execute::Env& env) {
    const execute::Place p = place(region, env);
    Resolved r{p.owner, p.buffer, p.slot, p.offset, p.length, p.bound, nullptr};
    r.slot = &slotAt(r.owner, size_t(r.buffer), r.slotIndex);
    const ir::Buffer& buffer = program_.buffer(region);
    if (config_.lowered && buffer.storage == ir::Storage::Packets &&
        arith_.less(Affine::constant(0), r.length)) {
      // A packet carries packetElems elements of one writer: a region that starts inside a
      // packet would share it with whatever fills the packet's first elements.
      const int64_t units = config_.packetElems;
      // Offsets that move with q split q (SplitQ); with the residue, they end its range where
      // the offset's place in a packet changes.
      if (!arith_.equal(arith_.remainder(r.offset, units), Affine::constant(0)))
        fail(region.loc, "'" + region.text + "' on rank " + std::to_string(env.rank) +
                             " starts at element " + number(r.offset) + " of '" + buffer.name +
                             "', inside a 16-byte packet (" + std::to_string(units) +
                             " elements of data) whose first elements another region holds: two "
                             "writers would store one packet; use 'barrier' or 'sentinel'");
    }
    return r;
  }

  /// Splits the slot so that [offset + a, offset + b) for each relative boundary is whole
  /// segments.
  void splitAt(const Resolved& r, llvm::ArrayRef<Affine> relative) {
    for (const Affine& a : relative)
      split(*r.slot, Arith::add(r.offset, a));
  }

  /// The relative positions in (0, length) where some segment of `r` begins.
  void boundariesOf(const Resolved& r, const Affine& length, Cuts& out) {
    split(*r.slot, r.offset);
    split(*r.slot, Arith::add(r.offset, length));
    const size_t first = locate(*r.slot, r.offset);
    for (size_t i = first + 1; i < r.slot->segments.size(); ++i) {
      const Affine rel = Arith::sub(r.slot->segments[i].start, r.offset);
      if (!arith_.less(rel, length))
        break;
      out.push_back(rel);
    }
  }

  /// The relative boundaries of all `regions` over [0, length), sorted and without repeats.
  Cuts pieces(llvm::ArrayRef<Resolved> regions, const Affine& length) {
    Cuts cuts;
    for (const Resolved& r : regions)
      boundariesOf(r, length, cuts);
    std::sort(cuts.begin(), cuts.end(),
              [&](const Affine& a, const Affine& b) { return arith_.less(a, b); });
    Cuts unique;
    for (const Affine& c : cuts)
      if (unique.empty() || !arith_.equal(unique.back(), c))
        unique.push_back(c);
    for (const Resolved& r : regions)
      splitAt(r, unique);
    unique.insert(unique.begin(), Affine::constant(0));
    spend(int64_t(unique.size()) * int64_t(regions.size()));
    return unique; // piece k is [unique[k], unique[k + 1] or length)
  }

  Cell& cellAt(const Resolved& r, const Affine& relative) {
    Slot& slot = *r.slot;
    return slot.cellOf(locate(slot, Arith::add(r.offset, relative)));
  }

  /// A statement that reads and writes one slot at different offsets races with itself: one
  /// thread reads an element another writes, unordered. Reports it at the first such element.
  void checkSelfOverlap(const Resolved& read, const Resolved& written, const Affine& length,
                        const ir::Region& region) {
    if (read.slot != written.slot || arith_.equal(read.offset, written.offset) ||
        arith_.lessEqual(length, Affine::constant(0)))
      return;
    const Affine readEnd = Arith::add(read.offset, length);
    const Affine writeEnd = Arith::add(written.offset, length);
    if (arith_.lessEqual(readEnd, written.offset) || arith_.lessEqual(writeEnd, read.offset))
      return;
    const Affine first = arith_.max(read.offset, written.offset);
    fail(region.loc, "reads " + what(region, first, rank_) +
                         ", which another thread of this rank writes in the same step (a race); "
                         "split the step and wait for the first part");
  }

  std::string what(const ir::Region& region, const Affine& element, int rank) const {
    return "'" + region.text + "' (element " + number(element) + ") on rank " +
           std::to_string(rank);
  }

  // ------------------------------------------------------------------ rules
  bool sameThread(const Thread& a, const Thread& b) {
    if (a.row || b.row)
      return a.row && b.row;
    return arith_.equal(a.origin, b.origin) && arith_.equal(a.bound, b.bound);
  }

  const std::string& stepName(int step) const { return steps_[size_t(step)].name; }
  /// What a `wait` names: a repetition `ring[s=2]` of a repeated step is waited for as `ring`.
  std::string waitName(int step) const {
    const std::string& name = stepName(step);
    return name.substr(0, name.find('['));
  }

  /// Whether this step is ordered after `step` (spec: a `wait`; lowered: a barrier).
  bool orderedAfter(int step) const {
    if (config_.lowered)
      return barrier_.has_value() && step < step_;
    return waited_.count(step) != 0;
  }

  void markWaitUsed(int writerStep) {
    if (config_.lowered)
      return;
    // The latest wait for writerStep up to now is the one that orders this access.
    for (int t = step_; t > writerStep; --t)
      for (const auto& wait : steps_[size_t(t)].waits)
        if (wait.step == writerStep) {
          facts_.usedWaits.insert({t, wait.loc.getPointer()});
          return;
        }
  }

  /// A dependency across ranks that only a matched barrier orders must stay within one thread.
  template <typename Text> void requireMatchedThread(bool same, llvm::SMLoc loc, Text what) {
    if (config_.lowered && barrier_ && *barrier_ == ir::BarrierScope::Matched && !same)
      fail(loc, what() + " crosses threads, but its barrier orders only block b after block b "
                         "of the peers");
  }

  /// Whether this step runs after everything `step` did, on every rank and thread. In the spec: a
  /// wait for `step` or a later step, here or in an earlier step (every thread runs every step in
  /// order, so a step finished everywhere means the steps before it have too); the wait is marked
  /// used. In the lowered program: the barrier that opens this step.
  bool waitedSince(int step) {
    if (config_.lowered)
      return barrier_.has_value() && step < step_;
    for (int w : waited_)
      if (w >= step) {
        markWaitUsed(w);
        return true;
      }
    return false;
  }

  /// Adds `access` to `list`, replacing the entry of the same rank and thread (and kind): that one
  /// comes before it in program order, so whatever is ordered after the new one is after both.
  /// The same thread is a decision of the run like any other (arith_), as it is with numbers.
  void remember(Accesses& list, const Access& access) {
    for (Access& a : list)
      if (a.rank == access.rank && a.accumulates == access.accumulates &&
          a.thread.row == access.thread.row &&
          arith_.equal(a.thread.origin, access.thread.origin) &&
          arith_.equal(a.thread.bound, access.thread.bound)) {
        a.step = access.step;
        a.loc = access.loc;
        return;
      }
    spend(1);
    list.push_back(access);
  }

  /// Reads the segment at relative position `at` of `r` as `thread`: checks that the read is
  /// ordered after every write it reads and records the access. Returns the value, its shifts
  /// made relative to the statement's element index.
  Value read(const ir::Operand& operand, const Resolved& r, const Affine& at,
             const Thread& thread) {
    const ir::Region& region = operand.region;
    Cell& c = cellAt(r, at);
    const Affine element = Arith::add(r.offset, at);
    auto text = [&] { return what(region, element, rank_); };
    if (!c.written)
      fail(region.loc, "reads " + text() + " before anything writes it");
    const bool polled = config_.lowered && isPoll(operand.load);
    c.takes += operand.load == ir::LoadKind::TakeLine ? 1 : 0;
    if (config_.lowered && program_.buffer(region).polled)
      checkPolledRead(operand, c, region, text);
    // Every write since the last plain one: an element that ranks add into holds all their adds.
    for (const Access& w : c.recentWrites) {
      const bool same = sameThread(w.thread, thread);
      if (w.rank != rank_) {
        if (w.step == step_)
          fail(region.loc, "race: reads " + text() + " while rank " + std::to_string(w.rank) +
                               " writes it in the same step; move the read to a later step that "
                               "waits for '" +
                               stepName(step_) + "'");
        if (!polled && !orderedAfter(w.step))
          failWithNote(region.loc,
                       "reads " + text() + ", which rank " + std::to_string(w.rank) +
                           " wrote in step '" + stepName(w.step) +
                           "', without waiting for it; add 'wait " + waitName(w.step) +
                           "' to this step",
                       w.loc, "written here");
        if (!polled)
          requireMatchedThread(same, region.loc, [&] { return "reading " + text(); });
        markWaitUsed(w.step);
        facts_.indexAligned &= same;
        facts_.dataEdges.insert({w.rank, rank_});
      } else if (!same) {
        if (w.step == step_)
          fail(region.loc, "reads " + text() +
                               ", which another thread of this rank writes in the same step (a "
                               "race); split the step and wait for the first part");
        if (!orderedAfter(w.step))
          failWithNote(region.loc,
                       "reads " + text() + ", which this rank wrote in step '" + stepName(w.step) +
                           "' over a different element range, without waiting for it; add "
                           "'wait " +
                           waitName(w.step) + "'",
                       w.loc, "written here");
        markWaitUsed(w.step);
        facts_.indexAligned = false;
        facts_.localAligned = false;
      }
    }
    if (c.writerStep >= 0 && c.writtenByOtherThan(rank_))
      facts_.remoteDataReadOnce &= ++c.remoteReads <= 1;
    const int64_t bytesBefore = bytesOf(c);
    remember(c.recentReads, Access{step_, rank_, thread, region.loc, false});
    account(bytesOf(c) - bytesBefore);
    // Work in proportion to what the read walks and copies.
    spend(int64_t(c.value.size() + c.recentWrites.size() + c.recentReads.size()));
    Value value = c.value;
    for (Contribution& contribution : value)
      contribution.shift = Arith::add(contribution.shift, r.offset);
    return value;
  }

  static bool isPoll(ir::LoadKind load) {
    return load == ir::LoadKind::PollPacket || load == ir::LoadKind::PollSentinel ||
           load == ir::LoadKind::TakeLine || load == ir::LoadKind::PollLine;
  }

  /// The lowered program's rules for data a peer wrote: it is read by polling, and what is polled
  /// was written exactly once in the call (accumulation lines: added once by every rank).
  template <typename Text>
  void checkPolledRead(const ir::Operand& operand, const Cell& c, const ir::Region& region,
                       Text text) {
    const ir::Buffer& buffer = program_.buffer(region);
    if (!buffer.polled)
      return;
    if (!isPoll(operand.load))
      fail(region.loc, "reads " + text() + ", which a peer writes, without polling for it");
    if (operand.load == ir::LoadKind::TakeLine) {
      if (c.adds != config_.nranks)
        fail(region.loc, "takes " + text() + " after " + std::to_string(c.adds) +
                             " accumulation adds, but the line is complete after exactly " +
                             std::to_string(config_.nranks));
      return;
    }
    if (c.writes != 1)
      fail(region.loc, "polls " + text() + ", which is written " + std::to_string(c.writes) +
                           " times in one call: every write carries the call's flag, so the "
                           "reader may take any of them");
  }

  /// The current write, by this rank's `thread`, must come after `earlier`, an access of the same
  /// element that conflicts with it: in the same thread, program order does it; in the same step
  /// nothing does (a race); otherwise a wait (spec) or barrier (lowered) for its step.
  template <typename Text>
  void orderWriteAfter(const Access& earlier, bool earlierWrites, const Thread& thread,
                       llvm::SMLoc loc, Text text, int owner) {
    const bool same = sameThread(earlier.thread, thread);
    if (earlier.rank == rank_ && same)
      return;
    const std::string whose = earlier.rank == rank_ ? std::string("another thread of this rank")
                                                    : "rank " + std::to_string(earlier.rank);
    if (earlier.step == step_) {
      if (earlierWrites)
        failWithNote(loc,
                     "race: " + text() + " is written by " + whose + " and by rank " +
                         std::to_string(rank_) + " in step '" + stepName(step_) + "'",
                     earlier.loc, "the other write");
      if (owner != rank_)
        fail(loc, "race: rank " + std::to_string(rank_) + " writes " + text() +
                      " while that rank reads it in the same step");
      failWithNote(loc,
                   "race: writes " + text() + ", which " + whose +
                       " reads in the same step; split the step and wait for the reads",
                   earlier.loc, "read here");
    }
    if (!waitedSince(earlier.step)) {
      const std::string did = earlierWrites ? "wrote" : "read";
      const std::string why =
          earlierWrites ? " (the earlier write could land last)" : " (it may not have read it yet)";
      if (owner != rank_ && earlier.rank != rank_)
        failWithNote(loc,
                     "rank " + std::to_string(rank_) + " overwrites " + text() + ", which rank " +
                         std::to_string(earlier.rank) + " " + (earlierWrites ? "wrote" : "used") +
                         " in step '" + stepName(earlier.step) +
                         "', without waiting for that step" + why,
                     earlier.loc, earlierWrites ? "written here" : "read here");
      const std::string remedy = config_.lowered
                                     ? ", and no barrier orders the two" + why
                                     : ", without waiting for it" + why + "; add 'wait " +
                                           waitName(earlier.step) + "' to this step";
      failWithNote(loc,
                   "overwrites " + text() + ", which " + whose + " " + did + " in step '" +
                       stepName(earlier.step) + "'" + remedy,
                   earlier.loc, earlierWrites ? "written here" : "read here");
    }
    requireMatchedThread(same, loc, [&] { return "overwriting " + text(); });
    facts_.indexAligned &= same;
    if (earlier.rank == rank_)
      facts_.localAligned = false;
    else
      facts_.remoteWriteOrdering = true;
  }

  /// Writes `value` (shifts relative to the element index) to the segment at relative position
  /// `at` of `r`, as `thread`: it must be ordered after every earlier access it conflicts with.
  void write(llvm::SMLoc loc, const ir::Region& region, const Resolved& r, const Affine& at,
             const Thread& thread, Value value, bool atomic, ir::StoreKind store) {
    Cell& c = cellAt(r, at);
    const int64_t bytesBefore = bytesOf(c);
    const Affine element = Arith::add(r.offset, at);
    auto text = [&] { return what(region, element, r.owner); };
    const bool lineAdd = store == ir::StoreKind::LineAdd;
    const bool accumulates = atomic || lineAdd;
    if (atomic && !c.written)
      fail(loc, "atomic_add into " + text() + " before anything initializes it");
    spend(int64_t(value.size() + c.recentWrites.size() + c.recentReads.size()));
    // Adds commute with one another; every other pair of a write and an access conflicts.
    for (const Access& earlier : c.recentWrites) {
      if (!(accumulates && earlier.accumulates))
        orderWriteAfter(earlier, true, thread, loc, text, r.owner);
    }
    for (const Access& earlier : c.recentReads)
      orderWriteAfter(earlier, false, thread, loc, text, r.owner);
    facts_.usesAtomics |= atomic;
    if (atomic)
      noteSumOnly(loc, "atomic_add adds with the GPU's atomic add whatever the operator");
    const ir::Buffer& buffer = program_.buffer(region);
    if (r.owner != rank_)
      facts_.remotelyWritten.insert(r.buffer);
    else if (buffer.role == ir::BufferRole::Scratch && !lineAdd)
      facts_.locallyWritten.insert(r.buffer);
    if (lineAdd && c.takes > 0)
      fail(loc, "adds into " + text() +
                    " after its line was taken in this call: the take zeroed it for the next "
                    "call that uses its scratch copy");
    if (config_.lowered && buffer.polled && !lineAdd && c.writes >= 1)
      fail(loc, "writes " + text() +
                    " a second time in one call: a peer polls it and takes whichever write it "
                    "sees first");
    c.remoteReads = 0;
    for (Contribution& contribution : value)
      contribution.shift = Arith::sub(contribution.shift, r.offset);
    // An atomic add accumulates onto what the element holds; a plain write replaces it.
    // An add leaves earlier accesses for later ones to be ordered after (adds do not order one
    // another); a plain write is ordered after all of them, so it is all that later ones need.
    const Access access{step_, rank_, thread, loc, accumulates};
    if (accumulates) {
      remember(c.recentWrites, access);
    } else {
      c.recentWrites.assign(1, access);
      c.recentReads.clear();
    }
    if (atomic || (lineAdd && c.adds > 0)) {
      combine(c.value, value, loc);
      c.writerLow = std::min(c.writerLow, rank_);
      c.writerHigh = std::max(c.writerHigh, rank_);
    } else {
      c.value = std::move(value);
      c.writerLow = c.writerHigh = rank_;
    }
    c.written = true;
    c.atomic = atomic;
    c.writes += lineAdd ? 0 : 1;
    c.adds += lineAdd ? 1 : 0;
    c.writerStep = step_;
    c.writer = thread;
    c.writerLoc = loc;
    account(bytesOf(c) - bytesBefore);
  }

  // ------------------------------------------------------------------ statements
  void keep(const std::string& reg, llvm::ArrayRef<Affine> cuts, const Affine& length,
            const std::vector<Value>& values) {
    Register& r = registers_[reg];
    r.length = length;
    r.pieces.clear();
    for (size_t k = 0; k < cuts.size(); ++k)
      r.pieces.push_back({cuts[k], values[k]});
  }

  /// The register's value at relative position `at` (a statement reading it with the same
  /// element index as the one that filled it).
  Value fromRegister(const ir::Operand& operand, const Affine& at) {
    auto it = registers_.find(operand.reg);
    if (it == registers_.end() || !arith_.less(at, it->second.length))
      fail(operand.region.loc, "reads register '" + operand.reg + "' for element " + number(at) +
                                   " of '" + operand.region.text +
                                   "' before this thread filled it");
    const auto& pieces = it->second.pieces;
    size_t k = 0;
    while (k + 1 < pieces.size() && arith_.lessEqual(pieces[k + 1].first, at))
      ++k;
    return pieces[k].second;
  }

  /// Register pieces must line up with the statement's pieces: cut the statement at them.
  void registerCuts(const ir::Operand& operand, Cuts& cuts) {
    auto it = registers_.find(operand.reg);
    if (it == registers_.end())
      return;
    for (const auto& piece : it->second.pieces)
      cuts.push_back(piece.first);
  }

  Cuts normalize(Cuts cuts, const Affine& length) {
    std::sort(cuts.begin(), cuts.end(),
              [&](const Affine& a, const Affine& b) { return arith_.less(a, b); });
    Cuts unique;
    for (const Affine& c : cuts)
      if (arith_.less(c, length) && (unique.empty() || !arith_.equal(unique.back(), c)))
        unique.push_back(c);
    if (unique.empty() || !arith_.equal(unique.front(), Affine::constant(0)))
      unique.insert(unique.begin(), Affine::constant(0));
    return unique;
  }

  void transfer(llvm::SMLoc loc, const ir::Operand& source, const ir::Region& target, bool atomic,
                ir::StoreKind store, const execute::Env& env) {
    const ir::Region& from = source.region;
    Resolved src = resolve(from, env);
    Resolved dst = resolve(target, env);
    if (arith_.less(dst.length, src.length))
      fail(loc, "destination '" + target.text + "' holds " + number(dst.length) +
                    " elements but the source '" + from.text + "' has " + number(src.length));
    const Affine length = src.length;
    if (arith_.lessEqual(length, Affine::constant(0)))
      return;
    const bool fromReg = source.load == ir::LoadKind::Register;
    if (!fromReg)
      checkSelfOverlap(src, dst, length, from);
    llvm::SmallVector<Resolved, 4> regions = {dst};
    if (!fromReg)
      regions.push_back(src);
    Cuts cuts = pieces(regions, length);
    if (fromReg) {
      registerCuts(source, cuts);
      cuts = normalize(cuts, length);
      splitAt(dst, cuts);
    }
    const Thread reader{false, src.offset, src.bound};
    const Thread writer{false, dst.offset, src.bound};
    for (const Affine& at : cuts) {
      Value value = fromReg ? fromRegister(source, at) : read(source, src, at, reader);
      write(loc, target, dst, at, writer, std::move(value), atomic, store);
    }
  }

  /// The operators' rule. A reduce combines with the variant's operator and '+' always adds, but
  /// an element's contributions say which inputs met, not how. The element's value is the
  /// operator over its input contributions plus its aux ones (the claim, for every operator) only
  /// if inputs meet only in reduces and aux data only through '+'. Anything else computes its
  /// result for 'sum' alone: recorded, and the variants of other operators are refused.
  void noteOperators(const ir::Assign& s, size_t operands, int inputParts, int reducedAux) {
    if (inputParts > 1)
      noteSumOnly(s.loc, "'+' adds values that both carry the input, which is a sum whatever the "
                         "operator; combine inputs with reduce(...)");
    else if (s.reduce && operands > 1 && reducedAux > 0)
      noteSumOnly(s.loc, "reduce(...) combines aux data with the operator; add aux data with '+' "
                         "after the reduce");
  }

  void noteSumOnly(llvm::SMLoc loc, const std::string& why) {
    if (config_.chunkZeroOnly) {
      // Every chunk's run notes the statement of its walk that comes first of all the images of
      // chunk 0's that note, with what chunk 0's notes first.
      const int place = rotation_->firstImage[chunkZeroWalked_ - 1];
      if (facts_.sumOnlyAt.isValid() && sumOnlyPlace_ <= place)
        return;
      sumOnlyPlace_ = place;
      facts_.sumOnlyAt = loc;
      facts_.sumOnlyWhy = why;
      return;
    }
    if (facts_.sumOnlyAt.isValid())
      return;
    facts_.sumOnlyAt = loc;
    facts_.sumOnlyWhy = why;
  }

  void assign(const ir::Assign& s, execute::Env& env) {
    if (otherChunk())
      return;
    Resolved dst = resolve(s.target, env);
    const Affine length = dst.length;
    // Operands (a slot set's once for each rank of the set), then addends.
    llvm::SmallVector<std::pair<const ir::Operand*, Resolved>, 8> inputs;
    size_t operandCount = 0;
    forEachOperand(s, env, [&](const ir::Operand& operand, bool addend) {
      Resolved r = resolve(operand.region, env);
      if (arith_.less(r.length, length))
        fail(operand.region.loc, std::string(addend ? "" : "operand ") + "'" + operand.region.text +
                                     "' has " + number(r.length) + " elements but the target '" +
                                     s.target.text + "' needs " + number(length));
      inputs.push_back({&operand, r});
      operandCount += addend ? 0 : 1;
    });
    if (arith_.lessEqual(length, Affine::constant(0)))
      return;
    llvm::SmallVector<Resolved, 4> regions = {dst};
    for (const auto& [operand, r] : inputs)
      if (operand->load != ir::LoadKind::Register) {
        checkSelfOverlap(r, dst, length, operand->region);
        regions.push_back(r);
      }
    Cuts cuts = pieces(regions, length);
    bool registers = false;
    for (const auto& [operand, r] : inputs)
      if (operand->load == ir::LoadKind::Register) {
        registerCuts(*operand, cuts);
        registers = true;
      }
    if (registers) {
      cuts = normalize(cuts, length);
      for (const Resolved& r : regions)
        splitAt(r, cuts);
    }
    std::vector<Value> kept;
    for (const Affine& at : cuts) {
      Value value;
      // Which parts carry input and aux contributions, for the operators' rule (noteOperators).
      int inputParts = 0, reducedAux = 0;
      bool reducedInput = false;
      for (size_t k = 0; k < inputs.size(); ++k) {
        const auto& [operand, r] = inputs[k];
        const Thread reader =
            rowThreads() ? Thread{true, {}, {}} : Thread{false, r.offset, dst.bound};
        Value part = operand->load == ir::LoadKind::Register ? fromRegister(*operand, at)
                                                             : read(*operand, r, at, reader);
        const bool input =
            std::any_of(part.begin(), part.end(), [](const Contribution& c) { return c.tag == 0; });
        const bool aux =
            std::any_of(part.begin(), part.end(), [](const Contribution& c) { return c.tag > 0; });
        if (k < operandCount) {
          reducedInput |= input;
          reducedAux += aux;
        } else {
          inputParts += input;
        }
        checkContributions(value.size() + part.size(), s.loc);
        value.insert(value.end(), part.begin(), part.end());
      }
      spend(int64_t(value.size()));
      std::sort(value.begin(), value.end(), orderedBefore);
      noteOperators(s, operandCount, reducedInput + inputParts, reducedAux);
      if (!s.keep.empty())
        kept.push_back(value);
      const Thread writer =
          rowThreads() ? Thread{true, {}, {}} : Thread{false, dst.offset, dst.bound};
      write(s.loc, s.target, dst, at, writer, std::move(value), false, s.store);
    }
    if (!s.keep.empty())
      keep(s.keep, cuts, length, kept);
  }

  void let(const ir::Let& s, const execute::Env& env) {
    if (otherChunk())
      return;
    Resolved r = resolve(s.value.region, env);
    const Affine length = r.length;
    if (arith_.lessEqual(length, Affine::constant(0)))
      return;
    Cuts cuts = pieces({r}, length);
    std::vector<Value> values;
    const Thread reader{false, r.offset, r.bound};
    for (const Affine& at : cuts)
      values.push_back(read(s.value, r, at, reader));
    keep(s.reg, cuts, length, values);
  }

  /// A row statement, whatever its op: target[t, k] depends on every element of row t of the
  /// rows and on its parameters, each read whole (rmsnorm: out[t, k] = f(y[t, :]) * weight[k]).
  /// The row must be complete when it is read: every element holds what the collective's output
  /// would (for an allreduce, in[j] of every rank exactly once), and was computed on this rank
  /// (a row-wise statement reads its rows twice, which data-arrival buffers do not allow). The
  /// value kept is y[t, k]'s own plus whose the parameters are, so that the postcondition can
  /// check the output element by element.
  void row(const ir::RowStmt& s, const execute::Env& env) {
    if (config_.chunkZeroOnly)
      throw AffineError{"chunks"}; // the premise has none: a walk that differs from the check's
    const ir::RowOpInfo& info = ir::rowOpInfo(s.op);
    const std::string opName(info.displayName);
    const ir::Region& rowsRegion = s.rows.region;
    Resolved dst = resolve(s.target, env);
    Resolved rows = resolve(rowsRegion, env);
    const Affine h = Affine::constant(config_.rowLength);
    const Thread rowThread{true, {}, {}};
    // Each parameter is read whole; only whose it is matters to the rules
    // (Contribution::anyIndex).
    Value paramsValue;
    std::vector<size_t> writtenParams; // written after the rows, below
    for (size_t k = 0; k < s.params.size() && k < info.params.size(); ++k) {
      if (info.params[k].access == ir::RowParamAccess::Written) {
        writtenParams.push_back(k);
        continue;
      }
      Resolved param = resolve(s.params[k].region, env);
      const Affine length =
          info.params[k].shape == ir::RowParamShape::OneRow ? h : Affine::constant(1);
      if (arith_.less(rows.length, dst.length) || arith_.less(param.length, length))
        fail(s.loc, "'" + opName + "' needs rows of " + number(dst.length) + " elements and a " +
                        std::string(info.params[k].name) + " of " + number(length));
      if (!arith_.less(Affine::constant(0), length))
        continue;
      for (const Affine& at : pieces({param}, length)) {
        Value part = read(s.params[k], param, at, rowThread);
        for (Contribution& c : part)
          if (c.tag > 0)
            paramsValue.push_back(Contribution{c.rank, c.tag, Affine::constant(0), true});
      }
    }
    if (s.params.empty() && arith_.less(rows.length, dst.length))
      fail(s.loc, "'" + opName + "' needs rows of " + number(dst.length) + " elements");
    std::sort(paramsValue.begin(), paramsValue.end(), orderedBefore);
    paramsValue.erase(std::unique(paramsValue.begin(), paramsValue.end(),
                                  [](const Contribution& a, const Contribution& b) {
                                    return a.rank == b.rank && a.tag == b.tag;
                                  }),
                      paramsValue.end());
    if (arith_.lessEqual(dst.length, Affine::constant(0)))
      return;
    // The expected contributions change at block boundaries for some kinds: cut there too.
    splitAtBlocks(rows);
    Cuts cuts = pieces({dst, rows}, dst.length);
    if (s.rows.load == ir::LoadKind::Register) {
      registerCuts(s.rows, cuts);
      cuts = normalize(cuts, dst.length);
      splitAt(dst, cuts);
      splitAt(rows, cuts);
    }
    // Where a written parameter's elements go (relative to it) and what each holds: rows of
    // one element (the runs with n symbolic) write element j of it with element j of the target;
    // longer rows (runs with numbers) row t's element with the value at the row's first element.
    std::vector<std::pair<Affine, Value>> paramWrites;
    for (size_t piece = 0; piece < cuts.size(); ++piece) {
      const Affine& at = cuts[piece];
      const Affine j = Arith::add(rows.offset, at);
      auto row = [&] {
        return "row " + number(rowOf(j)) + " of '" + rowsRegion.text + "' on rank " +
               std::to_string(rank_);
      };
      Value value = s.rows.load == ir::LoadKind::Register ? fromRegister(s.rows, at)
                                                          : read(s.rows, rows, at, rowThread);
      const Cell& c = cellAt(rows, at);
      if (s.rows.load != ir::LoadKind::Register && c.writtenByOtherThan(rank_))
        fail(rowsRegion.loc, "'" + opName + "' reads " + row() + ", whose element " + number(j) +
                                 " rank " + std::to_string(c.otherWriter(rank_)) +
                                 " wrote; a row-wise statement reads rows this rank computed: "
                                 "reduce into a local buffer first");
      const Value absolute = toAbsolute(value, rows.offset);
      auto expected = expectedAt(rank_, j);
      if (expected && !sameInput(inputPart(absolute), *expected))
        failWithNote(rowsRegion.loc,
                     "'" + opName + "' reads " + row() + " before the row is complete: element " +
                         number(j) + " holds " + describe(inputPart(absolute), j) +
                         "; every element of a row must be fully reduced before the row is "
                         "normalised",
                     c.writerStep >= 0 ? c.writerLoc : llvm::SMLoc(), "last written here");
      combine(value, paramsValue, s.loc);
      if (!writtenParams.empty()) {
        const Affine end = piece + 1 < cuts.size() ? cuts[piece + 1] : dst.length;
        if (config_.rowLength == 1) {
          paramWrites.push_back({at, value});
        } else {
          if (!at.isConstant() || !end.isConstant())
            internalError("a run with rows longer than one element and n symbolic");
          for (int64_t t = (at.v + config_.rowLength - 1) / config_.rowLength;
               t * config_.rowLength < end.v; ++t)
            paramWrites.push_back({Affine::constant(t), value});
        }
      }
      write(s.loc, s.target, dst, at, rowThread, std::move(value), false, s.store);
    }
    // A written parameter (a per-token scale, NVFP4's block scales): row t's elements by row
    // t's block, after the row's complete read above, from the row's values; no other statement
    // names it (Sema). Row t's elements are the run of `per` at t * per (RowOps.h's
    // writtenElementsPerRow: one scale, or its blocks); the swizzled matrix's are its padded
    // blocks at their swizzled offsets where the count is a number, and the run of them at
    // t * per where it is symbolic (a one-to-one renaming of the same elements). Elements past
    // the last row's are not written.
    const Affine rowCount =
        config_.rowLength == 1 ? dst.length : Affine::constant(dst.length.v / config_.rowLength);
    for (size_t k : writtenParams) {
      const Resolved param = resolve(s.params[k].region, env);
      const int64_t per = ir::writtenElementsPerRow(info.params[k].shape, config_.rowLength);
      if (info.params[k].shape == ir::RowParamShape::SwizzledBlocks && rowCount.isConstant()) {
        writeSwizzled(s.loc, s.params[k].region, param, paramWrites, rowCount.v, per, rowThread);
        continue;
      }
      std::vector<Affine> starts;
      for (const auto& [at, value] : paramWrites)
        if (arith_.less(Affine::constant(0), at))
          starts.push_back(Arith::mul(at, per));
      const Affine end = Arith::mul(rowCount, per);
      checkParamWrites(s.params[k].region, param, end);
      if (arith_.less(end, param.length))
        starts.push_back(end);
      splitAt(param, starts);
      for (const auto& [at, value] : paramWrites)
        write(s.loc, s.params[k].region, param, Arith::mul(at, per), rowThread, value, false,
              ir::StoreKind::Plain);
    }
  }

  /// A row statement's written parameter holds every element its rows write: [0, end).
  void checkParamWrites(const ir::Region& region, const Resolved& param, const Affine& end) {
    if (arith_.less(param.length, end))
      fail(region.loc, "the rows write elements [0, " + number(end) + ") of '" + region.text +
                           "' on rank " + std::to_string(rank_) + ", which holds " +
                           number(param.length));
  }

  /// Rows [0, rows)'s padded blocks (`padded` a row) of a swizzled block-scale matrix, each
  /// element at its offset (interpret/Float4.h's nvfp4SwizzledOffset): writes[i] holds the value
  /// of the rows from its row to the next entry's.
  void writeSwizzled(llvm::SMLoc loc, const ir::Region& region, const Resolved& param,
                     const std::vector<std::pair<Affine, Value>>& writes, int64_t rows,
                     int64_t padded, const Thread& thread) {
    const uint64_t blocks =
        uint64_t(ir::writtenElementsPerRow(ir::RowParamShape::BlocksPerRow, config_.rowLength));
    std::vector<std::pair<int64_t, const Value*>> cells;
    for (size_t i = 0; i < writes.size(); ++i) {
      const int64_t first = writes[i].first.v;
      const int64_t last = i + 1 < writes.size() ? writes[i + 1].first.v : rows;
      for (int64_t t = first; t < last; ++t)
        for (int64_t b = 0; b < padded; ++b)
          cells.push_back(
              {int64_t(nvfp4SwizzledOffset(uint64_t(t), uint64_t(b), blocks)), &writes[i].second});
    }
    int64_t end = 0;
    for (const auto& [at, value] : cells)
      end = std::max(end, at + 1);
    checkParamWrites(region, param, Affine::constant(end));
    std::vector<Affine> cuts;
    for (const auto& [at, value] : cells) {
      if (at > 0)
        cuts.push_back(Affine::constant(at));
      if (arith_.less(Affine::constant(at + 1), param.length))
        cuts.push_back(Affine::constant(at + 1));
    }
    splitAt(param, cuts);
    for (const auto& [at, value] : cells)
      write(loc, region, param, Affine::constant(at), thread, *value, false, ir::StoreKind::Plain);
  }

  Affine rowOf(const Affine& element) const {
    return config_.rowLength > 0 ? Affine{0, element.v / config_.rowLength} : element;
  }

  /// A value read at a region's element index (read()) as held at the element's position:
  /// shifts relative to the position in the slot.
  static Value toAbsolute(Value value, const Affine& regionOffset) {
    for (Contribution& c : value)
      c.shift = Arith::sub(c.shift, regionOffset);
    return value;
  }

  // ------------------------------------------------------------------ postcondition
  static Value inputPart(const Value& value) {
    Value part;
    for (const Contribution& c : value)
      if (c.tag == 0)
        part.push_back(c);
    return part;
  }

  /// What element `element` of the output must hold on `rank` (shifts relative to the element),
  /// or null where the kind leaves it unspecified. Valid for a whole segment that does not
  /// cross a block boundary (splitAtBlocks), and until the next call (one buffer serves them all).
  const Value* expectedAt(int rank, const Affine& element) {
    const Affine n = config_.count;
    Value& expected = expected_;
    expected.clear();
    auto every = [&](const Affine& shift) {
      for (int q = 0; q < config_.nranks; ++q)
        expected.push_back(Contribution{q, 0, shift, false});
    };
    switch (program_.kind) {
    case CollectiveKind::Reduce:
      if (rank != config_.root)
        return nullptr;
      [[fallthrough]];
    case CollectiveKind::AllReduce:
      every(Affine::constant(0));
      break;
    case CollectiveKind::ReduceScatter:
      every(Arith::mul(n, rank));
      break;
    case CollectiveKind::Broadcast:
      expected.push_back(Contribution{config_.root, 0, Affine::constant(0), false});
      break;
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll: {
      const int block = blockOf(element);
      Affine shift = Arith::mul(n, -block);
      if (program_.kind == CollectiveKind::AllToAll)
        shift = Arith::add(shift, Arith::mul(n, rank));
      expected.push_back(Contribution{block, 0, shift, false});
      break;
    }
    }
    std::sort(expected.begin(), expected.end(), orderedBefore);
    return &expected;
  }

  /// The block k (k * n <= element < (k + 1) * n) of an element of a buffer of n * nranks. Every
  /// rank's output has the same elements to ask about: each is answered once a run, its
  /// comparisons recorded then (asking again would record them again, to no effect).
  int blockOf(const Affine& element) {
    const auto [known, added] = blocks_.insert({{element.u, element.w, element.v}, 0});
    if (!added)
      return known->second;
    int k = 0;
    try {
      while (k + 1 < config_.nranks && arith_.lessEqual(Arith::mul(config_.count, k + 1), element))
        ++k;
    } catch (...) {
      blocks_.erase(known);
      throw;
    }
    known->second = k;
    return k;
  }

  /// Splits a buffer of the output's shape at the blocks' boundaries (where expectations change).
  void splitAtBlocks(const Resolved& r) {
    if (!outputIsPerRankBlocks(program_.kind))
      return;
    for (int k = 1; k < config_.nranks; ++k)
      split(*r.slot, Arith::mul(config_.count, k));
  }

  /// `got` holds exactly `expected` (both with shifts relative to the element's position).
  bool sameInput(const Value& got, const Value& expected) {
    if (got.size() != expected.size())
      return false;
    // Sorted alike when equal for every large q; record every pairing's threshold too, so that
    // no coincidence at some q goes unnoticed.
    bool same = true;
    for (size_t i = 0; i < got.size(); ++i) {
      const Contribution& a = got[i];
      const Contribution& b = expected[i];
      same &= a.rank == b.rank && a.tag == b.tag && arith_.equal(a.shift, b.shift);
    }
    // Every pair of the same rank and tag, found through expected's contributions ordered by
    // (tag, rank) rather than by trying each pair.
    auto key = [&](uint32_t j) { return std::pair{expected[j].tag, expected[j].rank}; };
    std::vector<uint32_t>& order = byTagRank_;
    order.resize(expected.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return key(x) < key(y); });
    for (const Contribution& a : got) {
      const std::pair<int, int> wanted{a.tag, a.rank};
      auto first =
          std::lower_bound(order.begin(), order.end(), wanted,
                           [&](uint32_t j, const std::pair<int, int>& k) { return key(j) < k; });
      for (auto j = first; j != order.end() && key(*j) == wanted; ++j)
        (void)arith_.equal(a.shift, expected[*j].shift);
    }
    return same || sameMultiset(got, expected, /*anyIndexMatters=*/false);
  }

  /// Whether `a` and `b` hold the same contributions, paired by equality rather than by their
  /// sorted order. Sorted by (u, w, v), two values that are alike sort alike; a run from
  /// Arith::from(q) or over residues decides as at its first q or s, where two shifts may be equal
  /// as numbers though not alike: paired one by one, every equality decided is one the run
  /// records.
  bool sameMultiset(const Value& a, const Value& b, bool anyIndexMatters) {
    if (a.size() != b.size())
      return false;
    std::vector<bool> used(b.size(), false);
    for (const Contribution& x : a) {
      bool found = false;
      for (size_t j = 0; j < b.size() && !found; ++j) {
        const Contribution& y = b[j];
        if (used[j] || x.rank != y.rank || x.tag != y.tag ||
            (anyIndexMatters && x.anyIndex != y.anyIndex))
          continue;
        if ((anyIndexMatters && x.anyIndex) || arith_.equal(x.shift, y.shift))
          used[j] = found = true;
      }
      if (!found)
        return false;
    }
    return true;
  }

  /// Why the aux contributions of an output element on `rank` break the claim, or "": each is
  /// the rank's own, at the element's own index (a weight's at any), and at most once.
  std::string auxProblem(const Value& value, int rank) {
    std::set<int> seen;
    for (const Contribution& c : value) {
      if (c.tag == 0)
        continue;
      const std::string name = auxName(c.tag);
      if (c.rank != rank)
        return "'" + name + "' of rank " + std::to_string(c.rank) +
               " reaches it: aux data must be the rank's own";
      if (!seen.insert(c.tag).second)
        return "'" + name + "' reaches it more than once";
      if (!c.anyIndex && !arith_.equal(c.shift, Affine::constant(0)))
        return "'" + name +
               "' reaches it from another index: an element of an aux buffer must reach the output "
               "element of the same index";
    }
    return "";
  }

  /// The aux buffers whose data reaches an output element (tags).
  static std::set<int> auxTags(const Value& value) {
    std::set<int> tags;
    for (const Contribution& c : value)
      if (c.tag > 0)
        tags.insert(c.tag);
    return tags;
  }

  std::string auxName(int tag) const {
    for (const auto& b : program_.buffers)
      if (b.auxIndex == tag - 1)
        return b.name;
    return "aux";
  }

  std::string describe(const Value& value, const Affine& element) const {
    if (value.empty())
      return "no input";
    // Long sums are cut short: the first terms say what went wrong.
    constexpr size_t kShown = 16;
    std::string text;
    for (size_t k = 0; k < value.size() && k < kShown; ++k) {
      const Contribution& c = value[k];
      std::string buffer = program_.buffer(program_.input()).name;
      for (const auto& b : program_.buffers)
        if (c.tag > 0 && b.auxIndex == c.tag - 1)
          buffer = b.name;
      const int64_t index =
          c.anyIndex ? (config_.rowLength > 0 ? element.v % config_.rowLength : element.v)
                     : element.v + c.shift.v;
      text += (k ? ", " : "") + buffer + "[" + std::to_string(index) + "] of rank " +
              std::to_string(c.rank);
    }
    if (value.size() > kShown)
      text += " and " + std::to_string(value.size() - kShown) + " more";
    return text;
  }

  /// The output, and (for an allreduce) every aux buffer of n elements the spec writes: a fused
  /// epilogue's residual out must hold the allreduce's result as much as the output does.
  void checkPostcondition() {
    for (size_t id = 0; id < program_.buffers.size(); ++id) {
      const ir::Buffer& buffer = program_.buffers[id];
      if (buffer.role == ir::BufferRole::Output) {
        checkOutput(ir::BufferId(id));
        continue;
      }
      if (buffer.role != ir::BufferRole::Aux || program_.kind != CollectiveKind::AllReduce)
        continue;
      bool written = false;
      for (int r = 0; r < config_.nranks; ++r)
        for (const Cell& cell : slotAt(r, id, 0).cells)
          written |= cell.writerStep >= 0;
      if (written && arith_.equal(slotAt(0, id, 0).size, config_.count))
        checkOutput(ir::BufferId(id));
    }
  }

  void checkOutput(ir::BufferId id) {
    const ir::Buffer& out = program_.buffer(id);
    // An aux buffer reaches every element of the output on every rank, or none (all-or-none: a
    // fused residual added to some elements only is no result of any collective).
    std::optional<std::tuple<std::set<int>, Affine, int>> firstTags;
    for (int r = 0; r < config_.nranks; ++r) {
      Slot& slot = slotAt(r, size_t(id), 0);
      if (outputIsPerRankBlocks(program_.kind))
        for (int k = 1; k < config_.nranks; ++k)
          split(slot, Arith::mul(config_.count, k));
      // The run of chunk 0 alone computed chunk 0: [0, chunk_size(n)).
      if (config_.chunkZeroOnly)
        split(slot, chunkZeroEnd_);
      for (size_t i = 0; i < slot.segments.size(); ++i) {
        if (config_.chunkZeroOnly && !arith_.less(slot.segments[i].start, chunkZeroEnd_))
          break;
        if (arith_.lessEqual(segmentEnd(slot, i), slot.segments[i].start))
          continue; // empty
        const Segment& segment = slot.segments[i];
        const Cell& c = slot.cellOf(i);
        const Affine element = segment.start;
        auto expected = expectedAt(r, element);
        if (!expected)
          continue;
        auto message = [&] {
          return "postcondition fails: " + out.name + "[" + number(element) + "] on rank " +
                 std::to_string(r);
        };
        // Most elements hold input alone: no part to split off, no aux rule to check.
        const bool aux = std::any_of(c.value.begin(), c.value.end(),
                                     [](const Contribution& k) { return k.tag > 0; });
        if (c.written && sameInput(aux ? inputPart(c.value) : c.value, *expected)) {
          std::string problem = aux ? auxProblem(c.value, r) : "";
          const std::set<int> tags = aux ? auxTags(c.value) : std::set<int>();
          if (problem.empty() && !firstTags)
            firstTags = {tags, element, r};
          if (problem.empty() && std::get<0>(*firstTags) != tags) {
            std::set<int> differ;
            std::set_symmetric_difference(tags.begin(), tags.end(), std::get<0>(*firstTags).begin(),
                                          std::get<0>(*firstTags).end(),
                                          std::inserter(differ, differ.begin()));
            const int tag = *differ.begin();
            problem = "'" + auxName(tag) + "' reaches " +
                      (tags.count(tag) ? "it but not " : "not it but ") + out.name + "[" +
                      number(std::get<1>(*firstTags)) + "] on rank " +
                      std::to_string(std::get<2>(*firstTags)) +
                      ": an aux buffer must reach every element of an output or none";
          }
          if (problem.empty())
            continue;
          failWithNote(program_.loc,
                       message() + " holds " + describe(c.value, element) + "; " + problem,
                       c.writerLoc, "last written here");
        }
        std::string text = message();
        if (!c.written) {
          text += " is never written";
        } else {
          text += " holds " + describe(c.value, element);
          std::vector<collc::Contribution> plain;
          for (const Contribution& e : *expected)
            plain.push_back({e.rank, element.v + e.shift.v});
          text += "; " + describeExpectedOutput(program_.kind,
                                                program_.buffer(program_.input()).name, plain);
        }
        failWithNote(program_.loc, text, c.written ? c.writerLoc : llvm::SMLoc(),
                     "last written here");
      }
    }
  }

public:
  /// After the spec's run of this configuration: what compareWith compares with.
  SpecResult result() {
    SpecResult kept;
    std::map<const Slot*, int> indexOf;
    // Values by a hash of their contributions, so that each is kept once.
    std::unordered_multimap<size_t, uint32_t> valuesByHash;
    kept.slotOf.assign(program_.buffers.size(), {});
    for (size_t id = 0; id < program_.buffers.size(); ++id) {
      const ir::BufferRole role = program_.buffers[id].role;
      if (role != ir::BufferRole::Output && role != ir::BufferRole::Aux)
        continue;
      for (int r = 0; r < config_.nranks; ++r) {
        const Slot* slot = &slotAt(r, id, 0);
        auto [at, added] = indexOf.insert({slot, int(kept.slots.size())});
        kept.slotOf[id].push_back(at->second);
        if (!added)
          continue;
        SpecSlot& copy = kept.slots.emplace_back();
        copy.size = slot->size;
        copy.segments.reserve(slot->segments.size());
        for (size_t i = 0; i < slot->segments.size(); ++i) {
          const Segment& segment = slot->segments[i];
          const Cell& cell = slot->cellOf(i);
          const Value& value = cell.value;
          const size_t hash = hashOf(value);
          uint32_t index = uint32_t(kept.values.size());
          const auto [first, last] = valuesByHash.equal_range(hash);
          for (auto it = first; it != last; ++it)
            if (identical(kept.values[it->second], value)) {
              index = it->second;
              break;
            }
          if (index == kept.values.size()) {
            kept.values.push_back(value);
            valuesByHash.insert({hash, index});
          }
          copy.segments.push_back(SpecSegment{segment.start, bytesOf(cell), index, cell.written});
        }
      }
    }
    return kept;
  }

  static size_t hashOf(const Value& value) {
    size_t hash = value.size();
    for (const Contribution& c : value)
      for (int64_t part :
           {int64_t(c.rank), int64_t(c.tag), c.shift.u, c.shift.v, int64_t(c.anyIndex)})
        hash = hash * 1000003 ^ size_t(part);
    return hash;
  }

  /// The same contributions, written alike (not a decision of the run: a copy).
  static bool identical(const Value& a, const Value& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const Contribution& x, const Contribution& y) {
                        return x.rank == y.rank && x.tag == y.tag && x.shift.identical(y.shift) &&
                               x.anyIndex == y.anyIndex;
                      });
  }

  /// After both have run: every user buffer the spec writes holds in this run what it holds in
  /// `spec`'s run of the configuration (the lowered program computes what the spec does). Reports
  /// the first difference.
  void compareWith(const SpecResult& spec) {
    std::vector<SpecSlot> slots = spec.slots; // cut below, as the spec's run's own would be
    for (size_t id = 0; id < program_.buffers.size(); ++id) {
      const ir::Buffer& buffer = program_.buffers[id];
      if (buffer.role != ir::BufferRole::Output && buffer.role != ir::BufferRole::Aux)
        continue;
      for (int r = 0; r < config_.nranks; ++r) {
        Slot& mine = slotAt(r, id, 0);
        SpecSlot& theirs = slots[size_t(spec.slotOf[id][size_t(r)])];
        // Cut both at each other's boundaries, then compare segment by segment.
        for (const SpecSegment& segment : theirs.segments)
          split(mine, segment.start);
        for (const Segment& segment : mine.segments)
          split(theirs, segment.start, spec.values);
        for (size_t i = 0; i < mine.segments.size(); ++i) {
          const Cell& got = mine.cellOf(i);
          const SpecSegment& want = theirs.segments[locate(theirs, mine.segments[i].start)];
          const Value& wantValue = spec.values[want.value];
          if (got.written == want.written && sameValue(got.value, wantValue))
            continue;
          const Affine element = mine.segments[i].start;
          fail(program_.loc, buffer.name + "[" + number(element) + "] on rank " +
                                 std::to_string(r) + " holds " +
                                 (got.written ? describe(got.value, element) : "nothing") +
                                 ", but the spec computes " +
                                 (want.written ? describe(wantValue, element) : "nothing"));
        }
      }
    }
  }

  /// After a run with a fixed count: the sources of every element of the output and aux buffers.
  FinalSources sources() {
    FinalSources all;
    for (size_t id = 0; id < program_.buffers.size(); ++id) {
      const ir::BufferRole role = program_.buffers[id].role;
      if (role != ir::BufferRole::Output && role != ir::BufferRole::Aux)
        continue;
      auto& ranks = all[ir::BufferId(id)];
      for (int r = 0; r < config_.nranks; ++r) {
        const Slot& slot = slotAt(r, id, 0);
        std::vector<ElementSources>& elements = ranks.emplace_back();
        for (size_t i = 0; i < slot.segments.size(); ++i) {
          const Cell& c = slot.cellOf(i);
          for (int64_t e = slot.segments[i].start.v; e < segmentEnd(slot, i).v; ++e) {
            if (!c.written) {
              elements.emplace_back();
              continue;
            }
            std::vector<Source> sources;
            for (const Contribution& from : c.value)
              sources.push_back(
                  {from.rank, from.tag, from.anyIndex ? 0 : e + from.shift.v, from.anyIndex});
            elements.emplace_back(std::move(sources));
          }
        }
      }
    }
    return all;
  }

private:
  bool sameValue(const Value& a, const Value& b) {
    if (a.size() != b.size())
      return false;
    bool same = true;
    for (size_t i = 0; i < a.size(); ++i)
      same &= a[i].rank == b[i].rank && a[i].tag == b[i].tag && a[i].anyIndex == b[i].anyIndex &&
              (a[i].anyIndex || arith_.equal(a[i].shift, b[i].shift));
    return same || sameMultiset(a, b, /*anyIndexMatters=*/true);
  }

  const RunConfig& config_;
  Diagnostics* diags_;
  RunFacts facts_;
  int64_t bytes_ = 0; // live memory of the run's elements (account)
  bool rowStep_ = false;
  std::set<int> waited_;
  std::vector<uint32_t> byTagRank_; // sameInput's order of the expected contributions
  Value expected_;                  // expectedAt's answer
  std::map<std::tuple<int64_t, int64_t, int64_t>, int> blocks_; // blockOf's answers, by element
  std::optional<ir::BarrierScope> barrier_; // the lowered step's barrier, if it has one
  // memory_[rank][buffer][slot], null until touched (slotAt); a buffer that is another's memory
  // (memoryOf_) has no slots of its own.
  std::vector<std::vector<std::vector<SlotPtr>>> memory_;
  std::vector<ir::BufferId> memoryOf_;
  std::vector<std::pair<int64_t, Affine>> shapes_; // per buffer: slots, elements a slot
  // The run of chunk 0 alone (config_.chunkZeroOnly): the chunks, the statements that move
  // elements walked so far (all, and chunk 0's), where chunk 0 of an n-element buffer ends, and
  // the place in every chunk's walk of the statement sumOnlyAt stands for.
  const ChunkRotation* rotation_ = nullptr;
  ChunkRotation ownRotation_; // where the configuration has none
  size_t walked_ = 0, chunkZeroWalked_ = 0;
  Affine chunkZeroEnd_;
  int sumOnlyPlace_ = 0;
};

} // namespace

FinalSources finalSources(const ir::Program& program, const std::vector<ir::Step>& steps,
                          const RunConfig& config) {
  if (!config.count.isConstant() || config.lowered || config.reference)
    internalError("finalSources runs a spec with a fixed count");
  Arith arith(false);
  Run run(program, steps, config, arith, nullptr);
  run.run();
  return run.sources();
}

namespace {

/// A kept run's configuration: the spec (its location, its steps expanded for the rank count),
/// everything of RunConfig its run reads, and how its Arith decides.
struct SpecRunKey {
  const char* spec;
  size_t steps;
  int nranks, root;
  int64_t countU, countV, countW, rowLength;
  std::vector<std::pair<ir::BufferId, ir::BufferId>> aliases;
  bool chunkZeroOnly;
  bool symbolic;
  std::optional<int64_t> start, residueStart;
  int64_t residueEnd;

  bool operator<(const SpecRunKey& o) const {
    return std::tie(spec, steps, nranks, root, countU, countV, countW, rowLength, aliases,
                    chunkZeroOnly, symbolic, start, residueStart, residueEnd) <
           std::tie(o.spec, o.steps, o.nranks, o.root, o.countU, o.countV, o.countW, o.rowLength,
                    o.aliases, o.chunkZeroOnly, o.symbolic, o.start, o.residueStart, o.residueEnd);
  }
};

} // namespace

/// A spec's rotation check: the spec, its steps' count, the rank count and the aliases.
using RotationKey =
    std::tuple<const char*, size_t, int, std::vector<std::pair<ir::BufferId, ir::BufferId>>>;

struct SpecRuns::Store {
  std::map<SpecRunKey, SpecResult> runs;
  int64_t bytes = 0;
  int64_t reused = 0;
  std::map<RotationKey, std::pair<std::string, ChunkRotation>> rotations;
  // The spec's walk of one rank count, kept for its checks with aliases: counts come one after
  // another, so only the last one's is kept.
  std::unique_ptr<ChunkWalks> walks;
  std::tuple<const char*, size_t, int> walksKey{nullptr, 0, 0};
};

SpecRuns::SpecRuns() : store_(std::make_unique<Store>()) {}
SpecRuns::~SpecRuns() = default;
size_t SpecRuns::kept() const {
  return store_->runs.size();
}
int64_t SpecRuns::reused() const {
  return store_->reused;
}

std::string SpecRuns::whySpecChunksAreNotRotations(
    const ir::Program& spec, const std::vector<ir::Step>& steps, int nranks,
    const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases, ChunkRotation* rotation) {
  const RotationKey key{spec.loc.getPointer(), steps.size(), nranks, aliases};
  auto it = store_->rotations.find(key);
  if (it == store_->rotations.end()) {
    const std::tuple<const char*, size_t, int> walksKey{spec.loc.getPointer(), steps.size(),
                                                        nranks};
    if (!store_->walks || store_->walksKey != walksKey) {
      store_->walks = std::make_unique<ChunkWalks>();
      store_->walksKey = walksKey;
    }
    std::pair<std::string, ChunkRotation> made;
    made.first =
        store_->walks->whyChunksAreNotRotations(spec, steps, nranks, aliases, &made.second);
    it = store_->rotations.emplace(key, std::move(made)).first;
  }
  if (rotation)
    *rotation = it->second.second;
  return it->second.first;
}

RunFacts simulate(const ir::Program& program, const std::vector<ir::Step>& steps,
                  const RunConfig& config, Arith& arith, Diagnostics* diags) {
  Run run(program, steps, config, arith, diags);
  if (!config.reference)
    return run.run();
  RunConfig specConfig = config;
  specConfig.lowered = false;
  specConfig.reference = nullptr;
  specConfig.specRuns = nullptr;
  specConfig.rotation = config.referenceRotation;
  specConfig.referenceRotation = nullptr;
  const SpecRunKey key{config.reference->loc.getPointer(),
                       config.referenceSteps->size(),
                       config.nranks,
                       config.root,
                       config.count.u,
                       config.count.v,
                       config.count.w,
                       config.rowLength,
                       config.aliases,
                       config.chunkZeroOnly,
                       arith.symbolic(),
                       arith.start(),
                       arith.residueStart(),
                       arith.residueEnd()};
  SpecRuns::Store* store = config.specRuns ? &config.specRuns->store() : nullptr;
  const auto kept = store ? store->runs.find(key) : std::map<SpecRunKey, SpecResult>::iterator();
  const SpecResult* spec = nullptr;
  SpecResult made;
  if (store && kept != store->runs.end()) {
    // The run would make the same comparisons and do the same work: past the budget it stops.
    if (config.budget > 0 && kept->second.work > config.budget)
      throw AffineError{"budget"};
    arith.adopt(kept->second.threshold, kept->second.limit, kept->second.residueLimit);
    spec = &kept->second;
    ++store->reused;
  } else {
    // Its comparisons are recorded apart, then here: the same record as when made here.
    Arith specArith = arith.fresh();
    Run specRun(*config.reference, *config.referenceSteps, specConfig, specArith, nullptr);
    int64_t work = 0;
    try {
      work = specRun.run().work;
    } catch (const RunFailed&) {
      internalError("the spec breaks a rule in a configuration its proof covers");
    } catch (...) {
      arith.adopt(specArith.threshold(), specArith.limit(), specArith.residueLimit());
      throw;
    }
    arith.adopt(specArith.threshold(), specArith.limit(), specArith.residueLimit());
    made = specRun.result();
    made.threshold = specArith.threshold();
    made.limit = specArith.limit();
    made.residueLimit = specArith.residueLimit();
    made.work = work;
    spec = &made;
    const int64_t bytes = made.bytes();
    if (store && store->bytes + bytes <= SpecRuns::kMaxBytes) {
      store->bytes += bytes;
      spec = &store->runs.emplace(key, std::move(made)).first->second;
    }
  }
  RunFacts facts = run.run();
  run.compareWith(*spec);
  return facts;
}

} // namespace collc::proof
