#include "compiler/verify/ChunkGroups.h"

#include "compiler/execute/Walker.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

namespace collc::proof {
namespace {

using execute::Affine;
using execute::AffineError;
using execute::Arith;

// A lowered program's run keeps every strategy's rules per element (how often an element is
// written, added to, polled or taken) but one: a region of packets must start on a packet. A
// chunk that holds elements starts at k * chunk_size(n), a multiple of the chunk alignment, and a
// slot at 0; packets hold 2 or 4 elements.
static_assert(ir::kChunkAlignElems % 4 == 0, "a chunk that holds elements starts on a packet");

/// Thrown at the first thing that mixes chunks (or that the premise does not cover).
struct Mixes {
  std::string why;
};

/// A region a statement names, as the rotation check compares it: whose memory, which slot of
/// it. A register names none (memory -1): the premise has checked what it holds.
struct Named {
  int owner = 0;
  ir::BufferId memory = -1;
  int64_t slot = 0;
};

/// A statement that moves elements, as one rank runs it in one step.
struct Moved {
  int step = 0, rank = 0, chunk = 0;
  const void* statement = nullptr; // the IR statement: its source statement, in a loop or not
  std::optional<ir::BarrierScope> barrier; // the rank's barrier in the step before it, if any
  uint32_t firstRegion = 0, regions = 0;   // Walked::regions it names, in the order the run does
};

/// Every statement that moves elements, in walk order, and the regions they name.
struct Walked {
  std::vector<Moved> moved;
  std::vector<Named> regions;
};

/// What a buffer's slot holds, as the premise tells buffers apart.
enum class Layout {
  Chunked,    // n elements, touched a chunk at a time
  ChunkSized, // chunk_size(n) elements a slot, touched from its start
  Other,
};

/// The premise's verdict on a region's expressions, the same on every rank and in every loop.
struct Form {
  bool chunk = false; // chunk k of an n-element buffer
  bool slot = false;  // the first chunk_size(n) elements of a chunk-sized slot
  bool bound = false; // walked by loops of chunk_size(n)
};

/// A slot of some rank's memory: (owner, memory, slot).
struct SlotKey {
  int owner;
  ir::BufferId memory;
  int64_t slot;
  bool operator==(const SlotKey& o) const {
    return owner == o.owner && memory == o.memory && slot == o.slot;
  }
};
struct SlotHash {
  size_t operator()(const SlotKey& k) const {
    return std::hash<int64_t>()((k.slot * 131 + k.memory) * 1031 + k.owner);
  }
};

/// What a walk with no buffers sharing memory found, for ChunkWalks to decide the walks with some
/// from: besides its verdict, chunks and regions (each region's memory its own buffer), how it cut
/// each buffer, each buffer's slots, and each chunk-sized slot's chunk.
struct WalkFacts {
  std::vector<Layout> layouts;
  std::vector<int64_t> slotCounts;
  std::unordered_map<SlotKey, int, SlotHash> slotChunks;
};

/// Walks every rank's statements once (no data: counts are not needed) and gives each statement
/// the chunk it touches; registers carry that chunk from the statement that fills them. With
/// `walked`, also records every such statement for the rotation check.
class GroupWalk : public execute::Walker<GroupWalk, int> {
  friend class execute::Walker<GroupWalk, int>;

public:
  GroupWalk(const ir::Program& program, const std::vector<ir::Step>& steps,
            const execute::Shape& shape, Arith& arith, std::vector<int>* chunks,
            Walked* walked = nullptr)
      : Walker(program, steps, shape, arith), count_(ir::ExprNode::count()),
        chunkSize_(ir::ExprNode::chunkSize(count_)), chunks_(chunks), walked_(walked) {}

  std::string run() {
    try {
      classifyBuffers();
      walk();
    } catch (const Mixes& mixes) {
      return mixes.why;
    } catch (const AffineError& error) {
      return "an index the premise cannot evaluate (" + error.why + ")";
    }
    return "";
  }

