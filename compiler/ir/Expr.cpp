#include "compiler/ir/Expr.h"

#include <algorithm>
#include <llvm/Support/raw_ostream.h>

namespace collc::ir {
namespace {

Expr makeNode(ExprKind kind, CType type = CType::Int) {
  auto node = std::make_shared<ExprNode>();
  node->kind = kind;
  node->type = type;
  return node;
}

/// C's usual arithmetic conversions between the types the kernel's expressions have.
CType common(CType a, CType b) {
  if (a == CType::U64 || b == CType::U64)
    return CType::U64;
  if (a == CType::Long || b == CType::Long)
    return CType::Long;
  return CType::Int;
}

bool isConst(const Expr& e, int64_t v) {
  return e->kind == ExprKind::Const && e->value == v;
}

const char* opText(ExprKind kind) {
  switch (kind) {
  case ExprKind::Add:
    return "+";
  case ExprKind::Sub:
    return "-";
  case ExprKind::Mul:
    return "*";
  case ExprKind::Div:
    return "/";
  case ExprKind::Mod:
    return "%";
  case ExprKind::Eq:
    return "==";
  case ExprKind::Ne:
    return "!=";
  default:
    return "?";
  }
}

bool checkedApply(ExprKind kind, int64_t x, int64_t y, int64_t& result, std::string* why) {
  auto fail = [&](const char* message) {
    if (why)
      *why = message;
    return false;
  };
  switch (kind) {
  case ExprKind::Add:
    if (__builtin_add_overflow(x, y, &result))
      return fail("integer overflow");
    return true;
  case ExprKind::Sub:
    if (__builtin_sub_overflow(x, y, &result))
      return fail("integer overflow");
    return true;
  case ExprKind::Mul:
    if (__builtin_mul_overflow(x, y, &result))
      return fail("integer overflow");
    return true;
  case ExprKind::Div:
  case ExprKind::Mod:
    if (y == 0)
      return fail("division by zero");
    if (x < 0 || y < 0)
      return fail("division of a negative value");
    result = kind == ExprKind::Div ? x / y : x % y;
    return true;
  case ExprKind::CeilDiv:
  case ExprKind::RoundUp:
    if (y == 0)
      return fail(kind == ExprKind::CeilDiv ? "ceil_div by zero"
                                            : "round_up to a multiple of zero");
    if (x < 0 || y < 0)
      return fail(kind == ExprKind::CeilDiv ? "ceil_div of a negative value"
                                            : "round_up of a negative value");
    result = x / y + (x % y != 0);
    if (kind == ExprKind::RoundUp && __builtin_mul_overflow(result, y, &result))
      return fail("integer overflow");
    return true;
  case ExprKind::Min:
    result = std::min(x, y);
    return true;
  case ExprKind::Eq:
    result = x == y;
    return true;
  case ExprKind::Ne:
    result = x != y;
    return true;
  default:
    return fail("not a binary operator");
  }
}

} // namespace

Expr ExprNode::constant(int64_t v) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::Const;
  node->value = v;
  // Printed as a decimal literal (a negative one as minus a literal): int where int holds it.
  node->type = v >= -INT32_MAX && v <= INT32_MAX ? CType::Int : CType::Long;
  return node;
}
Expr ExprNode::rank() {
  return makeNode(ExprKind::Rank);
}
Expr ExprNode::nranks() {
  return makeNode(ExprKind::NRanks);
}
Expr ExprNode::count() {
  return makeNode(ExprKind::Count, CType::U64);
}
Expr ExprNode::root() {
  return makeNode(ExprKind::Root);
}
Expr ExprNode::rowLength() {
  return makeNode(ExprKind::RowLength, CType::U64);
}
Expr ExprNode::var(const std::string& name) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::Var;
  node->name = name;
  return node;
}

