// collc's intermediate representation: a spec with every name resolved, every buffer access a
// Region with explicit owner, slot, offset and length, and (after the passes) the element loops and
// synchronization points the code generator prints. Nodes are immutable and shared; passes build
// new ones rather than editing old ones.
#ifndef COLLC_COMPILER_IR_H
#define COLLC_COMPILER_IR_H

#include "abi/CollectiveShapes.h"
#include "abi/Types.h"

#include <cstdint>
#include <llvm/Support/SMLoc.h>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace collc::ir {

// ---------------------------------------------------------------- integer expressions
enum class ExprKind {
  Const,
  Rank,
  NRanks,
  Count,
  Var,
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Min,
  ChunkSize,   // chunk_size(a): elements per chunk when a elements are split into nranks chunks
  ChunkBegin,  // chunk_begin(a, b): first element of chunk b of a elements
  ChunkLength, // chunk_len(a, b): elements of chunk b (the last ones may be short or empty)
  Root,      // the root rank of a broadcast or reduce: a compile-time constant, same on every rank
  RowLength, // the row length of a spec with `rows NAME` (kHidden): a compile-time constant
  Eq,        // a == b: 1 or 0 (conditions of `if`)
  Ne,        // a != b: 1 or 0
};

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  int64_t value = 0; // Const
  std::string name;  // Var
  Expr a, b;         // operands; for the chunk kinds a is the length being split, b the chunk

  static Expr constant(int64_t v);
  static Expr rank();
  static Expr nranks();
  static Expr count();
  static Expr root();
  static Expr rowLength();
  static Expr var(const std::string& name);
  /// Folds constants and drops identities (x + 0, x * 1, min(x, x)) so emitted code stays readable.
  static Expr binary(ExprKind kind, Expr a, Expr b);
  /// The chunk size when `length` elements are split into nranks parts: ceil(length / nranks)
  /// rounded up to 8 elements, so that every chunk starts 16-byte aligned for every element type.
  static Expr chunkSize(Expr length);
  static Expr chunkBegin(Expr length, Expr index);
  static Expr chunkLength(Expr length, Expr index);
};

inline constexpr int64_t kChunkAlignElems = int64_t(collc::kChunkAlignElems);

bool structurallyEqual(const Expr& x, const Expr& y);
/// True if the expression mentions n.
bool mentionsCount(const Expr& e);
/// True if the expression mentions `rank` or a loop variable (i.e. differs between ranks).
bool dependsOnRank(const Expr& e);

/// Values of the free variables when an expression is evaluated (by the verifier, the host).
struct Env {
  int64_t rank = 0;
  int64_t nranks = 2;
  int64_t count = 0;
  std::map<std::string, int64_t> vars;
  int64_t root = 0;
  int64_t rowLength = 0; // `rows NAME`: the row length the variant (or the verifier) picked
};

/// Evaluates with overflow and division checks; on failure returns nullopt and says why.
std::optional<int64_t> evaluate(const Expr& e, const Env& env, std::string* why = nullptr);

/// A size as a function of n for one rank count and row length: `perCount * n + constant`, or the
/// chunk size of that (`chunked`). The only way sizes may use n (Sema refuses any other), so that
/// the runtime can compute sizes from plain numbers and the verifier's argument over every n holds.
struct SizeForm {
  int64_t perCount = 0;
  int64_t constant = 0;
  bool chunked = false;
};
/// The form of size expression `e` with env's nranks and row length, or nullopt (and why) where n
/// appears otherwise (under a product with n, a division, a remainder, or a chunk(...) that is not
/// the whole size) or the value is negative.
std::optional<SizeForm> sizeForm(const Expr& e, const Env& env, std::string* why = nullptr);

/// C expression text; `nranksText`/`countText`/`rankText` name those values in the target code.
std::string toC(const Expr& e);
void print(const Expr& e, llvm::raw_ostream& out);

// ---------------------------------------------------------------- buffers and regions
/// Aux: a user buffer after the input and the output (`residual`, `weight`): the caller's memory,
/// passed in collc_params::aux; it holds the caller's data when the call starts and may be written.
enum class BufferRole { Input, Output, Scratch, Aux };

/// How the elements of a buffer are stored and read, chosen by the sync lowering pass.
enum class BufferAccess {
  Plain,    // plain elements; readers are ordered by a barrier (or the data is local)
  LL,       // 16-byte packets {data, flag, data, flag}: readers poll until the flag is the epoch
  Sentinel, // plain elements that start as -0.0: readers poll until the value changes
  /// Accumulation lines (ll128_atomic): every rank adds whole 128-byte lines with vector atomics;
  /// the first element of a line counts the adds (its value travels in the side buffer), and the
  /// owner takes the line once the count reaches nranks, then zeroes it for the next use.
  AtomicLines,
  /// The first element of every line of an AtomicLines buffer of slotElems elements: one element
  /// per 8 (the shortest line, 16-bit types), so it fits every type.
  LineHeads,
  /// LL128 lines: 128 bytes carry 120 bytes of data and the call's 8-byte flag, written and read
  /// by 8 threads together; readers poll until the line's flag is the epoch.
  LL128,
};

struct Buffer {
  std::string name;
  BufferRole role;
  Expr slots;            // number of slots (scratch; 1 for user buffers)
  Expr slotElems;        // elements per slot
  int scratchIndex = -1; // position among scratch buffers: collc_params::scratch_offset[i]
  int auxIndex = -1;     // position among aux user buffers: collc_params::aux[i]
  BufferAccess access = BufferAccess::Plain;
  /// AtomicLines: the buffer holding each line's first element (one element per line).
  const Buffer* side = nullptr;
  /// LL128: every access is a chunk of a slot (`x[s].chunk(k)`), and each chunk starts a line of
  /// its own; otherwise every access starts at a slot's first element and so does the first line.
  bool linesPerChunk = false;
  llvm::SMLoc loc;
};