  /// What ChunkWalks keeps of a walk made with walked regions and no aliases.
  void keepFacts(WalkFacts& facts) {
    facts.layouts = std::move(layouts_);
    facts.slotCounts = std::move(slotCounts_);
    facts.slotChunks = std::move(slotChunks_);
  }

private:
  void classifyBuffers() {
    // The kinds whose postcondition asks of element i of an n-element output only what reached
    // element i of the inputs: a group's verdict is then its own at every count.
    const CollectiveKind kind = program_.kind;
    if (kind != CollectiveKind::AllReduce && kind != CollectiveKind::Broadcast &&
        kind != CollectiveKind::Reduce)
      throw Mixes{"its kind's postcondition relates elements of different places"};
    memory_ = memoryOf();
    layouts_.assign(program_.buffers.size(), Layout::Other);
    slotCounts_.assign(program_.buffers.size(), 0);
    for (size_t b = 0; b < program_.buffers.size(); ++b) {
      const ir::Buffer& buffer = program_.buffers[b];
      if (ir::structurallyEqual(buffer.slotElems, count_))
        layouts_[b] = Layout::Chunked;
      else if (ir::structurallyEqual(buffer.slotElems, chunkSize_))
        layouts_[b] = Layout::ChunkSized;
      // The rotation check holds every slot named to the buffer's (as a run counts them).
      if (walked_)
        slotCounts_[b] = evalInt(buffer.slots, baseEnv(0), buffer.loc);
    }
    // Buffers that are one memory must be cut alike, so that one element is in one group.
    for (size_t b = 0; b < memory_.size(); ++b)
      if (layouts_[b] != layouts_[size_t(memory_[b])])
        throw Mixes{"'" + program_.buffers[b].name +
                    "' shares memory with a buffer of another size"};
  }

  // The walker's interface.
  [[noreturn]] void fail(llvm::SMLoc, const std::string& message) { throw Mixes{message}; }
  void beginStep(const ir::Step&) {}
  void beginRank() { barrier_.reset(); }
  void onStatement() {}
  int64_t slotCount(int, ir::BufferId buffer) {
    return evalInt(program_.buffer(buffer).slots, baseEnv(0), program_.buffer(buffer).loc);
  }
  Affine slotSize(int, ir::BufferId, int64_t) { return Affine::constant(0); }
  // What orders a lowered rank's accesses in a step besides the step itself (Simulation.cpp).
  void barrier(const ir::Barrier& s) { barrier_ = s.scope; }

  void put(const ir::Put& s, execute::Env& env) { transfer(&s, s.source, s.target, env); }
  void atomicAdd(const ir::AtomicAdd& s, execute::Env& env) {
    transfer(&s, s.source, s.target, env);
  }
  void transfer(const void* statement, const ir::Operand& source, const ir::Region& target,
                execute::Env& env) {
    // A transfer moves as many elements as its source has: the source names the chunk.
    const int chunk = chunkOf(source.region, env);
    read(source, chunk, env, /*chunkKnown=*/true);
    touch(target, chunk, env);
    record(statement, chunk);
  }
  void assign(const ir::Assign& s, execute::Env& env) {
    // An assignment writes as many elements as its target has: the target names the chunk.
    const int chunk = chunkOf(s.target, env);
    if (walked_)
      name(s.target, env);
    forEachOperand(s, env, [&](const ir::Operand& o, bool) { read(o, chunk, env); });
    if (!s.keep.empty())
      registers_[s.keep] = chunk;
    record(&s, chunk);
  }
  void let(const ir::Let& s, execute::Env& env) {
    const int chunk = chunkOf(s.value.region, env);
    read(s.value, chunk, env, /*chunkKnown=*/true);
    registers_[s.reg] = chunk;
    record(&s, chunk);
  }
  void record(const void* statement, int chunk) {
    if (chunks_)
      chunks_->push_back(chunk);
    if (walked_) {
      const uint32_t end = uint32_t(walked_->regions.size());
      walked_->moved.push_back(
          Moved{step_, rank_, chunk, statement, barrier_, firstRegion_, end - firstRegion_});
      firstRegion_ = end;
    }
  }
  void row(const ir::RowStmt& s, execute::Env&) {
    throw Mixes{"row statement '" + s.target.text + "' reads whole rows"};
  }