Expr ExprNode::binary(ExprKind kind, Expr a, Expr b) {
  if (a->kind == ExprKind::Const && b->kind == ExprKind::Const) {
    int64_t result;
    if (checkedApply(kind, a->value, b->value, result, nullptr))
      return constant(result);
  }
  switch (kind) {
  case ExprKind::Add:
    if (isConst(a, 0))
      return b;
    if (isConst(b, 0))
      return a;
    break;
  case ExprKind::Sub:
    if (isConst(b, 0))
      return a;
    break;
  case ExprKind::Mul:
    if (isConst(a, 1))
      return b;
    if (isConst(b, 1))
      return a;
    if (isConst(a, 0) || isConst(b, 0))
      return constant(0);
    break;
  case ExprKind::Div:
    if (isConst(b, 1))
      return a;
    break;
  case ExprKind::Min:
    if (structurallyEqual(a, b))
      return a;
    break;
  case ExprKind::CeilDiv:
  case ExprKind::RoundUp:
    if (isConst(b, 1) && a->type == CType::U64)
      return a;
    break;
  default:
    break;
  }
  auto node = std::make_shared<ExprNode>();
  node->kind = kind;
  const bool u64Function =
      kind == ExprKind::Min || kind == ExprKind::CeilDiv || kind == ExprKind::RoundUp;
  node->type = kind == ExprKind::Eq || kind == ExprKind::Ne ? CType::Int
               : u64Function ? CType::U64 // min_u64, ceil_div_u64, round_up_u64
                             : common(a->type, b->type);
  node->a = std::move(a);
  node->b = std::move(b);
  return node;
}

Expr ExprNode::chunkSize(Expr length) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::ChunkSize;
  node->type = CType::U64;
  node->a = std::move(length);
  return node;
}

Expr ExprNode::chunkBegin(Expr length, Expr index) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::ChunkBegin;
  node->type = CType::U64;
  node->a = std::move(length);
  node->b = std::move(index);
  return node;
}

Expr ExprNode::chunkLength(Expr length, Expr index) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::ChunkLength;
  node->type = CType::U64;
  node->a = std::move(length);
  node->b = std::move(index);
  return node;
}

bool structurallyEqual(const Expr& x, const Expr& y) {
  if (x == y)
    return true;
  if (!x || !y || x->kind != y->kind)
    return false;
  switch (x->kind) {
  case ExprKind::Const:
    return x->value == y->value;
  case ExprKind::Var:
    return x->name == y->name;
  case ExprKind::Rank:
  case ExprKind::NRanks:
  case ExprKind::Count:
  case ExprKind::Root:
  case ExprKind::RowLength:
    return true;
  default:
    return structurallyEqual(x->a, y->a) && structurallyEqual(x->b, y->b);
  }
}

bool dependsOnRank(const Expr& e) {
  if (!e)
    return false;
  if (e->kind == ExprKind::Rank || e->kind == ExprKind::Var)
    return true;
  return dependsOnRank(e->a) || dependsOnRank(e->b);
}

CRange rangeOf(CType type) {
  switch (type) {
  case CType::Int:
    return {INT32_MIN, INT32_MAX};
  case CType::Long:
    return {INT64_MIN + 1, INT64_MAX};
  case CType::U64:
    break;
  }
  return {0, INT64_MAX};
}

const char* cTypeName(CType type) {
  switch (type) {
  case CType::Int:
    return "int (32 bits)";
  case CType::Long:
    return "long (64 bits)";
  case CType::U64:
    break;
  }
  return "unsigned 64-bit integer";
}

std::string outOfRange(const Expr& e, int64_t value, const std::string& where) {
  const CRange range = rangeOf(e->type);
  if (value >= range.lo && value <= range.hi)
    return "";
  return "'" + toText(e) + "' is " + std::to_string(value) + " " + where + ", which the kernel's " +
         cTypeName(e->type) + " arithmetic does not hold";
}

