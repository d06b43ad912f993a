// collc's intermediate representation. Sema builds it from the spec with every name resolved and
// every buffer access a Region (owner, slot, offset, length); the passes (compiler/Lower.cpp)
// rewrite it, step by step, into the program the kernel runs: element loops, barriers, and every
// load and store in the form its synchronization strategy gives it. The printer
// (compiler/CudaCodeGen.cpp) then prints each node as it is.
//
// Statement nodes are immutable and shared (Stmt is a pointer to const): a pass builds new nodes
// where it changes something (Mutator, Visitor.h) and shares the rest, and returns a new Program.
// A Program is a value: copying one copies its buffer table and step list, not its statements.
#ifndef COLLC_COMPILER_IR_IR_H
#define COLLC_COMPILER_IR_IR_H

#include "abi/Types.h"
#include "compiler/ir/Expr.h"

#include <functional>
#include <llvm/Support/SMLoc.h>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace collc::ir {

// ---------------------------------------------------------------- buffers and regions
/// Aux: a user buffer after the input and the output (`residual`, `weight`): the caller's memory,
/// passed in collc_params::aux; it holds the caller's data when the call starts and may be written.
enum class BufferRole { Input, Output, Scratch, Aux };

/// How a scratch buffer's elements are stored; its sync strategy (compiler/sync/) decides. The
/// ABI's enum, so the runtime sizes the heap by what the IR says.
using Storage = ScratchStorage;
/// LL128 lines, per slot or with every chunk starting a line.
inline bool isLL128Lines(Storage storage) {
  return storage == Storage::LL128Lines || storage == Storage::LL128LinesPerChunk;
}

struct Buffer {
  std::string name;
  BufferRole role = BufferRole::Scratch;
  Expr slots;            // number of slots (1 for user buffers)
  Expr slotElems;        // elements per slot
  int scratchIndex = -1; // position among scratch buffers: collc_params::scratch_offset[i]
  int auxIndex = -1;     // position among aux user buffers: collc_params::aux[i]
  llvm::SMLoc loc;
  /// Made by a pass, not declared in the spec (its name cannot be a spec's name).
  bool generated = false;
  /// The element type the spec fixes (`out: fp8e4m3[n]`); nullopt: the variant's, `T`.
  std::optional<ElementType> fixedType;
  // Set by the sync lowering:
  Storage storage = Storage::Elements;
  /// AtomicLines: the index of its LineHeads buffer.
  int side = -1;
  /// Readers poll this buffer's data (it is written by peers under a data-arrival strategy).
  bool polled = false;
  /// What every copy holds before the first call: zeros, or -0.0 in every element (sentinel).
  bool filledWithNegativeZero = false;
};

/// An index into Program::buffers.
using BufferId = int;

/// A contiguous run of elements of one slot of one buffer, on this rank or on a peer.
struct Region {
  BufferId buffer = -1;
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

// ---------------------------------------------------------------- loads and stores
/// How a statement reads an operand. Sema makes every read Plain; the sync lowering passes make
/// reads of data peers send into polls, and the register passes make some reads Register.
enum class LoadKind {
  Plain,        // load_plain: ordered by a barrier or by program order within the thread
  PollPacket,   // ll_load: waits until the packets carry this call's flag
  PollSentinel, // sentinel_load: waits until no element is -0.0, then puts -0.0 back
  TakeLine,     // atomic_lines_take: waits until the line's count is nranks, takes and zeroes it
  PollLine,     // ll128_load: waits until the line carries this call's flag
  Register,     // a value this thread holds already (Let, Assign::keep): no memory access
};

/// How a statement writes its target.
enum class StoreKind {
  Plain,         // store_plain
  FlaggedPacket, // ll_store: data and this call's flag in one 16-byte store per packet
  Sentinel,      // sentinel_store: -0.0 is sent as +0.0
  LineAdd,       // atomic_lines_add: vector atomics into the owner's accumulation lines
  FlaggedLine,   // ll128_store: 8 threads store a line of data and flag together
};

/// The device helper file (compiler/device/) that an operation prints as, which a kernel with it
/// pastes (CudaCodeGen.cpp); empty for one the common files cover. A strategy's operations name
/// its files, so the printer never chooses them.
std::string_view helperFile(LoadKind load);
std::string_view helperFile(StoreKind store);

enum class LoopRange { Peers, Ranks, Interval };

/// One operand of a statement: a region read in some way. With `set`, the family of regions
/// obtained by binding `setVar` to every rank of the set (`inbox[peers]`: reduce operands only).
struct Operand {
  Region region;
  LoadKind load = LoadKind::Plain;
  std::string reg; // Register: the register that holds it
  std::optional<LoopRange> set;
  std::string setVar;
};

// ---------------------------------------------------------------- statements
enum class StmtKind {
  // What a spec says.
  For,       // for var in peers|ranks|lo..hi { body }
  If,        // if condition { body }
  Put,       // target (a peer's scratch, or own) <- source
  AtomicAdd, // target += source with the GPU's atomic add
  Assign,    // target = source, or reduce(operands), plus addends
  Row,       // target = a row operation (RowOp) of whole rows, row by row
  // What the passes add.
  ElementLoop, // a thread's elements of a step: every statement inside runs per element index
  RowLoop,     // a block's rows of a step split by rows
  Barrier,     // waits until the steps it orders have finished on the ranks and blocks in scope
  Let,         // reg = an operand, read once for the statements after it
};

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  const StmtKind kind;
  const llvm::SMLoc loc;
  virtual ~StmtNode() = default;