  // The premise.
  const Form& formOf(const ir::Region& region) {
    auto [it, added] = forms_.try_emplace(&region);
    if (added) {
      const ir::Expr& offset = region.offset;
      const ir::Expr& length = region.length;
      const Layout layout = layouts_[size_t(region.buffer)];
      it->second.chunk =
          layout == Layout::Chunked && offset->kind == ir::ExprKind::ChunkBegin &&
          length->kind == ir::ExprKind::ChunkLength && ir::structurallyEqual(offset->a, count_) &&
          ir::structurallyEqual(length->a, count_) && ir::structurallyEqual(offset->b, length->b);
      it->second.slot = layout == Layout::ChunkSized && ir::structurallyEqual(offset, zero_) &&
                        ir::structurallyEqual(length, chunkSize_);
      it->second.bound = ir::structurallyEqual(region.bound, chunkSize_);
    }
    return it->second;
  }

  /// The chunk `region` is of n elements (chunk_begin(n, k), chunk_len(n, k) of an n-element
  /// buffer), k a rank.
  int chunkOf(const ir::Region& region, const execute::Env& env) {
    const Form& form = formOf(region);
    if (!form.chunk)
      throw Mixes{"'" + region.text + "' is not a chunk of n elements"};
    const int64_t k = evalInt(region.offset->b, env, region.loc);
    if (k < 0 || k >= shape_.nranks)
      throw Mixes{"'" + region.text + "' names chunk " + std::to_string(k)};
    checkBound(region, form);
    return int(k);
  }

  /// `o`, read for a statement of chunk `chunk` (`chunkKnown`: found from `o` itself).
  void read(const ir::Operand& o, int chunk, const execute::Env& env, bool chunkKnown = false) {
    if (o.load == ir::LoadKind::Register) {
      auto it = registers_.find(o.reg);
      if (it == registers_.end() || it->second != chunk)
        throw Mixes{"register '" + o.reg + "' holds another chunk's elements"};
      if (walked_)
        walked_->regions.push_back(Named{});
      return;
    }
    touch(o.region, chunk, env, chunkKnown);
  }

  /// A region a statement of chunk `chunk` reads or writes from its start, as many elements as
  /// the chunk has: the same chunk of an n-element buffer, or a chunk-sized slot of that chunk.
  void touch(const ir::Region& region, int chunk, const execute::Env& env,
             bool chunkKnown = false) {
    const Layout layout = layouts_[size_t(region.buffer)];
    if (layout == Layout::Chunked) {
      if (!chunkKnown && chunkOf(region, env) != chunk)
        throw Mixes{"'" + region.text + "' is another chunk than its statement's"};
      if (walked_)
        name(region, env);
      return;
    }
    const Form& form = formOf(region);
    if (!form.slot)
      throw Mixes{"'" + region.text + "' is neither a chunk of n elements nor a chunk-sized slot"};
    checkBound(region, form);
    const auto [owner, slot] = name(region, env);
    auto [it, added] =
        slotChunks_.try_emplace(SlotKey{owner, memory_[size_t(region.buffer)], slot}, chunk);
    if (!added && it->second != chunk)
      throw Mixes{"slot " + std::to_string(slot) + " of '" + program_.buffer(region.buffer).name +
                  "' on rank " + std::to_string(owner) + " holds elements of chunks " +
                  std::to_string(it->second) + " and " + std::to_string(chunk)};
  }

  /// The rank and slot `region` names on this rank. With `walked_`, noted for the rotation check,
  /// which holds them to the configuration: the run of chunk 0 alone makes no other chunk's
  /// statements, which would check them.
  std::pair<int, int64_t> name(const ir::Region& region, const execute::Env& env) {
    const int owner = region.owner ? int(evalInt(region.owner, env, region.loc)) : int(env.rank);
    const int64_t slot = evalInt(region.slot, env, region.loc);
    if (walked_) {
      const ir::BufferId memory = memory_[size_t(region.buffer)];
      if (owner < 0 || owner >= shape_.nranks || slot < 0 || slot >= slotCounts_[size_t(memory)])
        throw Mixes{"'" + region.text + "' names a rank or slot out of range on rank " +
                    std::to_string(env.rank)};
      walked_->regions.push_back(Named{owner, memory, slot});
    }
    return {owner, slot};
  }

