#include "compiler/verify/AcrossCalls.h"

#include "abi/CollectiveShapes.h"
#include "abi/collc_abi.h"
#include "compiler/Verifier.h"
#include "compiler/execute/CountCover.h"
#include "compiler/execute/Walker.h"
#include "compiler/ir/RowOps.h"
#include "compiler/verify/CallRenaming.h"
#include "compiler/verify/CallTrace.h"
#include "compiler/verify/ChunkGroups.h"
#include "compiler/verify/RootSymmetry.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace collc {
namespace {

using execute::Affine;
using execute::AffineError;
using execute::Arith;
using execute::SplitQ;

using calls::Configuration;
using calls::Event;
using calls::ReadRef;
using calls::SlotIds;
using calls::SlotKey;
using calls::Sources;

/// Which elements of a slot a statement touches in one walk.
struct Range {
  int slot = -1;
  Affine offset, length;
};

struct Trace {
  std::vector<Event> events;
  std::vector<bool> nonEmpty; // per event
  /// [event][read]: the earlier statements of the call whose writes overlap what the read reads
  /// (the data it may take, and with it what their writers knew).
  Sources sources;
};

/// Walks one call of the lowered program for one root and count and records its events.
class Tracer : public execute::Walker<Tracer, int> {
  friend class execute::Walker<Tracer, int>;

public:
  Tracer(const ir::Program& program, const execute::Shape& shape, Arith& arith, SlotIds& slotIds,
         std::vector<SlotKey>& slots)
      : Walker(program, program.steps, shape, arith), slotIds_(slotIds), slots_(slots) {}

  Trace run() {
    walk();
    // Which writes each read may take: overlapping ranges of the same slot, decided by the
    // same comparisons of affine positions as everything else in the walk.
    auto overlap = [&](const Range& a, const Range& b) {
      return a.slot == b.slot && arith_.less(a.offset, Arith::add(b.offset, b.length)) &&
             arith_.less(b.offset, Arith::add(a.offset, a.length));
    };
    trace_.sources.resize(trace_.events.size());
    if (!arith_.symbolic() && sourcesByNumbers())
      return std::move(trace_);
    std::map<int, std::vector<int>> writesOf; // slot -> the writes so far, in order
    for (size_t i = 0; i < trace_.events.size(); ++i) {
      trace_.sources[i].resize(reads_[i].size());
      if (!trace_.nonEmpty[i])
        continue;
      for (size_t k = 0; k < reads_[i].size(); ++k) {
        if (reads_[i][k].slot < 0)
          continue;
        for (int j : writesOf[reads_[i][k].slot])
          if (overlap(reads_[i][k], writes_[size_t(j)]))
            trace_.sources[i][k].push_back(j);
      }
      if (writes_[i].slot >= 0)
        writesOf[writes_[i].slot].push_back(int(i));
    }
    return std::move(trace_);
  }

private:
  /// The sources of a walk with numbers: each slot's writes so far by first element, so that a
  /// read finds those it overlaps without comparing it with every earlier write of its slot (a
  /// slot that every peer writes a chunk of, and every peer reads, is nranks^2 comparisons).
  /// False, with nothing done, where a range is not a number.
  bool sourcesByNumbers() {
    auto numbers = [](const Range& r) { return r.offset.isConstant() && r.length.isConstant(); };
    for (size_t i = 0; i < trace_.events.size(); ++i) {
      if (writes_[i].slot >= 0 && !numbers(writes_[i]))
        return false;
      for (const Range& read : reads_[i])
        if (read.slot >= 0 && !numbers(read))
          return false;
    }
    struct Written {
      std::multimap<int64_t, std::pair<int64_t, int>> byStart; // start -> (end, event)
      int64_t longest = 0;
    };
    std::unordered_map<int, Written> writesOf;
    for (size_t i = 0; i < trace_.events.size(); ++i) {
      trace_.sources[i].resize(reads_[i].size());
      if (!trace_.nonEmpty[i])
        continue;
      for (size_t k = 0; k < reads_[i].size(); ++k) {
        const Range& read = reads_[i][k];
        auto it = read.slot < 0 ? writesOf.end() : writesOf.find(read.slot);
        if (it == writesOf.end())
          continue;
        const int64_t start = read.offset.v, end = start + read.length.v;
        std::vector<int>& sources = trace_.sources[i][k];
        const auto& byStart = it->second.byStart;
        // Writes that start before the read ends and end after it starts.
        for (auto w = byStart.upper_bound(start - it->second.longest);
             w != byStart.end() && w->first < end; ++w)
          if (w->second.first > start)
            sources.push_back(w->second.second);
        std::sort(sources.begin(), sources.end()); // in the call's order
      }
      const Range& write = writes_[i];
      if (write.slot >= 0) {
        Written& written = writesOf[write.slot];
        written.byStart.emplace(write.offset.v,
                                std::make_pair(write.offset.v + write.length.v, int(i)));
        written.longest = std::max(written.longest, write.length.v);
      }
    }
    return true;
  }

  [[noreturn]] void fail(llvm::SMLoc, const std::string& message) {
    internalError("the proof across calls met a rule the single call's proof checks: " + message);
  }
  void beginStep(const ir::Step&) {}
  void beginRank() {}
  void onStatement() {}
  int64_t slotCount(int, ir::BufferId buffer) { return shape(buffer).first; }
  Affine slotSize(int, ir::BufferId buffer, int64_t) { return shape(buffer).second; }
  /// A buffer's slots and elements, evaluated once a walk (every rank's are alike).
  const std::pair<int64_t, Affine>& shape(ir::BufferId buffer) {
    if (shapes_.empty())
      shapes_.resize(program_.buffers.size());
    auto& known = shapes_[size_t(buffer)];
    if (!known)
      known = shapeOf(buffer);
    return *known;
  }