  /// The node as its type (the caller has checked `kind`).
  template <typename T> const T& as() const { return static_cast<const T&>(*this); }

protected:
  StmtNode(StmtKind kind, llvm::SMLoc loc) : kind(kind), loc(loc) {}
};

/// `var` takes value(index) for index in [begin, end): peers -> (rank + index) % nranks for
/// index 1..nranks-1; ranks and intervals -> index. `index` names the iteration index in `value`.
struct For final : StmtNode {
  std::string var, index;
  LoopRange range;
  Expr begin, end, value;
  std::vector<Stmt> body;

  For(llvm::SMLoc loc, std::string var, std::string index, LoopRange range, Expr begin, Expr end,
      Expr value, std::vector<Stmt> body)
      : StmtNode(StmtKind::For, loc), var(std::move(var)), index(std::move(index)), range(range),
        begin(std::move(begin)), end(std::move(end)), value(std::move(value)),
        body(std::move(body)) {}
};

/// `condition` is an Eq or Ne expression.
struct If final : StmtNode {
  Expr condition;
  std::vector<Stmt> body;

  If(llvm::SMLoc loc, Expr condition, std::vector<Stmt> body)
      : StmtNode(StmtKind::If, loc), condition(std::move(condition)), body(std::move(body)) {}
};

/// Copies source.length elements of `source` to the start of `target`.
struct Put final : StmtNode {
  Operand source;
  Region target;
  StoreKind store;

  Put(llvm::SMLoc loc, Operand source, Region target, StoreKind store = StoreKind::Plain)
      : StmtNode(StmtKind::Put, loc), source(std::move(source)), target(std::move(target)),
        store(store) {}
};

struct AtomicAdd final : StmtNode {
  Operand source;
  Region target;

  AtomicAdd(llvm::SMLoc loc, Operand source, Region target)
      : StmtNode(StmtKind::AtomicAdd, loc), source(std::move(source)), target(std::move(target)) {}
};

/// target.length elements: a copy of operands[0] (reduce false, one operand), or the variant's
/// reduction over the operands in order; then `addends` added in float with '+'; rounded once.
/// With `keep`, the result also stays in that register for later statements of the thread.
struct Assign final : StmtNode {
  Region target;
  bool reduce;
  std::vector<Operand> operands;
  std::vector<Operand> addends;
  StoreKind store;
  std::string keep;

  Assign(llvm::SMLoc loc, Region target, bool reduce, std::vector<Operand> operands,
         std::vector<Operand> addends, StoreKind store = StoreKind::Plain, std::string keep = "")
      : StmtNode(StmtKind::Assign, loc), target(std::move(target)), reduce(reduce),
        operands(std::move(operands)), addends(std::move(addends)), store(store),
        keep(std::move(keep)) {}
};