  /// A thread is an element's index within its statement's range in loops of the region's bound:
  /// one bound for every region keeps which accesses are one thread's the same at every count.
  void checkBound(const ir::Region& region, const Form& form) {
    if (!form.bound)
      throw Mixes{"'" + region.text + "' is walked by loops of another bound than chunk_size(n)"};
  }

  const ir::Expr count_, chunkSize_;
  const ir::Expr zero_ = ir::ExprNode::constant(0);
  std::vector<ir::BufferId> memory_;
  std::vector<Layout> layouts_;
  std::vector<int64_t> slotCounts_; // by buffer, with walked_ (rank 0's, as a run counts them)
  std::unordered_map<const ir::Region*, Form> forms_;
  std::unordered_map<SlotKey, int, SlotHash> slotChunks_; // each chunk-sized slot's chunk
  std::vector<int>* chunks_;
  Walked* walked_;
  uint32_t firstRegion_ = 0;                // of the statement being walked, in walked_
  std::optional<ir::BarrierScope> barrier_; // this rank's in this step, as the run keeps it
};

/// How a buffer's slot index follows the renaming of ranks by k: kept (one slot, or slots not
/// indexed by rank), or renamed like the ranks (`slot[rank]`). Decided at the first slot of the
/// buffer compared (never both: k is not 0), then held to for every k, so that renaming by k is
/// one map of cells, the same for every statement.
enum class SlotRule { Unknown, Kept, Renamed };

/// Matches chunk 0's statements with each other chunk's (whyChunksAreNotRotations).
class RotationCheck {
public:
  RotationCheck(int nranks, const Walked& walked) : nranks_(nranks), walked_(walked) {}

  std::string run(std::vector<int>* firstImage) {
    const std::vector<Moved>& moved = walked_.moved;
    // Each chunk's statements in walk order, keyed by (step, rank): the walk goes step after
    // step, rank after rank, so the keys are sorted and a (step, rank) is a run of them.
    std::vector<std::vector<std::pair<int64_t, int>>> byChunk(static_cast<size_t>(nranks_));
    for (size_t i = 0; i < moved.size(); ++i)
      byChunk[size_t(moved[i].chunk)].push_back({keyOf(moved[i].step, moved[i].rank), int(i)});
    const auto& base = byChunk[0];
    // The earliest image of each of chunk 0's statements, first itself.
    std::vector<int> first;
    for (const auto& [key, i] : base)
      first.push_back(i);
    for (int k = 1; k < nranks_; ++k) {
      const auto& other = byChunk[size_t(k)];
      // Every group of chunk 0 onto one of chunk k, as long: with as many statements in all, the
      // match is one to one.
      if (other.size() != base.size())
        return "chunk " + std::to_string(k) + " has " + std::to_string(other.size()) +
               " statements, chunk 0 " + std::to_string(base.size());
      for (size_t g = 0; g < base.size();) {
        const Moved& head = moved[size_t(base[g].second)];
        size_t groupEnd = g;
        while (groupEnd < base.size() && base[groupEnd].first == base[g].first)
          ++groupEnd;
        const int to = (head.rank + k) % nranks_;
        const auto [from, until] = std::equal_range(
            other.begin(), other.end(), std::pair<int64_t, int>{keyOf(head.step, to), -1},
            [](const auto& a, const auto& b) { return a.first < b.first; });
        if (size_t(until - from) != groupEnd - g)
          return "in step " + std::to_string(head.step) + ", rank " + std::to_string(head.rank) +
                 " runs " + std::to_string(groupEnd - g) + " statements of chunk 0 and rank " +
                 std::to_string(to) + " " + std::to_string(until - from) + " of chunk " +
                 std::to_string(k);
        for (size_t j = g; j < groupEnd; ++j) {
          const int image = from[long(j - g)].second;
          if (std::string why = differs(moved[size_t(base[j].second)], moved[size_t(image)], k);
              !why.empty())
            return "in step " + std::to_string(head.step) + ", statement " +
                   std::to_string(j - g + 1) + " of chunk 0 on rank " + std::to_string(head.rank) +
                   " and of chunk " + std::to_string(k) + " on rank " + std::to_string(to) +
                   " differ: " + why;
          first[j] = std::min(first[j], image);
        }
        g = groupEnd;
      }
    }
    if (firstImage)
      *firstImage = std::move(first);
    return "";
  }

private:
  int64_t keyOf(int step, int rank) const { return int64_t(step) * nranks_ + rank; }