  Event& begin(llvm::SMLoc loc, const Affine& length) {
    reads_.emplace_back();
    writes_.emplace_back();
    Event& e = trace_.events.emplace_back();
    e.step = step_;
    e.rank = rank_;
    e.loc = loc;
    trace_.nonEmpty.push_back(arith_.less(Affine::constant(0), length));
    return e;
  }
  int slotOf(const execute::Place& p) {
    const SlotKey key{p.owner, p.buffer, p.slot};
    auto [it, added] = slotIds_.emplace(key, int(slots_.size()));
    if (added)
      slots_.push_back(key);
    return it->second;
  }
  /// What `o` reads; its range (of `length` elements from its offset) in `ranges`.
  ReadRef readOf(const ir::Operand& o, const execute::Env& env, const Affine* length,
                 std::vector<Range>& ranges) {
    ReadRef r;
    r.load = o.load;
    if (o.load == ir::LoadKind::Register) {
      r.reg = o.reg;
      ranges.push_back(Range{});
      return r;
    }
    const execute::Place p = place(o.region, env);
    r.slot = slotOf(p);
    ranges.push_back(Range{r.slot, p.offset, length ? *length : p.length});
    return r;
  }
  Range rangeOf(const execute::Place& p, int slot, const Affine& length) {
    return Range{slot, p.offset, length};
  }

  void barrier(const ir::Barrier& s) {
    Event& e = begin(s.loc, Affine::constant(1));
    e.barrier = true;
    e.fullBarrier = s.scope == ir::BarrierScope::Full;
  }
  void transfer(llvm::SMLoc loc, const ir::Operand& source, const ir::Region& target,
                const execute::Env& env) {
    const Affine length = place(source.region, env).length;
    std::vector<Range> ranges;
    ReadRef read = readOf(source, env, &length, ranges);
    const execute::Place to = place(target, env);
    const int written = slotOf(to);
    Event& e = begin(loc, length);
    e.reads.push_back(read);
    e.writeSlot = written;
    reads_.back() = std::move(ranges);
    writes_.back() = rangeOf(to, written, length);
  }
  void put(const ir::Put& s, const execute::Env& env) { transfer(s.loc, s.source, s.target, env); }
  void atomicAdd(const ir::AtomicAdd& s, const execute::Env& env) {
    transfer(s.loc, s.source, s.target, env);
  }
  void let(const ir::Let& s, const execute::Env& env) {
    const Affine length = place(s.value.region, env).length;
    std::vector<Range> ranges;
    ReadRef read = readOf(s.value, env, &length, ranges);
    Event& e = begin(s.loc, length);
    e.reads.push_back(read);
    e.keep = s.reg;
    reads_.back() = std::move(ranges);
  }
  void assign(const ir::Assign& s, execute::Env& env) {
    const execute::Place target = place(s.target, env);
    std::vector<ReadRef> reads;
    std::vector<Range> ranges;
    forEachOperand(s, env, [&](const ir::Operand& o, bool) {
      reads.push_back(readOf(o, env, &target.length, ranges));
    });
    const int written = slotOf(target);
    Event& e = begin(s.loc, target.length);
    e.reads = std::move(reads);
    e.writeSlot = written;
    e.keep = s.keep;
    reads_.back() = std::move(ranges);
    writes_.back() = rangeOf(target, written, target.length);
  }
  void row(const ir::RowStmt& s, const execute::Env& env) {
    const execute::Place target = place(s.target, env);
    std::vector<Range> ranges;
    std::vector<ReadRef> reads = {readOf(s.rows, env, &target.length, ranges)};
    const ir::RowOpInfo& info = ir::rowOpInfo(s.op);
    std::vector<const ir::Operand*> writtenParams;
    for (size_t k = 0; k < s.params.size(); ++k) {
      if (k < info.params.size() && info.params[k].access == ir::RowParamAccess::Written)
        writtenParams.push_back(&s.params[k]);
      else
        reads.push_back(readOf(s.params[k], env, nullptr, ranges));
    }
    const int written = slotOf(target);
    Event& e = begin(s.loc, target.length);
    e.reads = reads;
    e.writeSlot = written;
    reads_.back() = ranges;
    writes_.back() = rangeOf(target, written, target.length);
    // A written parameter (a per-token scale) is a second write of the statement, from the same
    // reads: an event of its own, as one event writes one slot.
    for (const ir::Operand* param : writtenParams) {
      const execute::Place paramPlace = place(param->region, env);
      const int slot = slotOf(paramPlace);
      Event& extra = begin(s.loc, target.length);
      extra.reads = reads;
      extra.writeSlot = slot;
      reads_.back() = ranges;
      writes_.back() = rangeOf(paramPlace, slot, paramPlace.length);
    }
  }

  SlotIds& slotIds_;
  std::vector<SlotKey>& slots_;
  Trace trace_;
  std::vector<std::vector<Range>> reads_;                         // per event, per read
  std::vector<Range> writes_;                                     // per event (slot -1: none)
  std::vector<std::optional<std::pair<int64_t, Affine>>> shapes_; // shape()
};

/// Per rank, the position of each rank's run below which every access of that rank is known to
/// be complete: call * (steps + 1) + step (accesses of earlier calls, and of earlier steps of
/// that call). A rank's knowledge is a row of nranks positions; the rows of all ranks are kept
/// flat ([rank * nranks + r]) in buffers a proof reuses from call to call.
void join(int64_t* into, const int64_t* more, size_t n) {
  for (size_t r = 0; r < n; ++r)
    into[r] = std::max(into[r], more[r]);
}
void meet(int64_t* into, const int64_t* more, size_t n) {
  for (size_t r = 0; r < n; ++r)
    into[r] = std::min(into[r], more[r]);
}

struct Access {
  int rank = 0, call = 0, step = 0;
  bool write = false;
  llvm::SMLoc loc;
};

/// Every access of scratch by copy: [slot * copies + copy].
using Log = std::vector<std::vector<Access>>;

/// What calls 1..j left: each rank's knowledge when its next call starts, and every access of
/// scratch by copy. Only a call that logs changes the log, so states share it until then.
struct State {
  std::vector<int64_t> start; // [rank * nranks + r]
  std::shared_ptr<const Log> log;
  int logId = 0; // equal logs have equal ids (CallsProof::internLog)
};

/// FNV-1a over 64-bit words, its high bits folded into the low ones that buckets use: the hash of
/// the states and classes the proof looks up.
class Fnv {
public:
  void mix(uint64_t v) { h_ = (h_ ^ v) * 1099511628211ull; }
  size_t value() const { return size_t(h_ ^ (h_ >> 29)); }

private:
  uint64_t h_ = 1469598103934665603ull;
};

/// A hash of a state's key (CallsProof::keyOf) for the states met before.
struct KeyHash {
  size_t operator()(const std::vector<int64_t>& key) const {
    Fnv h;
    for (int64_t v : key)
      h.mix(uint64_t(v));
    return h.value();
  }
};

struct Overlap {
  int call = 0; // the later call (0-based)
  const Event* event = nullptr;
  Access earlier;
  int slot = 0, copy = 0;
  bool clearing = false; // the later access is a poll that clears, or a take that zeroes
};

/// Work one proof may do (statements of the calls it runs): past it the variant is refused, as a
/// spec past the verifier's work budget is (the stdlib's variants at 2..8 ranks take at most a few
/// million).
constexpr int64_t kMaxWork = 50000000;

/// A hash of what tells one call's classes apart (collectConfigurations).
size_t classHash(int root, const std::vector<bool>& nonEmpty, const Sources& sources) {
  Fnv h;
  h.mix(uint64_t(root));
  for (bool b : nonEmpty)
    h.mix(b ? 1 : 2);
  for (const auto& event : sources) {
    h.mix(0x100);
    for (const auto& read : event) {
      h.mix(0x200);
      for (int write : read)
        h.mix(uint64_t(uint32_t(write)));
    }
  }
  return h.value();
}

class CallsProof {
public:
  CallsProof(const ir::Program& program, int nranks, const CallRotation& rotation,
             Diagnostics& diags, const AcrossCallsOptions& options)
      : program_(program), nranks_(nranks), rotation_(rotation), diags_(diags), options_(options),
        calls_(rotation.copies + 1) {}

