// The abstract syntax tree of a spec, exactly as written: names are unresolved and every node keeps
// the location of the text it came from, so that every later stage can point back at the spec.
#ifndef COLLC_DSL_AST_H
#define COLLC_DSL_AST_H

#include "abi/Types.h"
#include "dsl/LibraryLocal.h"

#include <cstdint>
#include <llvm/Support/SMLoc.h>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace collc::ast {

// ---- Integer expressions: sizes, slot indices, ranks ("(rank + i) % nranks") ----
struct Expr {
  enum class Kind { Integer, Name, Binary, Call };
  Kind kind;
  llvm::SMLoc loc;
  uint64_t value = 0;                          // Integer
  std::string name;                            // Name; Call: the function ("chunk")
  char op = 0;                                 // Binary: + - * / %
  std::vector<std::unique_ptr<Expr>> operands; // Binary: lhs, rhs; Call: arguments
};
using ExprPtr = std::unique_ptr<Expr>;

// ---- References to buffers ----
/// `[peer.]name[slot].chunk(k)`: a region of a buffer on this rank or on a peer.
struct RegionRef {
  llvm::SMLoc loc;
  ExprPtr peer; // null: this rank's own buffer
  std::string name;
  llvm::SMLoc nameLoc;
  ExprPtr slot; // `name[e]`
  /// `name[peers]` / `name[ranks]`: every slot of that set (only as a reduce operand).
  std::optional<std::string> slotSet;
  ExprPtr chunk; // `.chunk(k)`: the k-th of nranks equal parts
  ExprPtr block; // `.block(k)`: the k-th of nranks exact blocks (size / nranks elements each)
};

// ---- Statements ----
struct Stmt {
  /// RowNorm: `target = rmsnorm(rows, weight)`, a row-wise normalisation (see Spec::rowLengthName).
  enum class Kind { Put, AtomicAdd, Copy, Reduce, For, Wait, If, RowNorm };
  Kind kind;
  llvm::SMLoc loc;
  RegionRef target;               // Put/AtomicAdd/Copy/Reduce/RowNorm: where data goes
  std::vector<RegionRef> sources; // Put/AtomicAdd/Copy: one; Reduce: the operands;
                                  // RowNorm: the rows to normalise, then the weight
  std::string function;           // RowNorm: the row operation's name ("rmsnorm")
  /// RowNorm inside `quantize(..., KEY=S, ...)`: each keyword argument as written ("scale", or
  /// "block_scale" and "global_scale"), its S a source after the weight in the same order; empty:
  /// not quantized. Which keywords go together is the compiler's (compiler/ir/RowOps.h).
  struct QuantArg {
    std::string keyword;
    llvm::SMLoc loc;
  };
  std::vector<QuantArg> quantize;
  llvm::SMLoc quantizeLoc; // of the word 'quantize'
  /// Copy/Reduce: `target = x + a + b` / `target = reduce(...) + a`: regions added elementwise
  /// (always with '+', whatever the reduction operator) after the copy or the reduce.
  std::vector<RegionRef> addends;
  // For: `for var in peers|ranks|lo..hi { body }`
  std::string var;
  llvm::SMLoc varLoc;
  std::string rangeSet; // "peers" or "ranks"; empty for lo..hi
  ExprPtr lo, hi;
  std::vector<std::unique_ptr<Stmt>> body;
  // Wait: `wait step`
  std::string waitFor;
  // If: `if lo == hi { body }` (compare '=') or `if lo != hi { body }` (compare '!')
  char compare = 0;
};
using StmtPtr = std::unique_ptr<Stmt>;

struct Step {
  std::string name;
  llvm::SMLoc loc;
  std::vector<StmtPtr> body;
  // `step name for var in lo..hi { ... }`: the step repeated once per value of var (else empty).
  std::string repeatVar;
  llvm::SMLoc repeatVarLoc;
  ExprPtr repeatLo, repeatHi;
};

/// `name: T[size]` in `buffers`, or `scratch name[slots]: T[size]`.
struct BufferDecl {
  std::string name;
  llvm::SMLoc loc;
  bool scratch = false;
  ExprPtr slots;           // scratch only; null: one slot
  std::string elementType; // "T": the element type of the variant
  llvm::SMLoc elementTypeLoc;
  ExprPtr size; // elements per slot
};

struct LaunchKnob {
  std::string name;
  llvm::SMLoc loc;
  uint64_t value = 0;
};

struct Spec {
  std::string name;
  llvm::SMLoc loc;
  std::string kindName;
  llvm::SMLoc kindLoc;
  std::optional<CollectiveKind> kind;
  uint64_t minRanks = 2, maxRanks = 8;
  llvm::SMLoc ranksLoc;
  std::vector<BufferDecl> buffers; // user buffers first, in declaration order, then scratch
  /// `rows NAME`: user buffers of n elements are n / NAME rows of NAME elements; NAME is a size
  /// the variant fixes (`--hidden`). Empty: the spec has no row shape.
  std::string rowLengthName;
  llvm::SMLoc rowsLoc;
  uint64_t defaultRowLength = 0;   // `rows NAME = INT`; 0: none (the variant must give it)
  llvm::SMLoc defaultRowLengthLoc; // the INT of `rows NAME = INT`; invalid: none given
  std::string syncName;
  llvm::SMLoc syncLoc;
  std::vector<LaunchKnob> launch;
  std::vector<Step> steps;
};

/// Prints the tree in an indented, stable form (`collc emit --emit=ast`).
COLLC_LIBRARY_LOCAL void print(const Spec& spec, llvm::raw_ostream& out);
COLLC_LIBRARY_LOCAL void print(const Expr& expr, llvm::raw_ostream& out);

} // namespace collc::ast

#endif // COLLC_DSL_AST_H