std::string intLoopProblem(const Expr& begin, int64_t beginValue, const Expr& end,
                           int64_t endValue) {
  const CRange ints = rangeOf(CType::Int);
  for (auto [bound, value] : {std::pair{&begin, beginValue}, std::pair{&end, endValue}})
    if (value < ints.lo || value > ints.hi) {
      const std::string text = toText(*bound), number = std::to_string(value);
      return "the loop's bound " + (text == number ? number : "'" + text + "' = " + number) +
             " is past the int (32 bits) that counts the kernel's loop";
    }
  if (end->type == CType::U64 && beginValue < 0)
    return "the loop starts at " + std::to_string(beginValue) + " and its end '" + toText(end) +
           "' is unsigned: the kernel's loop would compare a negative counter in unsigned 64 bits";
  return "";
}

namespace {

/// The operations whose result wrapped operands would change take no negative operand: C's / and
/// % truncate where the proof floors, and min_u64, chunk(...) and a u64 comparison see a negative
/// value as a huge one. (Division and chunks check their own.)
std::string negativeOperand(const Expr& e, int64_t a, int64_t b) {
  const bool unsignedCompare = (e->kind == ExprKind::Eq || e->kind == ExprKind::Ne) &&
                               common(e->a->type, e->b->type) == CType::U64;
  if ((e->kind == ExprKind::Min || unsignedCompare) && (a < 0 || b < 0))
    return std::string(e->kind == ExprKind::Min ? "min" : "a comparison in unsigned 64 bits") +
           " of a negative value (" + std::to_string(a < 0 ? a : b) + ")";
  return "";
}

std::optional<int64_t> evaluateNode(const Expr& e, const Env& env, std::string* why);

} // namespace

std::optional<int64_t> evaluate(const Expr& e, const Env& env, std::string* why) {
  auto value = evaluateNode(e, env, why);
  if (!value)
    return std::nullopt;
  const CRange range = rangeOf(e->type);
  if (*value < range.lo || *value > range.hi) {
    if (why)
      *why = outOfRange(e, *value);
    return std::nullopt;
  }
  return value;
}

namespace {

std::optional<int64_t> evaluateNode(const Expr& e, const Env& env, std::string* why) {
  switch (e->kind) {
  case ExprKind::Const:
    return e->value;
  case ExprKind::Rank:
    return env.rank;
  case ExprKind::NRanks:
    return env.nranks;
  case ExprKind::Count:
    return env.count;
  case ExprKind::Root:
    return env.root;
  case ExprKind::RowLength:
    return env.rowLength;
  case ExprKind::Var: {
    auto it = env.vars.find(e->name);
    if (it == env.vars.end()) {
      if (why)
        *why = "unbound variable '" + e->name + "'";
      return std::nullopt;
    }
    return it->second;
  }
  case ExprKind::ChunkSize:
  case ExprKind::ChunkBegin:
  case ExprKind::ChunkLength: {
    auto length = evaluate(e->a, env, why);
    if (!length)
      return std::nullopt;
    if (*length < 0 || env.nranks <= 0 || *length > (int64_t(1) << 50)) {
      if (why)
        *why = "chunk of a negative or huge length";
      return std::nullopt;
    }
    int64_t perRank = (*length + env.nranks - 1) / env.nranks;
    int64_t size = (perRank + kChunkAlignElems - 1) / kChunkAlignElems * kChunkAlignElems;
    if (e->kind == ExprKind::ChunkSize)
      return size;
    auto index = evaluate(e->b, env, why);
    if (!index)
      return std::nullopt;
    if (*index < 0 || *index >= env.nranks) {
      if (why)
        *why = "chunk " + std::to_string(*index) +
               " does not exist: there are nranks = " + std::to_string(env.nranks) + " chunks";
      return std::nullopt;
    }
    int64_t begin = std::min(*length, *index * size);
    int64_t end = std::min(*length, (*index + 1) * size);
    return e->kind == ExprKind::ChunkBegin ? begin : end - begin;
  }
  default: {
    auto a = evaluate(e->a, env, why);
    if (!a)
      return std::nullopt;
    auto b = evaluate(e->b, env, why);
    if (!b)
      return std::nullopt;
    if (std::string problem = negativeOperand(e, *a, *b); !problem.empty()) {
      if (why)
        *why = problem;
      return std::nullopt;
    }
    int64_t result;
    if (!checkedApply(e->kind, *a, *b, result, why))
      return std::nullopt;
    return result;
  }
  }
}

} // namespace