  bool run(AcrossCallsStats* stats) {
    // Two shortcuts first, each a proof where it passes (quiet otherwise), then the classes of
    // every count, which report what they find.
    bool decided = false, flagsBroken = false;
    // Without barriers a rank knows of its peers only what data tells it, which the covering
    // class takes from no read: there it passes only where no write meets a peer's access of an
    // earlier call, so it is not tried.
    if (options_.coverFirst && program_.barriers > 0 && collectCover()) {
      decided = passesQuietly(flagsBroken);
      if (stats)
        stats->coveredByOneClass = decided;
    }
    if (!decided && !flagsBroken && proof::chunkGroupsOn() && options_.chunkPairs) {
      int64_t callsRun = 0, sequences = 0;
      int renamedPairs = 0;
      decided = chunkPairsPass(flagsBroken, callsRun, sequences, renamedPairs);
      if (stats) {
        stats->coveredByChunkPairs = decided;
        stats->renamedPairs = decided ? renamedPairs : 0;
      }
      if (decided) {
        callsRun_ = callsRun;
        sequences_ = sequences;
      }
    }
    if (!decided && !flagsBroken && proof::chunkGroupsOn()) {
      reset();
      if (chunkClasses()) {
        decided = passesQuietly(flagsBroken);
        if (stats)
          stats->coveredByChunkClasses = decided;
      }
    }
    if (flagsBroken)
      return false;
    bool ok = true;
    if (!decided) {
      reset();
      ok = collectConfigurations() && checkFlags() && exploreAll();
    }
    if (stats) {
      stats->calls = calls_;
      stats->configurations = int(configurations_.size());
      stats->sequences += sequences_;
      stats->callsRun += callsRun_;
      stats->firstCallRoots = firstCallRoots_;
    }
    return ok;
  }

private:
  /// Every sequence of k calls from an instance's first: false (after reporting, unless quiet_)
  /// at the first pair of calls that disturb each other.
  bool exploreAll() {
    chooseFirstCalls();
    visited_.assign(size_t(calls_), {});
    State initial;
    initial.start.assign(size_t(nranks_) * size_t(nranks_), 0);
    auto log = std::make_shared<Log>(slots_.size() * size_t(rotation_.copies));
    initial.logId = internLog(*log);
    initial.log = std::move(log);
    std::vector<int> chosen;
    return explore(initial, 0, chosen);
  }

  /// Runs every sequence of the classes just made, reporting nothing: whether all pass. A flag
  /// that repeats ends the proof (`flagsBroken`; checkFlags reports it): it reads only the calls'
  /// events, the same whatever the classes.
  bool passesQuietly(bool& flagsBroken) {
    if (!checkFlags()) {
      flagsBroken = true;
      return false;
    }
    quiet_ = true;
    const bool passed = exploreAll();
    quiet_ = false;
    return passed;
  }

  /// Forgets the classes and sequences of an earlier attempt.
  void reset() {
    skeletons_.clear();
    configurations_.clear();
    firstCalls_.clear();
    visited_.clear();
    logIds_.clear();
    sequences_ = callsRun_ = work_ = 0;
  }

  // ------------------------------------------------------------------ one class covering all
  /// For each root, one class in which every statement touches elements and no read learns
  /// anything from the data it takes. Against any class of the same root, it runs every access
  /// that class runs (and more), and each rank knows at most what it knows there: knowledge comes
  /// from the start of a call (by induction no more than there), barriers (the same in both) and
  /// the data reads take (none here). A write is checked against the accesses earlier calls
  /// logged, each rank's latest access of a copy in a call (here at the same step or later); so a
  /// write this class finds ordered is ordered in every class, and every sequence of classes
  /// passes where the sequences of these pass. Where they do not (a strategy whose ranks learn
  /// from data alone), the proof runs the classes themselves (collectConfigurations).
  bool collectCover() {
    const int roots = hasRoot(program_.kind) ? nranks_ : 1;
    skeletons_.assign(size_t(roots), {});
    try {
      for (int root = 0; root < roots; ++root) {
        // The statements a call runs do not depend on its count (n decides nothing but sizes):
        // any count gives the skeleton and every slot a call names.
        Arith arith(/*symbolic=*/false);
        execute::Shape shape{
            nranks_, root, Affine::constant(1), program_.rowLengthName.empty() ? 0 : 1, {}};
        Tracer tracer(program_, shape, arith, slotIds_, slots_);
        Trace trace = tracer.run();
        Configuration every{root, 1, std::vector<bool>(trace.events.size(), true), {}};
        every.sources.resize(trace.events.size());
        for (size_t i = 0; i < trace.events.size(); ++i)
          every.sources[i].resize(trace.events[i].reads.size());
        skeletons_[size_t(root)] = std::move(trace.events);
        configurations_.push_back(std::move(every));
      }
    } catch (const AffineError&) {
      return false; // the classes themselves are run, and say why
    }
    return true;
  }

