// Integer expressions of the IR: sizes, slot indices, ranks, loop bounds and conditions, with every
// name resolved. Nodes are immutable and shared; the factories fold constants so that emitted code
// stays readable.
#ifndef COLLC_COMPILER_IR_EXPR_H
#define COLLC_COMPILER_IR_EXPR_H

#include "abi/CollectiveShapes.h"
#include "dsl/LibraryLocal.h"

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
  CeilDiv,     // ceil_div(a, b): a / b rounded up (b > 0)
  RoundUp,     // round_up(a, b): a rounded up to a multiple of b (b > 0)
  ChunkSize,   // chunk_size(a): elements per chunk when a elements are split into nranks chunks
  ChunkBegin,  // chunk_begin(a, b): first element of chunk b of a elements
  ChunkLength, // chunk_len(a, b): elements of chunk b (the last ones may be short or empty)
  Root,      // the root rank of a broadcast or reduce: a compile-time constant, same on every rank
  RowLength, // the row length of a spec with `rows NAME` (kHidden): a compile-time constant
  Eq,        // a == b: 1 or 0 (conditions of `if`)
  Ne,        // a != b: 1 or 0
};

/// The C type an expression has as toC prints it into the kernel: the spec's rank expressions are
/// `int` (rank, kRanks, kRoot and loop variables are; so is a literal within int's range), a
/// literal past it is `long` (64 bits), and n (`count`), the row length (`kHidden`), chunk sizes,
/// `min_u64`, `ceil_div_u64` and `round_up_u64` are `u64`. An operation takes C's usual arithmetic
/// conversions: u64 if either operand is, else long if either is, else int; a comparison is an int.
enum class CType { Int, Long, U64 };

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  CType type = CType::Int; // as printed (toC); set by the factories
  int64_t value = 0;       // Const
  std::string name;        // Var
  Expr a, b;               // operands; for the chunk kinds a is the length being split, b the chunk

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

/// The values a C type holds that the verifier and the host can hold too: an int's 32 bits, a
/// long's 64 (less its most negative value, which no literal can print), and a u64's non-negative
/// values up to 2^63 - 1.
struct CRange {
  int64_t lo, hi;
};
CRange rangeOf(CType type);
const char* cTypeName(CType type);

/// Why `value`, the exact value of `e` (`where`: "on rank 1"), is not the value the kernel computes
/// for it (its C type does not hold it: the kernel's int would overflow, or its u64 arithmetic
/// wrap), or "" where it is. Every evaluation of an expression the kernel computes checks each of
/// its operations so.
std::string outOfRange(const Expr& e, int64_t value, const std::string& where = "here");

/// Why a loop the kernel runs as `for (int i = begin; i < end; ++i)` (CudaCodeGen) would not run
/// for i = beginValue .. endValue - 1: its int counter starts at begin and stops at end, so both
/// must be ints, and an end of type u64 compares the counter in u64, where it must not be negative.
/// "" where it runs so.
std::string intLoopProblem(const Expr& begin, int64_t beginValue, const Expr& end,
                           int64_t endValue);

/// Values of the free variables when an expression is evaluated (by the verifier, the host).
struct Env {
  int64_t rank = 0;
  int64_t nranks = 2;
  int64_t count = 0;
  std::map<std::string, int64_t> vars;
  int64_t root = 0;
  int64_t rowLength = 0; // `rows NAME`: the row length the variant (or the verifier) picked
};

/// Evaluates with overflow and division checks, and checks every operation's value against the
/// range of its C type (outOfRange) and the operands of the operations that wrapped values would
/// change (/, %, min, chunk(...), and == or != in u64) for negatives; on failure returns nullopt
/// and says why.
std::optional<int64_t> evaluate(const Expr& e, const Env& env, std::string* why = nullptr);

/// A size as a function of n for one rank count and row length L: `perCount * n + constant +
/// perRow * round_up(n / L, rowMultiple)` (n / L the row count of a spec with rows, padded to a
/// multiple of rowMultiple), or the chunk size of `perCount * n + constant` (`chunked`). The only
/// ways sizes may use n (Sema refuses any other), so that the runtime can compute sizes from plain
/// numbers and the verifier's argument over every n holds.
struct SizeForm {
  int64_t perCount = 0;
  int64_t constant = 0;
  bool chunked = false;
  int64_t perRow = 0;      // elements per (padded) row; 0: no per-row part
  int64_t rowMultiple = 1; // the row count rounded up to a multiple of this (1: not padded)
};
/// The form of size expression `e` with env's nranks and row length, or nullopt (and why) where n
/// appears otherwise (under a product with n, a division by anything but the row length, a
/// remainder, or a chunk(...) that is not the whole size) or the value is negative.
std::optional<SizeForm> sizeForm(const Expr& e, const Env& env, std::string* why = nullptr);

/// The C name of a variable: a spec's `x` is `v_x`; a name the compiler made (`%q0`, `%i.p`:
/// '%' cannot start a name in a spec) is `g_q0`, `g_i_p`. The two never meet.
std::string cName(const std::string& var);

/// C expression text; `nranksText`/`countText`/`rankText` name those values in the target code.
std::string toC(const Expr& e);
COLLC_LIBRARY_LOCAL void print(const Expr& e, llvm::raw_ostream& out);
/// print's text as a string, for messages.
std::string toText(const Expr& e);

} // namespace collc::ir

#endif // COLLC_COMPILER_IR_EXPR_H
