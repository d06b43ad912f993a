// Where a program keeps the chunks of `chunk(n)` apart, the counts at which chunks are partial or
// empty need no runs of their own: the runs for large n decide them (dsl/README.md, "Why finitely
// many runs cover every n", step 8). This file checks that premise for one rank count, root and set
// of buffers sharing memory, statement by statement, with no run of the data flow.
//
// The premise (for an AllReduce, a broadcast or a reduce, whose postcondition asks of element i of
// an output only what reached element i of the inputs): every statement that moves elements
// touches, on every rank, chunk k of n-element buffers (`x.chunk(k)`: offset chunk_begin(n, k),
// length chunk_len(n, k)) and the first elements of chunk-sized scratch slots (`slot[e]`: offset 0,
// chunk_size(n) elements), as many as chunk k has, one k for the whole statement, with k a rank in
// [0, nranks); every chunk-sized slot is touched by the statements of one k only; a register
// carries the k of the statement that filled it to those that read it; every region's bound is
// chunk_size(n); no row statement runs. Then the elements fall into groups, element j of chunk k of
// every n-element buffer and element j of every slot of chunk k, that no statement mixes: what
// happens to a group is the same at every count at which its element exists. Polls, flagged stores
// and line adds are counted per element by the run, so every strategy's program may keep chunks
// apart; a chunk's packets are its own.
//
// Chunks that are rotations (an AllReduce; dsl/README.md, step 9): where, besides, the statements
// of chunk k are those of chunk 0 with every rank x renamed (x + k) mod nranks, a run of chunk 0's
// statements alone (RunConfig::chunkZeroOnly) has the verdict of the run of every statement at
// every count it decides. Under the premise the run's rules are per element (its cell's accesses,
// ordered by nothing but their steps, the rank's barrier in the step or the step's waits, and a
// rank's program order); chunk k's elements are touched by chunk k's statements alone; a register
// holds one chunk's; nothing else the run keeps passes between statements (a barrier is no data).
// So chunk 0's cells fare as in the run of every statement. Renaming by k maps chunk 0's
// statements, with their barriers, and their cells (owner renamed, a buffer's slot kept or renamed
// by one rule) one to one onto chunk k's; no rule compares ranks but for equality, and the
// AllReduce's postcondition is the same under renaming: chunk k's element j has chunk 0's verdict.
// The order of ranks within a step, which renaming changes, decides no verdict (accesses of one
// element by two ranks in one step are refused in either order, adds commute), only which rank
// wrote last where several add in one step: the run gives up there. Facts that name ranks are
// completed by renaming, and the first statement for 'sum' only is the earliest image in the walk
// (ChunkRotation::firstImage).
#ifndef COLLC_COMPILER_VERIFY_CHUNKGROUPS_H
#define COLLC_COMPILER_VERIFY_CHUNKGROUPS_H