  // ------------------------------------------------------------------ classes of chunks
  /// A program that keeps the chunks of chunk(n) apart (verify/ChunkGroups.h): each statement that
  /// moves elements touches those of one chunk k, of n-element buffers and of slots of chunk k
  /// alone. It touches elements exactly where chunk k does, that is where k < m, m the number of
  /// chunks that hold elements (chunk k starts at min(n, k * chunk_size(n))). What a read may take
  /// is then the earlier writes of its slot of its chunk that touch elements: in a slot of chunk
  /// k both are its first chunk_len(n, k) elements, in an n-element buffer chunk k's, and distinct
  /// chunks that hold elements do not overlap. So a count's class is the class of its m, made
  /// here for m = 1 .. nranks from one walk at a count where every chunk holds elements. (An m no
  /// count has would only add sequences to prove.) False where the premise does not hold.
  bool chunkClasses() {
    const int roots = hasRoot(program_.kind) ? nranks_ : 1;
    skeletons_.assign(size_t(roots), {});
    try {
      for (int root = 0; root < roots; ++root) {
        Trace trace;
        std::vector<int> chunkOf;
        if (!traceByChunk(root, trace, chunkOf))
          return false;
        for (int m = 1; m <= nranks_; ++m) {
          Configuration c{root, 0, std::vector<bool>(trace.events.size()), {}};
          c.sources.resize(trace.events.size());
          for (size_t e = 0; e < trace.events.size(); ++e) {
            c.nonEmpty[e] = chunkOf[e] < m;
            c.sources[e].resize(trace.sources[e].size());
            if (!c.nonEmpty[e])
              continue;
            for (size_t r = 0; r < trace.sources[e].size(); ++r)
              for (int write : trace.sources[e][r])
                if (chunkOf[size_t(write)] < m)
                  c.sources[e][r].push_back(write);
          }
          configurations_.push_back(std::move(c));
        }
        skeletons_[size_t(root)] = std::move(trace.events);
      }
    } catch (const AffineError&) {
      return false; // the classes themselves are run, and say why
    }
    return true;
  }

  /// One call of `root` at a count where every chunk holds elements, and the chunk of each of its
  /// events (barriers: -1): false where the program does not keep chunks apart.
  bool traceByChunk(int root, Trace& trace, std::vector<int>& chunkOf) {
    std::vector<int> chunks;
    if (!(root == 0 && options_.chunkWalks
              ? options_.chunkWalks->whyChunksMix(program_, program_.steps, nranks_, &chunks)
              : proof::whyChunksMix(program_, program_.steps, nranks_, root, {}, &chunks))
             .empty())
      return false;
    // chunk_size is 8 * nranks, so chunk nranks - 1 starts at 8 * nranks * (nranks - 1).
    Arith arith(/*symbolic=*/false);
    const int64_t full = int64_t(8) * nranks_ * nranks_;
    execute::Shape shape{nranks_, root, Affine::constant(full), 0, {}};
    Tracer tracer(program_, shape, arith, slotIds_, slots_);
    trace = tracer.run();
    // Each statement's chunk, by event, in the order both walks run them.
    chunkOf.assign(trace.events.size(), -1);
    size_t next = 0;
    for (size_t e = 0; e < trace.events.size(); ++e) {
      if (trace.events[e].barrier)
        continue;
      if (next == chunks.size() || !trace.nonEmpty[e])
        return false;
      chunkOf[e] = chunks[next++];
    }
    return next == chunks.size();
  }

  // ------------------------------------------------------------------ chunk 0 and chunk k
  /// A program without a root that keeps chunks apart (ChunkGroups.h): a slot of chunk k is
  /// touched by chunk k's events alone, so its checks are those of chunk k's writes and clearing
  /// polls against chunk k's logged accesses. A rank's knowledge only grows with the events a call
  /// runs (the start of a call, barriers, the data a read takes: joins; of several writes a read
  /// may take, the meet of what their writers knew, the same writes either way), so chunk k's
  /// events with fewer other events around them know no more than in the whole call: where they
  /// pass, the whole call passes. In a call, chunk k's events all touch elements or none do, as
  /// chunk k holds elements or not, and chunk 0 always holds some (n >= 1). So for each k from 1,
  /// the sequences of two classes of the events of chunks 0 and k with every barrier, chunk 0
  /// holding elements and chunk k holding them or not, decide the slots of chunk k for every
  /// sequence of counts, and those of chunk 0 with them. (Chunk 0 carries what ranks learn of
  /// each other where chunk k is empty: a two-shot's reduce of chunk 0 reads every rank's data.)
  /// False where the premise does not hold or some k does not pass; `callsRun` and `sequences`
  /// add up those of every k.
  bool chunkPairsPass(bool& flagsBroken, int64_t& callsRun, int64_t& sequences, int& renamedPairs) {
    if (hasRoot(program_.kind) || nranks_ < 2)
      return false;
    Trace trace;
    std::vector<int> chunkOf;
    if (!traceByChunk(0, trace, chunkOf))
      return false;
    // Pair 1's events and classes, which pair k's may be with ranks 1 and k swapped.
    const calls::CallRenaming renaming(trace.events, slots_, slotIds_);
    std::vector<int> firstKept;
    std::vector<Configuration> firstClasses;
    int64_t firstSequences = 0;
    std::vector<int> swapped(static_cast<size_t>(nranks_));
    // The events of each chunk (barriers first, as chunk -1), in the call's order.
    std::vector<std::vector<int>> byChunk(size_t(nranks_) + 1);
    for (size_t e = 0; e < trace.events.size(); ++e)
      byChunk[size_t(chunkOf[e] + 1)].push_back(int(e));
    std::vector<int> indexOf(trace.events.size(), -1), zeroAndBarriers;
    std::merge(byChunk[0].begin(), byChunk[0].end(), byChunk[1].begin(), byChunk[1].end(),
               std::back_inserter(zeroAndBarriers));
    std::vector<Configuration> classes(2, Configuration{0, 0, {}, {}});
    for (int k = 1; k < nranks_; ++k) {
      // The events of chunks 0 and k and every barrier, in the call's order.
      std::vector<int> kept;
      kept.reserve(zeroAndBarriers.size() + byChunk[size_t(k) + 1].size());
      std::merge(zeroAndBarriers.begin(), zeroAndBarriers.end(), byChunk[size_t(k) + 1].begin(),
                 byChunk[size_t(k) + 1].end(), std::back_inserter(kept));
      for (size_t i = 0; i < kept.size(); ++i)
        indexOf[size_t(kept[i])] = int(i);
      struct Forget {
        std::vector<int>& indexOf;
        const std::vector<int>& kept;
        ~Forget() {
          for (int e : kept)
            indexOf[size_t(e)] = -1;
        }
      } forget{indexOf, kept};
      // Chunk 0 and chunk k holding elements; chunk 0 alone (chunk k's reads then take nothing).
      // Made over the last pair's lists, which hold as many reads as these, mostly.
      Configuration& both = classes[0];
      Configuration& chunkZero = classes[1];
      both.nonEmpty.assign(kept.size(), true);
      chunkZero.nonEmpty.assign(kept.size(), true);
      both.sources.resize(kept.size());
      chunkZero.sources.resize(kept.size());
      for (size_t i = 0; i < kept.size(); ++i) {
        const size_t e = size_t(kept[i]);
        chunkZero.nonEmpty[i] = chunkOf[e] != k;
        both.sources[i].resize(trace.sources[e].size());
        chunkZero.sources[i].resize(trace.sources[e].size());
        for (size_t r = 0; r < trace.sources[e].size(); ++r) {
          both.sources[i][r].clear();
          chunkZero.sources[i][r].clear();
          for (int write : trace.sources[e][r]) {
            // A read takes writes of its own slot, so of its own chunk.
            if (indexOf[size_t(write)] < 0 || chunkOf[size_t(write)] != chunkOf[e])
              return false;
            both.sources[i][r].push_back(indexOf[size_t(write)]);
          }
          if (chunkZero.nonEmpty[i])
            chunkZero.sources[i][r] = both.sources[i][r];
        }
      }
      if (k > 1 && options_.pairRenaming) {
        for (int x = 0; x < nranks_; ++x)
          swapped[size_t(x)] = x == 1 ? k : x == k ? 1 : x;
        if (renaming.isRenaming(swapped, firstKept, firstClasses, kept, classes)) {
          sequences += firstSequences;
          ++renamedPairs;
          continue;
        }
      }
      if (k == 1) {
        firstKept = kept;
        firstClasses = classes;
      }
      if (!explorePair(kept, trace.events, classes, flagsBroken))
        return false;
      callsRun += callsRun_;
      sequences += sequences_;
      if (k == 1)
        firstSequences = sequences_;
    }
    return true;
  }