namespace {

/// a * n + b + c * round_up(n / L, m), with a, b, c and m known numbers (L the row length).
struct Linear {
  int64_t a = 0, b = 0, c = 0, m = 1;
  bool constant() const { return a == 0 && c == 0; }
};

std::optional<Linear> linear(const Expr& e, const Env& env, std::string* why) {
  auto fail = [&](const std::string& message) -> std::optional<Linear> {
    if (why)
      *why = message;
    return std::nullopt;
  };
  auto isRows = [](const Expr& x) {
    return x->kind == ExprKind::Div && x->a->kind == ExprKind::Count &&
           x->b->kind == ExprKind::RowLength;
  };
  switch (e->kind) {
  case ExprKind::Count:
    return Linear{1, 0};
  case ExprKind::ChunkSize:
  case ExprKind::ChunkBegin:
  case ExprKind::ChunkLength:
    return fail("chunk(...) must be the whole size (chunk(a * n + b)), not part of it");
  case ExprKind::Div:
    if (isRows(e)) {
      if (env.rowLength <= 0)
        return fail("n / the row length needs a row length");
      return Linear{0, 0, 1, 1};
    }
    break;
  case ExprKind::RoundUp:
    if (isRows(e->a)) {
      std::string reason;
      auto multiple = evaluate(e->b, env, &reason);
      if (!multiple)
        return fail(reason);
      if (*multiple <= 0)
        return fail("round_up to a multiple of " + std::to_string(*multiple) +
                    "; the multiple must be positive");
      return Linear{0, 0, 1, *multiple};
    }
    break;
  case ExprKind::Add:
  case ExprKind::Sub:
  case ExprKind::Mul: {
    auto x = linear(e->a, env, why);
    auto y = x ? linear(e->b, env, why) : std::nullopt;
    if (!x || !y)
      return std::nullopt;
    Linear r;
    if (e->kind == ExprKind::Mul) {
      if (!x->constant() && !y->constant())
        return fail("n times n is not a size collc can prove for every n");
      if (!x->constant())
        std::swap(*x, *y);
      // x is a number k: k * (y.a n + y.b + y.c rows).
      const int64_t k = x->b;
      r.m = y->m;
      if (__builtin_mul_overflow(k, y->a, &r.a) || __builtin_mul_overflow(k, y->b, &r.b) ||
          __builtin_mul_overflow(k, y->c, &r.c))
        return fail("integer overflow");
      return r;
    }
    if (x->c != 0 && y->c != 0 && x->m != y->m)
      return fail("row counts rounded up to different multiples (" + std::to_string(x->m) +
                  " and " + std::to_string(y->m) + ") cannot be added");
    const int sign = e->kind == ExprKind::Add ? 1 : -1;
    r.m = x->c != 0 ? x->m : y->m;
    if (__builtin_add_overflow(x->a, sign * y->a, &r.a) ||
        __builtin_add_overflow(x->b, sign * y->b, &r.b) ||
        __builtin_add_overflow(x->c, sign * y->c, &r.c))
      return fail("integer overflow");
    return r;
  }
  default:
    break;
  }
  // Anything else must not mention n: a number for this rank count and row length.
  if (mentionsCount(e)) {
    if (e->kind == ExprKind::Div && e->a->kind == ExprKind::Count)
      return fail(env.rowLength > 0 ? "n may be divided only by the row length (n / row length: "
                                      "the row count)"
                                    : "n may be divided only by the row length of a spec with "
                                      "rows");
    if (e->kind == ExprKind::RoundUp || e->kind == ExprKind::CeilDiv)
      return fail("of n, only the row count may be rounded up: round_up(n / row length, k)");
    return fail("n may not be divided, nor taken a remainder of, except as n / row length");
  }
  std::string reason;
  if (auto value = evaluate(e, env, &reason))
    return Linear{0, *value};
  return fail(reason);
}

} // namespace