/// What a row statement computes from a whole row; compiler/ir/RowOps.h describes each (its
/// name, its parameters, its device helpers).
enum class RowOp {
  RmsNorm, // target[t, i] = rows[t, i] / sqrt(mean_i(rows[t, :]^2) + eps) * weight[i]
  /// target[t, i] = e4m3(rmsnorm(rows, weight)[t, i] / scale[0]): rounded to nearest even,
  /// saturating at ±448 (`quantize(rmsnorm(rows, weight), scale=S)` into an fp8e4m3 target)
  RmsNormFp8,
  /// target[t, i] = e4m3(rmsnorm(rows, weight)[t, i] / scale[t]), scale[t] = max(amax_i
  /// |rmsnorm(rows, weight)[t, i]| / 448, 1 / (448 * 512)), written by the statement
  /// (`quantize(rmsnorm(rows, weight), token_scale=S)`, interpret/Float8.h)
  RmsNormFp8PerToken,
  /// target[t, i] = e2m1(rmsnorm(rows, weight)[t, i] * G / SF[t, b]) for i in block b (16
  /// elements), SF[t, b] = e4m3(G * amax_{i in b} |rmsnorm(...)[t, i]| / 6) written by the
  /// statement, G = global_scale[0] read (`quantize(rmsnorm(rows, weight), block_scale=BS,
  /// global_scale=G)`, interpret/Float4.h); BS linear, SF[t, b] at t * ceil_div(ROWS, 16) + b
  RmsNormNvfp4,
  /// The same with BS in the 128x4-swizzled layout (`swizzled_block_scale=BS`)
  RmsNormNvfp4Swizzled,
};

/// target[t, :] = op(rows[t, :], params...), per row t: a statement that needs a whole row at
/// once, so its step is split by rows (RowEpilogue.h). The passes treat every op alike: the rows
/// are one operand (a register once CacheRows keeps them), the parameters are read whole, in the
/// order RowOps.h lists them. What an op computes lives in its lowering (CudaCodeGen), its
/// float64 meaning (the interpreter) and its device file.
struct RowStmt final : StmtNode {
  RowOp op;
  Region target;
  Operand rows;
  std::vector<Operand> params;
  StoreKind store;

  RowStmt(llvm::SMLoc loc, RowOp op, Region target, Operand rows, std::vector<Operand> params,
          StoreKind store = StoreKind::Plain)
      : StmtNode(StmtKind::Row, loc), op(op), target(std::move(target)), rows(std::move(rows)),
        params(std::move(params)), store(store) {}
};

/// How an element loop walks its elements.
enum class LoopShape {
  Vectors,    // thread t takes vectors t, t + threads, ... of kVec elements
  WholeLines, // the same, run to whole 128-byte lines (accumulation lines' 8 threads act together)
  LL128Lines, // 8 threads per 120-byte line of data, thread 7 with half a vector
  RowVectors, // within a row of a RowLoop: the block's threads take the row's vectors
};

/// Elements [0, bound) of the statements inside, which guard each access with their own length.
struct ElementLoop final : StmtNode {
  Expr bound;
  LoopShape shape;
  int vectorElems; // elements per vector memory operation
  int unroll;      // vectors per thread per iteration
  std::vector<Stmt> body;

  ElementLoop(llvm::SMLoc loc, Expr bound, LoopShape shape, int vectorElems, int unroll,
              std::vector<Stmt> body)
      : StmtNode(StmtKind::ElementLoop, loc), bound(std::move(bound)), shape(shape),
        vectorElems(vectorElems), unroll(unroll), body(std::move(body)) {}
};

/// Block b takes rows b, b + blocks, ...; the body (RowVectors element loops and RowStmt) runs
/// per row. `cachedVectors` > 0: a thread keeps its vectors of the row in registers (row_cache).
struct RowLoop final : StmtNode {
  static constexpr std::string_view kHelperFile = "rows.cuh"; // block_sum, row splitting
  int cachedVectors;
  std::vector<Stmt> body;

  RowLoop(llvm::SMLoc loc, int cachedVectors, std::vector<Stmt> body)
      : StmtNode(StmtKind::RowLoop, loc), cachedVectors(cachedVectors), body(std::move(body)) {}
};