  /// Runs the sequences of `classes` of the events `kept` picks from `events`, naming only the
  /// slots those events name: a call copies and compares O(nranks) lists of accesses rather than
  /// one for every slot of the call. Whether all pass (reporting nothing).
  bool explorePair(const std::vector<int>& kept, const std::vector<Event>& events,
                   std::vector<Configuration> classes, bool& flagsBroken) {
    reset();
    // The call's slots come back when the pair is done.
    struct Restore {
      std::vector<SlotKey>& slots;
      std::vector<SlotKey> all;
      ~Restore() { slots = std::move(all); }
    } restore{slots_, std::move(slots_)};
    const std::vector<SlotKey>& allSlots = restore.all;
    std::vector<int> slotIndex(allSlots.size(), -1);
    slots_.clear();
    auto renumbered = [&](int slot) {
      if (slot < 0)
        return slot;
      if (slotIndex[size_t(slot)] < 0) {
        slotIndex[size_t(slot)] = int(slots_.size());
        slots_.push_back(allSlots[size_t(slot)]);
      }
      return slotIndex[size_t(slot)];
    };
    std::vector<Event> picked;
    picked.reserve(kept.size());
    for (int e : kept) {
      picked.push_back(events[size_t(e)]);
      Event& event = picked.back();
      for (ReadRef& read : event.reads)
        read.slot = renumbered(read.slot);
      event.writeSlot = renumbered(event.writeSlot);
    }
    skeletons_ = {std::move(picked)};
    configurations_ = std::move(classes);
    return passesQuietly(flagsBroken);
  }

  /// Calls are named by their epoch (the first call of an instance is call 1).
  uint64_t epochOf(int call) const { return rotation_.firstEpoch + uint64_t(call); }

  int64_t position(int call, int step) const {
    return int64_t(call) * int64_t(program_.steps.size() + 1) + step;
  }

  std::string lead() const {
    return "sync strategy '" + std::string(name(program_.sync)) + "' cannot synchronize '" +
           program_.name + "' across calls: ";
  }

  // ------------------------------------------------------------------ one call's classes
  /// Every class a call can fall in over every count n >= 1 (its root, which statements touch no
  /// element, which writes each read may take): the verifier's runs with n symbolic
  /// (execute/CountCover.h; a class is decided by comparisons of affine positions, the same for
  /// every count a run decides).
  bool collectConfigurations() {
    const int roots = hasRoot(program_.kind) ? nranks_ : 1;
    skeletons_.assign(size_t(roots), {});
    // The classes met so far, by a hash of what tells them apart: most walks meet one again, and
    // compare with it without a copy.
    std::unordered_multimap<size_t, size_t> seen; // hash -> index into configurations_
    auto record = [&](int root, int64_t count, Trace trace) {
      // The root may decide what runs; the count does not.
      auto& skeleton = skeletons_[size_t(root)];
      if (skeleton.empty())
        skeleton = std::move(trace.events);
      else if (skeleton.size() != trace.events.size())
        internalError("a count changed which statements a call runs");
      const size_t hash = classHash(root, trace.nonEmpty, trace.sources);
      for (auto [it, end] = seen.equal_range(hash); it != end; ++it) {
        const Configuration& met = configurations_[it->second];
        if (met.root == root && met.nonEmpty == trace.nonEmpty && met.sources == trace.sources)
          return;
      }
      seen.emplace(hash, configurations_.size());
      configurations_.push_back(
          Configuration{root, count, std::move(trace.nonEmpty), std::move(trace.sources)});
    };
    auto walk = [&](int root, Affine count, Arith& arith) {
      execute::Shape shape{nranks_, root, count, program_.rowLengthName.empty() ? 0 : 1, {}};
      Tracer tracer(program_, shape, arith, slotIds_, slots_);
      return tracer.run();
    };
    // Classes of n modulo a period, first 1, split where a division needs it, and the smaller
    // counts, as the one-call proof runs them (execute/CountCover.h): together they decide every
    // n >= 1, and a spec free of chunk(n) needs one class where it needed 8 * nranks before.
    int64_t period = 1;
    try {
      for (int root = 0; root < roots; ++root) {
        auto large = [&](const Affine& count, Arith& arith) {
          Trace trace = walk(root, count, arith);
          record(root, execute::firstCountOf(count, arith), std::move(trace));
          return true;
        };
        // A stretch of counts: a walk with n symbolic, each comparison decided as at its first
        // count; with numbers where such a walk cannot be made.
        auto stretch = [&](const Affine& count, Arith& arith, int64_t first) {
          try {
            record(root, first, walk(root, count, arith));
            return execute::Covered::Stretch;
          } catch (const SplitQ&) {
          } catch (const AffineError&) {
          }
          Arith concrete(/*symbolic=*/false);
          record(root, first, walk(root, Affine::constant(first), concrete));
          return execute::Covered::FirstOnly;
        };
        execute::coverCounts(period, large, stretch);
      }
    } catch (const AffineError& error) {
      diags_.error(program_.loc, lead() + "the proof across calls cannot run it (" + error.why +
                                     ", nranks=" + std::to_string(nranks_) + ")");
      return false;
    }
    return true;
  }