  /// Why chunk k's statement `b` is not chunk 0's `a` renamed by k ("" if it is).
  std::string differs(const Moved& a, const Moved& b, int k) {
    if (a.statement != b.statement)
      return "another statement";
    if (a.barrier != b.barrier)
      return "another barrier before it";
    if (a.regions != b.regions)
      return "another number of regions";
    for (uint32_t i = 0; i < a.regions; ++i) {
      const Named& x = walked_.regions[a.firstRegion + i];
      const Named& y = walked_.regions[b.firstRegion + i];
      if (x.memory != y.memory)
        return "another buffer";
      if (x.memory < 0)
        continue; // a register of the same statement
      if (y.owner != (x.owner + k) % nranks_)
        return "rank " + std::to_string(y.owner) + "'s buffer rather than rank " +
               std::to_string((x.owner + k) % nranks_) + "'s";
      SlotRule& rule = rules_[x.memory];
      const bool kept = y.slot == x.slot;
      const bool renamed = x.slot < nranks_ && y.slot == (x.slot + k) % nranks_;
      if (rule == SlotRule::Unknown)
        rule = kept ? SlotRule::Kept : renamed ? SlotRule::Renamed : SlotRule::Unknown;
      if (rule == SlotRule::Kept ? !kept : !renamed)
        return "slot " + std::to_string(y.slot) + " for slot " + std::to_string(x.slot);
    }
    return "";
  }