enum class BarrierScope {
  /// Block b of every rank waits only for block b of the others: valid when every dependency
  /// crosses ranks at the same element index of loops of the same bound (same block does both).
  Matched,
  /// Every block waits for every block of every rank.
  Full,
};

/// Barrier `index` of the call (0, 1, ...): the step it opens runs after `orders` (steps) have
/// finished on every rank, in `scope`.
struct Barrier final : StmtNode {
  static constexpr std::string_view kHelperFile = "barrier.cuh";
  int index;
  BarrierScope scope;
  std::vector<int> orders;

  Barrier(llvm::SMLoc loc, int index, BarrierScope scope, std::vector<int> orders)
      : StmtNode(StmtKind::Barrier, loc), index(index), scope(scope), orders(std::move(orders)) {}
};

/// reg = value, a vector of the value's region at the element index, for the statements after.
struct Let final : StmtNode {
  std::string reg;
  Operand value;

  Let(llvm::SMLoc loc, std::string reg, Operand value)
      : StmtNode(StmtKind::Let, loc), reg(std::move(reg)), value(std::move(value)) {}
};

// ---------------------------------------------------------------- steps and programs
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
  /// its own; expandRepeatedSteps (ExpandSteps.h) unrolls it for one rank count. A wait for the
  /// step itself means the previous repetition. Empty var: an ordinary step.
  std::string repeatVar;
  Expr repeatBegin, repeatEnd;
  std::vector<Stmt> body;
};

/// Launch defaults a spec gives (`launch blocks=... threads=...`).
struct LaunchDefaults {
  int blocks = 4, threads = 512, vectorBytes = 16, unroll = 1, wholeStores = 0;
};

struct Program {
  std::string name;
  CollectiveKind kind = CollectiveKind::AllReduce;
  llvm::SMLoc loc;
  int minRanks = 2, maxRanks = 8;
  std::vector<Buffer> buffers;
  std::vector<Step> steps;
  SyncKind defaultSync = SyncKind::Barrier;
  llvm::SMLoc syncLoc; // the spec's `sync` clause, if any
  LaunchDefaults launch;
  /// `rows NAME`: the name of the row length (ExprKind::RowLength); empty if the spec has no rows.
  std::string rowLengthName;
  llvm::SMLoc rowsLoc;
  int64_t defaultRowLength = 0; // `rows NAME = INT`; 0: the variant must give it

  // What lowering settled, for the printer and the runtime.
  SyncKind sync = SyncKind::Barrier; // the strategy being compiled
  int barriers = 0;                  // barriers per call
  int scratchCopies = 2;             // copies of the scratch region that calls rotate through

  const Buffer& buffer(BufferId id) const { return buffers[size_t(id)]; }
  const Buffer& buffer(const Region& region) const { return buffer(region.buffer); }
  /// The buffer of that name, or -1.
  BufferId find(const std::string& name) const;
  BufferId input() const;
  BufferId output() const;
  /// Scratch buffers in scratchIndex order.
  std::vector<BufferId> scratchBuffers() const;
  /// True if any buffer has this storage.
  bool uses(Storage storage) const;
  /// Some buffer is stored as LL128 lines (isLL128Lines).
  bool usesLL128Lines() const {
    return uses(Storage::LL128Lines) || uses(Storage::LL128LinesPerChunk);
  }
};

/// The spec line of a location (0 where unknown), for printing.
using LineOf = std::function<unsigned(llvm::SMLoc)>;

/// Prints the IR (`collc emit --emit=ir`): every node as it is, with the spec line of each where
/// `lineOf` is given.
COLLC_LIBRARY_LOCAL void print(const Program& program, llvm::raw_ostream& out,
                               const LineOf& lineOf = {});
COLLC_LIBRARY_LOCAL void print(const Stmt& stmt, const Program& program, llvm::raw_ostream& out,
                               unsigned indent = 0, const LineOf& lineOf = {});
/// print() without the element loops' vector widths and unrolls: the program as its proof sees
/// it. The proof (verify/, execute/) models a thread per element, so it reads neither.
COLLC_LIBRARY_LOCAL void printForProof(const Program& program, llvm::raw_ostream& out,
                                       const LineOf& lineOf = {});

} // namespace collc::ir

#endif // COLLC_COMPILER_IR_IR_H