  // ------------------------------------------------------------------ flags
  /// No poll of a call can be satisfied by what an earlier call using the same copy left (its
  /// packets or lines, with their flag), or by the zeros scratch starts with: whatever count an
  /// earlier call had, any packet of the copy may still be its (a smaller later call does not
  /// overwrite it). Checked for the calls 1..k; the flags' period is the README's bound.
  bool checkFlags() {
    std::set<int> done;
    for (const std::vector<Event>& skeleton : skeletons_)
      for (const Event& e : skeleton)
        for (const ReadRef& read : e.reads) {
          if (read.slot < 0)
            continue;
          const ir::BufferId buffer = slots_[size_t(read.slot)].buffer;
          const bool packet = read.load == ir::LoadKind::PollPacket;
          if (!(packet || read.load == ir::LoadKind::PollLine) || !done.insert(buffer).second)
            continue;
          const auto& flag = packet ? rotation_.packetFlag : rotation_.lineFlag;
          const char* unit = packet ? "packet" : "line";
          const std::string& bufferName = program_.buffers[size_t(buffer)].name;
          for (int later = 0; later < calls_; ++later) {
            const uint64_t epoch = rotation_.firstEpoch + uint64_t(later);
            if (epoch > rotation_.lastEpoch)
              break; // refused: it polls nothing
            const uint64_t mine = flag(epoch);
            if (mine == 0) {
              diags_.error(e.loc, lead() + "call " + std::to_string(epoch) + "'s poll of '" +
                                      bufferName +
                                      "' can be satisfied by the zeros scratch starts "
                                      "with: the call's " +
                                      unit + "s carry flag 0");
              return false;
            }
            for (int earlier = 0; earlier < later; ++earlier) {
              const uint64_t before = rotation_.firstEpoch + uint64_t(earlier);
              if (before % uint64_t(rotation_.copies) != epoch % uint64_t(rotation_.copies) ||
                  flag(before) != mine)
                continue;
              diags_.error(
                  e.loc, lead() + "call " + std::to_string(epoch) + "'s poll of '" + bufferName +
                             "' can be satisfied by call " + std::to_string(before) + "'s " + unit +
                             ": both use scratch copy " +
                             std::to_string(epoch % uint64_t(rotation_.copies)) +
                             " and carry flag " + std::to_string(mine) + ", and call " +
                             std::to_string(epoch) + " may be smaller than call " +
                             std::to_string(before) + ", which leaves its " + unit + "s in place");
              return false;
            }
          }
        }
    return true;
  }

  // ------------------------------------------------------------------ the first call's classes
  /// The classes a sequence starts with: every class, or root 0's alone where every root's are
  /// root 0's with the ranks renamed (RootSymmetry.h): a sequence from root r0, renamed back by
  /// r0, is one from root 0, and nothing in runCall tells one rank or slot from another but the
  /// events.
  void chooseFirstCalls() {
    const bool fromRootZero =
        options_.rootSymmetry && hasRoot(program_.kind) &&
        calls::rootsAreRotations(nranks_, skeletons_, configurations_, slots_);
    firstCalls_.clear();
    for (size_t c = 0; c < configurations_.size(); ++c)
      if (!fromRootZero || configurations_[c].root == 0)
        firstCalls_.push_back(c);
    firstCallRoots_ = fromRootZero || !hasRoot(program_.kind) ? 1 : nranks_;
  }

  // ------------------------------------------------------------------ sequences of calls
  /// Every sequence of classes from `state` on. What the later calls find depends on nothing
  /// but the state a call leaves (and its number), so a state met before at the same call is
  /// not run again: the sequences through it were.
  bool explore(const State& state, int call, std::vector<int>& chosen) {
    // A call past the last one returns at its head, and so does every later call: none of them
    // touches scratch, so nothing they do can disturb a call or be disturbed.
    if (call == calls_ || epochOf(call) > rotation_.lastEpoch) {
      ++sequences_;
      return true;
    }
    if (!visited_[size_t(call)].insert(keyOf(state)).second) {
      ++sequences_;
      return true;
    }
    State next;
    const size_t choices = call == 0 ? firstCalls_.size() : configurations_.size();
    for (size_t choice = 0; choice < choices; ++choice) {
      const size_t c = call == 0 ? firstCalls_[choice] : choice;
      ++callsRun_;
      work_ += int64_t(skeletons_[size_t(configurations_[c].root)].size());
      if (work_ > kMaxWork) {
        if (quiet_)
          return false;
        diags_.error(program_.loc, lead() + "proving it takes more than " +
                                       std::to_string(kMaxWork) + " steps of work (" +
                                       std::to_string(callsRun_) + " calls of " +
                                       std::to_string(configurations_.size()) +
                                       " classes, nranks=" + std::to_string(nranks_) +
                                       "); collc refuses a variant it cannot prove in that");
        return false;
      }
      chosen.push_back(int(c));
      if (!runCall(state, next, call, configurations_[c])) {
        if (!quiet_)
          report(chosen);
        return false;
      }
      if (!explore(next, call + 1, chosen))
        return false;
      chosen.pop_back();
    }
    return true;
  }