bool mentionsCount(const Expr& e) {
  return e && (e->kind == ExprKind::Count || mentionsCount(e->a) || mentionsCount(e->b));
}

std::optional<SizeForm> sizeForm(const Expr& e, const Env& env, std::string* why) {
  const bool chunked = e->kind == ExprKind::ChunkSize;
  auto form = linear(chunked ? e->a : e, env, why);
  if (!form)
    return std::nullopt;
  if (form->a < 0 || form->b < 0 || form->c < 0) {
    if (why)
      *why = "a size must not shrink as n grows, nor be negative";
    return std::nullopt;
  }
  if (chunked && form->c != 0) {
    if (why)
      *why = "chunk(...) of a row count is not a size collc can split";
    return std::nullopt;
  }
  return SizeForm{form->a, form->b, chunked, form->c, form->c != 0 ? form->m : 1};
}

std::string cName(const std::string& var) {
  if (var.empty() || var[0] != '%')
    return "v_" + var;
  std::string name = "g_" + var.substr(1);
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

std::string toC(const Expr& e) {
  switch (e->kind) {
  case ExprKind::Const:
    return std::to_string(e->value);
  case ExprKind::Rank:
    return "rank";
  case ExprKind::NRanks:
    return "kRanks";
  case ExprKind::Count:
    return "count";
  case ExprKind::Root:
    return "kRoot";
  case ExprKind::RowLength:
    return "kHidden";
  case ExprKind::Var:
    return cName(e->name);
  case ExprKind::ChunkSize:
    return "chunk_size(" + toC(e->a) + ")";
  case ExprKind::ChunkBegin:
    return "chunk_begin(" + toC(e->a) + ", " + toC(e->b) + ")";
  case ExprKind::ChunkLength:
    return "chunk_len(" + toC(e->a) + ", " + toC(e->b) + ")";
  case ExprKind::Min:
    return "min_u64(" + toC(e->a) + ", " + toC(e->b) + ")";
  case ExprKind::CeilDiv:
    return "ceil_div_u64(" + toC(e->a) + ", " + toC(e->b) + ")";
  case ExprKind::RoundUp:
    return "round_up_u64(" + toC(e->a) + ", " + toC(e->b) + ")";
  default:
    return "(" + toC(e->a) + " " + opText(e->kind) + " " + toC(e->b) + ")";
  }
}

void print(const Expr& e, llvm::raw_ostream& out) {
  switch (e->kind) {
  case ExprKind::NRanks:
    out << "nranks";
    return;
  case ExprKind::Count:
    out << "n";
    return;
  case ExprKind::Root:
    out << "root";
    return;
  case ExprKind::RowLength:
    out << "row_length";
    return;
  case ExprKind::ChunkSize:
    out << "chunk_size(";
    print(e->a, out);
    out << ")";
    return;
  case ExprKind::ChunkBegin:
  case ExprKind::ChunkLength:
    out << (e->kind == ExprKind::ChunkBegin ? "chunk_begin(" : "chunk_len(");
    print(e->a, out);
    out << ", ";
    print(e->b, out);
    out << ")";
    return;
  case ExprKind::Min:
  case ExprKind::CeilDiv:
  case ExprKind::RoundUp:
    out << (e->kind == ExprKind::Min       ? "min("
            : e->kind == ExprKind::CeilDiv ? "ceil_div("
                                           : "round_up(");
    print(e->a, out);
    out << ", ";
    print(e->b, out);
    out << ")";
    return;
  case ExprKind::Var:
    out << e->name;
    return;
  case ExprKind::Const:
  case ExprKind::Rank:
    out << toC(e);
    return;
  default:
    out << "(";
    print(e->a, out);
    out << " " << opText(e->kind) << " ";
    print(e->b, out);
    out << ")";
  }
}

std::string toText(const Expr& e) {
  std::string text;
  llvm::raw_string_ostream out(text);
  print(e, out);
  out.flush();
  return text;
}

} // namespace collc::ir