/// A contiguous run of elements of one slot of one buffer, on this rank or on a peer.
struct Region {
  const Buffer* buffer = nullptr;
  Expr owner;  // rank that owns the memory; null: this rank
  Expr slot;   // slot index (constant 0 for single-slot buffers)
  Expr offset; // first element within the slot
  Expr length; // elements
  /// An upper bound of `length` that does not depend on the rank or loop variables; element loops
  /// iterate up to it and guard each access with the real length.
  Expr bound;
  llvm::SMLoc loc;
  std::string text; // the reference as written, for comments and messages
};

// ---------------------------------------------------------------- statements
/// AtomicLineAdd (made by the ll128_atomic pass): target += sources[0] as whole lines of an
/// AtomicLines buffer, counting the add in the line's first element.
/// RowNorm: target = rmsnorm(sources[0]) * sources[1], row by row (RowEpilogue.h).
enum class StmtKind { Loop, Put, AtomicAdd, Copy, Reduce, AtomicLineAdd, RowNorm };
enum class LoopRange { Peers, Ranks, Interval };

struct Stmt;
using StmtPtr = std::shared_ptr<const Stmt>;

/// One operand of a reduce: a region, or (`setVar` set) the family of regions obtained by binding
/// `setVar` to every rank of the set (`inbox[peers]`).
struct ReduceOperand {
  Region region;
  std::optional<LoopRange> set; // Peers or Ranks
  std::string setVar;
};

struct Stmt {
  StmtKind kind;
  llvm::SMLoc loc;
  // Loop: `var` takes value(index) for index in [begin, end): peers -> (rank + i) % nranks, i=1..
  std::string var;
  LoopRange range = LoopRange::Interval;
  Expr begin, end, value;
  /// An `if`: a loop over [0, end) whose `end` is a condition (0 or 1); printed as `if (end)`.
  bool conditional = false;
  std::vector<StmtPtr> body;
  // Put / AtomicAdd / Copy: target <- sources[0]; Reduce: target <- op(operands)
  Region target;
  std::vector<Region> sources; // RowNorm: the rows to normalise, then the weight (one row long)
  std::vector<ReduceOperand> operands;
  /// Copy / Reduce: regions added elementwise (in float, with '+') after the copy or the reduce.
  std::vector<Region> addends;
};

/// Elements of the loop that touches them: every statement inside walks i in [0, bound), guarding
/// each access with its region's own length. Built by the partition pass.
struct ElementLoop {
  Expr bound;
  std::vector<StmtPtr> stmts;
  int vectorElems = 1; // elements per vector memory operation (set by the vectorize pass)
  int unroll = 1;
};

struct Wait {
  int step;
  llvm::SMLoc loc;
};

struct Step {
  std::string name;
  int index = 0;
  llvm::SMLoc loc;
  std::vector<Wait> waits;
  /// `step NAME for VAR in BEGIN..END`: the step runs once per value of VAR, each time as a step of
  /// its own. expandRepeatedSteps (ExpandSteps.h) unrolls it for one rank count; a wait for the
  /// step itself means the previous repetition. Empty var: an ordinary step.
  std::string repeatVar;
  Expr repeatBegin, repeatEnd;
  std::vector<StmtPtr> body;
  // Filled by the lowering passes:
  int syncPointBefore = -1;       // barrier lowering: index of the sync point that opens this step
  std::vector<ElementLoop> loops; // partition pass
  /// The step has a row-wise statement: its work is split by rows, one thread block per row at a
  /// time (partition pass), so the block can reduce over the row it has just written.
  bool byRows = false;
};

enum class BarrierScope {
  /// Block b of every rank waits only for block b of the others: valid when every dependency
  /// crosses ranks at the same element index of loops of the same bound (same block does both).
  Matched,
  /// Every block waits for every block of every rank.
  Full,
};

struct Program {
  std::string name;
  CollectiveKind kind = CollectiveKind::AllReduce;
  llvm::SMLoc loc;
  int minRanks = 2, maxRanks = 8;
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<Step> steps;
  SyncKind defaultSync = SyncKind::Barrier;
  llvm::SMLoc syncLoc;               // the spec's `sync` clause, if any
  SyncKind sync = SyncKind::Barrier; // the strategy being compiled (set before lowering)
  // Launch defaults from the spec.
  int blocks = 4, threads = 512, vectorBytes = 16, unroll = 1, wholeStores = 0;
  /// `rows NAME`: the name of the row length (ExprKind::RowLength); empty if the spec has no rows.
  std::string rowLengthName;
  llvm::SMLoc rowsLoc;
  int64_t defaultRowLength = 0; // `rows NAME = INT`; 0: the variant must give it
  // Filled by the passes.
  int syncPoints = 0;
  BarrierScope barrierScope = BarrierScope::Full;
  int scratchCopies = 2; // copies of the scratch region that calls rotate through
  /// LL128: element loops walk whole 128-byte lines, 8 threads per line (lineLoops), so that the
  /// threads of a line store and poll it together.
  bool lineLoops = false;

  const Buffer* find(const std::string& name) const;
  const Buffer* input() const;
  const Buffer* output() const;
  std::vector<const Buffer*> scratchBuffers() const;
};

/// Prints the IR (`collc emit --emit=ir`), including what the passes have filled in.
void print(const Program& program, llvm::raw_ostream& out);

} // namespace collc::ir

#endif // COLLC_COMPILER_IR_H
