// Integer expressions of the IR: sizes, slot indices, ranks, loop bounds and conditions, with every
// name resolved. Nodes are immutable and shared; the factories fold constants so that emitted code
// stays readable.
#ifndef COLLC_COMPILER_IR_EXPR_H
#define COLLC_COMPILER_IR_EXPR_H

#include "abi/CollectiveShapes.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace llvm {
class raw_ostream;
}

namespace collc::ir {

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

/// The C name of a variable: a spec's `x` is `v_x`; a name the compiler made (`%q0`, `%i.p`:
/// '%' cannot start a name in a spec) is `g_q0`, `g_i_p`. The two never meet.
std::string cName(const std::string& var);

/// C expression text; `nranksText`/`countText`/`rankText` name those values in the target code.
std::string toC(const Expr& e);
void print(const Expr& e, llvm::raw_ostream& out);

} // namespace collc::ir

#endif // COLLC_COMPILER_IR_EXPR_H