  /// A state as the states met before are told apart: its log's id and every start.
  static std::vector<int64_t> keyOf(const State& state) {
    std::vector<int64_t> key;
    key.reserve(1 + state.start.size());
    key.push_back(state.logId);
    key.insert(key.end(), state.start.begin(), state.start.end());
    return key;
  }

  /// The id of a log: equal logs (every list, entry by entry) have equal ids.
  int internLog(const Log& log) {
    std::vector<int64_t> key;
    for (const auto& list : log) {
      key.push_back(-1 - int64_t(list.size()));
      for (const Access& a : list) {
        key.insert(key.end(), {a.rank, a.call, a.step, a.write ? 1 : 0});
        key.push_back(int64_t(reinterpret_cast<intptr_t>(a.loc.getPointer())));
      }
    }
    return logIds_.emplace(std::move(key), int(logIds_.size())).first->second;
  }

  int64_t* row(std::vector<int64_t>& rows, int rank) const {
    return rows.data() + size_t(rank) * size_t(nranks_);
  }

  /// Runs call `call` (0-based; epoch call + 1) on `from`, leaving what it leaves in `next`;
  /// false at the first write that nothing orders after an earlier call's access of the same
  /// scratch copy (in overlap_).
  bool runCall(const State& from, State& next, int call, const Configuration& config) {
    const size_t n = size_t(nranks_);
    const int copy = int(epochOf(call) % uint64_t(rotation_.copies));
    // Per rank, as its threads go: start, barriers.
    known_ = from.start;
    for (int r = 0; r < nranks_; ++r)
      row(known_, r)[r] = position(call, 0);
    // What every rank knew at its start, joined once: a barrier passes all of it on.
    allStarts_.assign(n, 0);
    for (int r = 0; r < nranks_; ++r)
      join(allStarts_.data(), row(known_, r), n);
    // What each rank gains in the call, the start of its next: kept in `next` as it grows.
    std::vector<int64_t>& gainedRows = next.start;
    gainedRows = known_;
    const std::vector<Event>& skeleton = skeletons_[size_t(config.root)];
    writerKnew_.resize(skeleton.size() * n); // what each write's thread knew
    value_.resize(n);
    readKnown_.resize(n);
    // The log this call adds to: the one it found until it logs something.
    next.log = from.log;
    next.logId = from.logId;
    Log* written = nullptr;
    auto logTo = [&](int slot, const Access& access) {
      if (!written) {
        auto copied = std::make_shared<Log>(*from.log);
        written = copied.get();
        next.log = std::move(copied);
      }
      log(*written, slot, copy, access);
    };
    registers_.clear(); // the registers of one rank's step: (name, knowledge)
    int registerStep = -1, registerRank = -1;
    for (size_t i = 0; i < skeleton.size(); ++i) {
      const Event& e = skeleton[i];
      int64_t* mine = row(known_, e.rank);
      int64_t* gained = row(gainedRows, e.rank);
      if (e.step != registerStep || e.rank != registerRank) {
        registers_.clear();
        registerStep = e.step;
        registerRank = e.rank;
      }
      if (e.barrier) {
        // Every rank reached this barrier of this call, so each has finished its previous calls
        // (a kernel starts when the one before it has finished), and a full barrier says every
        // block has finished the steps before it. A per-block barrier says so of block b for
        // block b: once every block of this rank has passed it (at its next call), of all.
        for (size_t r = 0; r < n; ++r)
          mine[r] = std::max(mine[r], position(call, e.fullBarrier ? e.step : 0));
        join(mine, allStarts_.data(), n);
        join(gained, mine, n);
        for (size_t r = 0; r < n; ++r)
          gained[r] = std::max(gained[r], position(call, e.step));
        continue;
      }
      if (!config.nonEmpty[i])
        continue;
      // What the thread knows when it writes: its rank's, and what the data it read carries.
      int64_t* value = value_.data();
      std::copy(mine, mine + n, value);
      for (size_t k = 0; k < e.reads.size(); ++k) {
        const ReadRef& read = e.reads[k];
        if (!read.reg.empty()) {
          for (const auto& [name, known] : registers_)
            if (*name == read.reg)
              join(value, known.data(), n);
        } else if (read.slot >= 0) {
          joinKnowledgeOfRead(config, i, k, value);
        }
      }
      join(gained, value, n);
      if (!e.keep.empty()) {
        auto it = std::find_if(registers_.begin(), registers_.end(),
                               [&](const auto& entry) { return *entry.first == e.keep; });
        if (it == registers_.end())
          registers_.push_back({&e.keep, value_});
        else
          it->second = value_;
      }
      for (const ReadRef& read : e.reads) {
        if (read.slot < 0 || !isScratch(read.slot))
          continue;
        const bool clears =
            read.load == ir::LoadKind::PollSentinel || read.load == ir::LoadKind::TakeLine;
        if (clears && !ordered(*from.log, call, e, read.slot, copy, value, true))
          return false;
        if (checkedLater(call))
          logTo(read.slot, Access{e.rank, call, e.step, clears, e.loc});
      }
      if (e.writeSlot >= 0) {
        // User buffers are the caller's between calls; within one they carry what was known.
        if (isScratch(e.writeSlot)) {
          if (!ordered(*from.log, call, e, e.writeSlot, copy, value, false))
            return false;
          if (checkedLater(call))
            logTo(e.writeSlot, Access{e.rank, call, e.step, true, e.loc});
        }
        std::copy(value, value + n, writerKnew_.data() + i * n);
      }
    }
    if (written)
      next.logId = internLog(*written);
    for (int r = 0; r < nranks_; ++r)
      row(next.start, r)[r] = position(call + 1, 0);
    return true;
  }

  /// Joins into `value` what a read knows from the data it takes: what the writers of the
  /// elements it reads knew (each an earlier write of this call, in writerKnew_). Of several
  /// writes it may take, only what all of them knew (a thread may take any one), except of an
  /// accumulation line: its take waits for every rank's add.
  void joinKnowledgeOfRead(const Configuration& config, size_t event, size_t read, int64_t* value) {
    const std::vector<int>& sources = config.sources[event][read];
    if (sources.empty())
      return;
    const size_t n = size_t(nranks_);
    const ir::BufferId buffer =
        slots_[size_t(skeletons_[size_t(config.root)][event].reads[read].slot)].buffer;
    const bool lines = program_.buffers[size_t(buffer)].storage == ir::Storage::AtomicLines;
    int64_t* known = readKnown_.data();
    const int64_t* first = writerKnew_.data() + size_t(sources.front()) * n;
    std::copy(first, first + n, known);
    for (int source : sources) {
      const int64_t* knew = writerKnew_.data() + size_t(source) * n;
      if (lines)
        join(known, knew, n);
      else
        meet(known, knew, n);
    }
    join(value, known, n);
  }

