#include "compiler/verify/ChunkGroups.h"

#include "compiler/execute/Walker.h"

#include <map>
#include <tuple>

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

/// What a buffer's slot holds, as the premise tells buffers apart.
enum class Layout {
  Chunked,    // n elements, touched a chunk at a time
  ChunkSized, // chunk_size(n) elements a slot, touched from its start
  Other,
};

/// Walks every rank's statements once (no data: counts are not needed) and gives each statement
/// the chunk it touches; registers carry that chunk from the statement that fills them.
class GroupWalk : public execute::Walker<GroupWalk, int> {
  friend class execute::Walker<GroupWalk, int>;

public:
  GroupWalk(const ir::Program& program, const std::vector<ir::Step>& steps,
            const execute::Shape& shape, Arith& arith, std::vector<int>* chunks)
      : Walker(program, steps, shape, arith), count_(ir::ExprNode::count()),
        chunkSize_(ir::ExprNode::chunkSize(count_)), chunks_(chunks) {}

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
    for (size_t b = 0; b < program_.buffers.size(); ++b) {
      const ir::Buffer& buffer = program_.buffers[b];
      if (ir::structurallyEqual(buffer.slotElems, count_))
        layouts_[b] = Layout::Chunked;
      else if (ir::structurallyEqual(buffer.slotElems, chunkSize_))
        layouts_[b] = Layout::ChunkSized;
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
  void beginRank() {}
  void onStatement() {}
  int64_t slotCount(int, ir::BufferId buffer) {
    return evalInt(program_.buffer(buffer).slots, baseEnv(0), program_.buffer(buffer).loc);
  }
  Affine slotSize(int, ir::BufferId, int64_t) { return Affine::constant(0); }
  void barrier(const ir::Barrier&) {}

  void put(const ir::Put& s, execute::Env& env) { transfer(s.source, s.target, env); }
  void atomicAdd(const ir::AtomicAdd& s, execute::Env& env) { transfer(s.source, s.target, env); }
  void transfer(const ir::Operand& source, const ir::Region& target, execute::Env& env) {
    // A transfer moves as many elements as its source has: the source names the chunk.
    const int chunk = chunkOf(source.region, env);
    read(source, chunk, env);
    touch(target, chunk, env);
    record(chunk);
  }
  void assign(const ir::Assign& s, execute::Env& env) {
    // An assignment writes as many elements as its target has: the target names the chunk.
    const int chunk = chunkOf(s.target, env);
    forEachOperand(s, env, [&](const ir::Operand& o, bool) { read(o, chunk, env); });
    if (!s.keep.empty())
      registers_[s.keep] = chunk;
    record(chunk);
  }
  void let(const ir::Let& s, execute::Env& env) {
    const int chunk = chunkOf(s.value.region, env);
    read(s.value, chunk, env);
    registers_[s.reg] = chunk;
    record(chunk);
  }
  void record(int chunk) {
    if (chunks_)
      chunks_->push_back(chunk);
  }
  void row(const ir::RowStmt& s, execute::Env&) {
    throw Mixes{"row statement '" + s.target.text + "' reads whole rows"};
  }

  // The premise.
  /// The chunk `region` is of n elements (chunk_begin(n, k), chunk_len(n, k) of an n-element
  /// buffer), k a rank.
  int chunkOf(const ir::Region& region, const execute::Env& env) {
    const ir::Expr& offset = region.offset;
    const ir::Expr& length = region.length;
    if (layouts_[size_t(region.buffer)] != Layout::Chunked ||
        offset->kind != ir::ExprKind::ChunkBegin || length->kind != ir::ExprKind::ChunkLength ||
        !ir::structurallyEqual(offset->a, count_) || !ir::structurallyEqual(length->a, count_) ||
        !ir::structurallyEqual(offset->b, length->b))
      throw Mixes{"'" + region.text + "' is not a chunk of n elements"};
    const int64_t k = evalInt(offset->b, env, region.loc);
    if (k < 0 || k >= shape_.nranks)
      throw Mixes{"'" + region.text + "' names chunk " + std::to_string(k)};
    checkBound(region);
    return int(k);
  }

  /// `o`, read for a statement of chunk `chunk`.
  void read(const ir::Operand& o, int chunk, const execute::Env& env) {
    if (o.load == ir::LoadKind::Register) {
      auto it = registers_.find(o.reg);
      if (it == registers_.end() || it->second != chunk)
        throw Mixes{"register '" + o.reg + "' holds another chunk's elements"};
      return;
    }
    touch(o.region, chunk, env);
  }

  /// A region a statement of chunk `chunk` reads or writes from its start, as many elements as
  /// the chunk has: the same chunk of an n-element buffer, or a chunk-sized slot of that chunk.
  void touch(const ir::Region& region, int chunk, const execute::Env& env) {
    const Layout layout = layouts_[size_t(region.buffer)];
    if (layout == Layout::Chunked) {
      if (chunkOf(region, env) != chunk)
        throw Mixes{"'" + region.text + "' is another chunk than its statement's"};
      return;
    }
    if (layout != Layout::ChunkSized || !ir::structurallyEqual(region.offset, zero_) ||
        !ir::structurallyEqual(region.length, chunkSize_))
      throw Mixes{"'" + region.text + "' is neither a chunk of n elements nor a chunk-sized slot"};
    checkBound(region);
    const int owner = region.owner ? int(evalInt(region.owner, env, region.loc)) : int(env.rank);
    const int64_t slot = evalInt(region.slot, env, region.loc);
    const auto key = std::make_tuple(owner, memory_[size_t(region.buffer)], slot);
    auto [it, added] = slotChunks_.emplace(key, chunk);
    if (!added && it->second != chunk)
      throw Mixes{"slot " + std::to_string(slot) + " of '" + program_.buffer(region.buffer).name +
                  "' on rank " + std::to_string(owner) + " holds elements of chunks " +
                  std::to_string(it->second) + " and " + std::to_string(chunk)};
  }

  /// A thread is an element's index within its statement's range in loops of the region's bound:
  /// one bound for every region keeps which accesses are one thread's the same at every count.
  void checkBound(const ir::Region& region) {
    if (!ir::structurallyEqual(region.bound, chunkSize_))
      throw Mixes{"'" + region.text + "' is walked by loops of another bound than chunk_size(n)"};
  }

  const ir::Expr count_, chunkSize_;
  const ir::Expr zero_ = ir::ExprNode::constant(0);
  std::vector<ir::BufferId> memory_;
  std::vector<Layout> layouts_;
  std::map<std::tuple<int, ir::BufferId, int64_t>, int> slotChunks_; // (owner, memory, slot)
  std::vector<int>* chunks_;
};

thread_local int offDepth = 0;

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

} // namespace collc::proof