  const int nranks_;
  const Walked& walked_;
  std::map<ir::BufferId, SlotRule> rules_; // by memory
};

thread_local int offDepth = 0;
thread_local int rotationsOffDepth = 0;

} // namespace

bool chunkGroupsOn() {
  return offDepth == 0;
}
ChunkGroupsOff::ChunkGroupsOff() {
  ++offDepth;
}
ChunkGroupsOff::~ChunkGroupsOff() {
  --offDepth;
}

bool chunkRotationsOn() {
  return rotationsOffDepth == 0;
}
ChunkRotationsOff::ChunkRotationsOff() {
  ++rotationsOffDepth;
}
ChunkRotationsOff::~ChunkRotationsOff() {
  --rotationsOffDepth;
}

std::string whyChunksMix(const ir::Program& program, const std::vector<ir::Step>& steps, int nranks,
                         int root,
                         const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases,
                         std::vector<int>* chunks) {
  // The statements a rank runs do not depend on n; a count is needed only to make the walk.
  Arith arith(/*symbolic=*/false);
  const execute::Shape shape{nranks, root, Affine::constant(1), 0, aliases};
  GroupWalk walk(program, steps, shape, arith, chunks);
  return walk.run();
}

std::string
whyChunksAreNotRotations(const ir::Program& program, const std::vector<ir::Step>& steps, int nranks,
                         const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases,
                         ChunkRotation* rotation) {
  // A root is a rank the renaming would have to move: kinds with one are not rotations of chunks.
  if (program.kind != CollectiveKind::AllReduce)
    return "chunk 0 alone stands for the others in an AllReduce only";
  Arith arith(/*symbolic=*/false);
  const execute::Shape shape{nranks, 0, Affine::constant(1), 0, aliases};
  std::vector<int> chunks;
  Walked walked;
  GroupWalk walk(program, steps, shape, arith, &chunks, &walked);
  if (std::string why = walk.run(); !why.empty())
    return why;
  std::vector<int> firstImage;
  if (std::string why = RotationCheck(nranks, walked).run(&firstImage); !why.empty())
    return why;
  if (rotation)
    *rotation = ChunkRotation{std::move(chunks), std::move(firstImage)};
  return "";
}

/// A program's walk without aliases, and its rotation check's outcome.
struct ChunkWalks::Kept {
  std::string why; // the walk's
  std::vector<int> chunks;
  Walked walked;
  WalkFacts facts;
  std::string rotationWhy; // where the walk passed
  std::vector<int> firstImage;
};

ChunkWalks::ChunkWalks() = default;
ChunkWalks::~ChunkWalks() = default;

ChunkWalks::Kept& ChunkWalks::keptFor(const ir::Program& program,
                                      const std::vector<ir::Step>& steps, int nranks) {
  std::unique_ptr<Kept>& kept = kept_[{&program, &steps, nranks}];
  if (kept)
    return *kept;
  kept = std::make_unique<Kept>();
  ++walks_;
  Arith arith(/*symbolic=*/false);
  const execute::Shape shape{nranks, 0, Affine::constant(1), 0, {}};
  GroupWalk walk(program, steps, shape, arith, &kept->chunks, &kept->walked);
  kept->why = walk.run();
  walk.keepFacts(kept->facts);
  if (kept->why.empty())
    kept->rotationWhy = RotationCheck(nranks, kept->walked).run(&kept->firstImage);
  return *kept;
}

namespace {

/// The regions of `kept`'s walk as the walk with `aliases` names them (each its buffer's memory),
/// where that walk would pass as `kept`'s did: nullopt where it would stop (ChunkWalks says how).
std::optional<Walked>
withAliases(const ir::Program& program, const Walked& walked, const WalkFacts& facts,
            const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases) {
  const std::vector<ir::BufferId> memory = execute::memoryRoots(program, aliases);
  for (size_t b = 0; b < memory.size(); ++b)
    if (facts.layouts[b] != facts.layouts[size_t(memory[b])])
      return std::nullopt;
  std::unordered_map<SlotKey, int, SlotHash> slotChunks;
  for (const auto& [key, chunk] : facts.slotChunks) {
    const SlotKey joined{key.owner, memory[size_t(key.memory)], key.slot};
    if (slotChunks.try_emplace(joined, chunk).first->second != chunk)
      return std::nullopt;
  }
  Walked named = walked;
  for (Named& region : named.regions) {
    if (region.memory < 0)
      continue;
    region.memory = memory[size_t(region.memory)];
    if (region.slot >= facts.slotCounts[size_t(region.memory)])
      return std::nullopt;
  }
  return named;
}

} // namespace

std::string ChunkWalks::whyChunksAreNotRotations(
    const ir::Program& program, const std::vector<ir::Step>& steps, int nranks,
    const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases, ChunkRotation* rotation) {
  if (program.kind != CollectiveKind::AllReduce)
    return proof::whyChunksAreNotRotations(program, steps, nranks, aliases, rotation);
  const Kept& kept = keptFor(program, steps, nranks);
  if (aliases.empty()) {
    if (!kept.why.empty())
      return kept.why;
    if (kept.rotationWhy.empty() && rotation)
      *rotation = ChunkRotation{kept.chunks, kept.firstImage};
    return kept.rotationWhy;
  }
  std::optional<Walked> named;
  if (kept.why.empty())
    named = withAliases(program, kept.walked, kept.facts, aliases);
  if (!named)
    return proof::whyChunksAreNotRotations(program, steps, nranks, aliases, rotation);
  ++derived_;
  std::vector<int> firstImage;
  if (std::string why = RotationCheck(nranks, *named).run(&firstImage); !why.empty())
    return why;
  if (rotation)
    *rotation = ChunkRotation{kept.chunks, std::move(firstImage)};
  return "";
}

std::string ChunkWalks::whyChunksMix(const ir::Program& program, const std::vector<ir::Step>& steps,
                                     int nranks, std::vector<int>* chunks) {
  auto it = kept_.find({&program, &steps, nranks});
  if (it == kept_.end() || !it->second->why.empty())
    return proof::whyChunksMix(program, steps, nranks, 0, {}, chunks);
  if (chunks)
    *chunks = it->second->chunks;
  return "";
}

} // namespace collc::proof