  /// Whether a later call of the sequence uses the copy this call does (call + copies, ...): only
  /// such a call checks this call's accesses (ordered() skips other copies and the call's own), so
  /// the others are not logged. Exact: it drops what no check reads, and states that differ only in
  /// it are then one state, run from once (explore). With k = copies + 1 only the first call logs.
  bool checkedLater(int call) const { return call + rotation_.copies < calls_; }

  bool isScratch(int slot) const {
    return program_.buffers[size_t(slots_[size_t(slot)].buffer)].role == ir::BufferRole::Scratch;
  }

  void log(Log& log, int slot, int copy, const Access& access) {
    auto& list = log[size_t(slot) * size_t(rotation_.copies) + size_t(copy)];
    for (Access& a : list)
      if (a.rank == access.rank && a.call == access.call && a.write == access.write) {
        a.step = std::max(a.step, access.step);
        if (a.step == access.step)
          a.loc = access.loc;
        return;
      }
    list.push_back(access);
  }

  /// A write of `slot` in this call must come after every access of the same copy by another
  /// rank in an earlier call: counts differ from call to call, so any element of the slot may be
  /// one that access touched. (The log is what the earlier calls left: this call's own accesses
  /// are skipped anyway.)
  bool ordered(const Log& log, int call, const Event& e, int slot, int copy, const int64_t* value,
               bool clearing) {
    for (const Access& a : log[size_t(slot) * size_t(rotation_.copies) + size_t(copy)]) {
      if (a.call >= call || a.rank == e.rank)
        continue;
      if (value[size_t(a.rank)] > position(a.call, a.step))
        continue;
      overlap_ = Overlap{call, &e, a, slot, copy, clearing};
      return false;
    }
    return true;
  }

  void report(const std::vector<int>& chosen) {
    const Overlap& o = overlap_;
    const SlotKey& key = slots_[size_t(o.slot)];
    const ir::Buffer& buffer = program_.buffers[size_t(key.buffer)];
    std::string counts;
    for (size_t k = 0; k < chosen.size(); ++k) {
      const Configuration& c = configurations_[size_t(chosen[k])];
      counts += (k ? ", " : "") + std::to_string(c.count) +
                (hasRoot(program_.kind) ? " (root " + std::to_string(c.root) + ")" : "");
    }
    const std::string later = "call " + std::to_string(epochOf(o.call));
    const std::string earlier = "call " + std::to_string(epochOf(o.earlier.call));
    const std::string what =
        o.clearing ? (buffer.storage == ir::Storage::AtomicLines ? "zeroing of the lines it takes"
                                                                 : "clearing of what it polled")
                   : "write";
    diags_.error(
        o.event->loc,
        lead() + later + "'s " + what + " of '" + buffer.name + "' (slot " +
            std::to_string(key.slot) + " of rank " + std::to_string(key.owner) + ", scratch copy " +
            std::to_string(o.copy) + ") on rank " + std::to_string(o.event->rank) +
            " can reach it while " + earlier + "'s " + (o.earlier.write ? "write" : "read") +
            " on rank " + std::to_string(o.earlier.rank) + " in step '" +
            program_.steps[size_t(o.earlier.step)].name +
            "' may not be done: nothing orders the two (" + std::to_string(rotation_.copies) +
            " scratch cop" + (rotation_.copies == 1 ? "y" : "ies") +
            "; nranks=" + std::to_string(nranks_) + ", calls with n = " + counts + ")");
    diags_.note(o.earlier.loc, earlier + "'s " + (o.earlier.write ? "write" : "read") + " here");
  }

  const ir::Program& program_;
  const int nranks_;
  const CallRotation& rotation_;
  Diagnostics& diags_;
  const AcrossCallsOptions options_;
  const int calls_;
  SlotIds slotIds_;
  std::vector<SlotKey> slots_;
  std::vector<std::vector<Event>> skeletons_; // by root: what a call runs
  std::vector<Configuration> configurations_;
  std::vector<size_t> firstCalls_; // the classes a sequence starts with (chooseFirstCalls)
  int firstCallRoots_ = 0;
  int64_t sequences_ = 0; // sequences run, or cut short at a state met before
  int64_t callsRun_ = 0;
  int64_t work_ = 0;
  /// By call: the states it started from (keyOf).
  std::vector<std::unordered_set<std::vector<int64_t>, KeyHash>> visited_;
  std::map<std::vector<int64_t>, int> logIds_; // internLog
  Overlap overlap_;
  bool quiet_ = false; // the covering class's attempt reports nothing (collectCover)
  // runCall's buffers, reused from call to call: rows of every rank, one row, rows of each event.
  std::vector<int64_t> known_, allStarts_, value_, readKnown_, writerKnew_;
  std::vector<std::pair<const std::string*, std::vector<int64_t>>> registers_;
};

} // namespace

CallRotation rotationOf(const ir::Program& lowered) {
  CallRotation rotation;
  rotation.copies = lowered.scratchCopies;
  // CudaCodeGen: `const unsigned flag = unsigned(epoch)` in every packet, and a kernel with
  // packets refuses the calls past COLLC_LAST_PACKET_EPOCH; ll128 lines carry the 64-bit epoch.
  rotation.packetFlag = [](uint64_t epoch) { return epoch & 0xffffffffu; };
  rotation.lineFlag = [](uint64_t epoch) { return epoch; };
  if (lowered.uses(ir::Storage::Packets))
    rotation.lastEpoch = COLLC_LAST_PACKET_EPOCH;
  return rotation;
}

bool proveAcrossCalls(const ir::Program& lowered, int nranks, const CallRotation& rotation,
                      Diagnostics& diags, AcrossCallsStats* stats,
                      const AcrossCallsOptions& options) {
  if (rotation.copies < 1)
    internalError("a rotation through no scratch copy");
  CallsProof proof(lowered, nranks, rotation, diags, options);
  return proof.run(stats);
}

} // namespace collc