#include "compiler/ir/IR.h"

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace collc::proof {

/// Whether `steps` (of `program`, expanded for `nranks`) keep the chunks apart, run with `root`
/// and with the buffers of `aliases` sharing memory: "" where they do, else the first reason they
/// do not (for tests and messages). `chunks`, if given, receives the chunk of every statement that
/// moves elements (put, atomic_add, assignment, let), in the order a walker runs them.
std::string whyChunksMix(const ir::Program& program, const std::vector<ir::Step>& steps, int nranks,
                         int root,
                         const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases,
                         std::vector<int>* chunks = nullptr);

/// What a run of chunk 0 alone needs of the check that chunks are rotations.
struct ChunkRotation {
  /// whyChunksMix's: the chunk of every statement that moves elements, in walk order.
  std::vector<int> chunks;
  /// For each of chunk 0's statements (in walk order), the earliest place in the walk (an index
  /// of `chunks`) of its images under the renamings by every k, itself among them.
  std::vector<int> firstImage;
};

/// Whether `steps` (of `program`, expanded for `nranks`, an AllReduce) keep the chunks apart, with
/// the buffers of `aliases` sharing memory, and the statements of every chunk k are those of
/// chunk 0 with each rank x renamed (x + k) mod nranks: in each step, rank x's statements of chunk
/// 0 are, in order, rank (x + k)'s of chunk k, each the same statement after the same barrier of
/// its rank in the step, naming the same buffers in the same order, each on the renamed rank, in
/// the same slot or, for a buffer indexed by rank, the renamed slot (one rule a buffer). "" where
/// they are, else the first reason they are not. `rotation`, if given, receives what a run of
/// chunk 0 alone needs.
std::string
whyChunksAreNotRotations(const ir::Program& program, const std::vector<ir::Step>& steps, int nranks,
                         const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases,
                         ChunkRotation* rotation = nullptr);

/// The walks of whyChunksAreNotRotations for one program, kept for the checks of its runs with
/// buffers that share memory (its alias proofs) and of its calls in sequence. A program's walk
/// without aliases is made once a rank count; sharing memory changes only which memory a region
/// names, so where that walk passed, the check with aliases is decided from it: the same
/// statements and chunks, each region's memory the root of its buffer's, refused (walked again, for
/// the walk's own message) where buffers joined are cut differently, a slot named lies past its
/// memory's slots, or one slot of a memory holds two chunks; then the rotation check on the
/// regions so named. Programs and steps are known by their addresses: it must not outlive them.
class ChunkWalks {
public:
  ChunkWalks();
  ~ChunkWalks();
  ChunkWalks(const ChunkWalks&) = delete;
  ChunkWalks& operator=(const ChunkWalks&) = delete;

  /// whyChunksAreNotRotations(program, steps, nranks, aliases, rotation), the same verdict and
  /// message.
  std::string
  whyChunksAreNotRotations(const ir::Program& program, const std::vector<ir::Step>& steps,
                           int nranks,
                           const std::vector<std::pair<ir::BufferId, ir::BufferId>>& aliases,
                           ChunkRotation* rotation = nullptr);
  /// whyChunksMix(program, steps, nranks, 0, {}, chunks): the kept walk's chunks where it passed
  /// (it checks all that this walk does, and more), else walked.
  std::string whyChunksMix(const ir::Program& program, const std::vector<ir::Step>& steps,
                           int nranks, std::vector<int>* chunks = nullptr);
  /// Walks made, and checks with aliases decided from a kept walk (for tests).
  int walks() const { return walks_; }
  int derived() const { return derived_; }

private:
  struct Kept;
  Kept& keptFor(const ir::Program& program, const std::vector<ir::Step>& steps, int nranks);
  std::map<std::tuple<const ir::Program*, const std::vector<ir::Step>*, int>, std::unique_ptr<Kept>>
      kept_;
  int walks_ = 0, derived_ = 0;
};

/// Whether the proofs use the premise (true but inside a ChunkGroupsOff's life): tests turn it
/// off to compare the verdicts of the large runs alone with those of every count.
bool chunkGroupsOn();
class ChunkGroupsOff {
public:
  ChunkGroupsOff();
  ~ChunkGroupsOff();
  ChunkGroupsOff(const ChunkGroupsOff&) = delete;
  ChunkGroupsOff& operator=(const ChunkGroupsOff&) = delete;
};

/// Whether the proofs of chunks that are rotations run chunk 0 alone (true but inside a
/// ChunkRotationsOff's life): tests turn it off to compare with the runs of every chunk.
bool chunkRotationsOn();
class ChunkRotationsOff {
public:
  ChunkRotationsOff();
  ~ChunkRotationsOff();
  ChunkRotationsOff(const ChunkRotationsOff&) = delete;
  ChunkRotationsOff& operator=(const ChunkRotationsOff&) = delete;
};

} // namespace collc::proof

#endif // COLLC_COMPILER_VERIFY_CHUNKGROUPS_H
