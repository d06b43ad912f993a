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
#ifndef COLLC_COMPILER_VERIFY_CHUNKGROUPS_H
#define COLLC_COMPILER_VERIFY_CHUNKGROUPS_H

#include "compiler/ir/IR.h"

#include <string>
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

} // namespace collc::proof

#endif // COLLC_COMPILER_VERIFY_CHUNKGROUPS_H
