#include "compiler/execute/Affine.h"

#include <algorithm>
#include <numeric>

namespace collc::execute {
namespace {

/// floor(a / b) for b != 0, exact for negative values too.
int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

int64_t ceilDiv(int64_t a, int64_t b) {
  return -floorDiv(-a, b);
}

/// Dividing u * q + v by d > 0 is exact in q when d divides u; otherwise the run must split q
/// (SplitQ) so that it is.
void requireExactInQ(int64_t u, int64_t d) {
  if (u % d != 0)
    throw SplitQ{d / std::gcd(u < 0 ? -u : u, d)};
}

} // namespace

void Arith::fixedResidue() {
  throw AffineError{"a value that depends on the residue of n in a run with it fixed"};
}

int64_t Arith::boundingPart(const Affine& d) const {
  if (d.w == 0)
    return d.v;
  if (!residueFrom_)
    fixedResidue();
  // u > 0: the bound -(w s + v) / u is largest where w s + v is least; u < 0: where it is most.
  // Linear in s, so at one end of the range.
  const __int128 first = __int128(d.w) * *residueFrom_ + d.v;
  const __int128 last = __int128(d.w) * residueLast_ + d.v;
  const __int128 bounding = d.u > 0 ? std::min(first, last) : std::max(first, last);
  if (bounding < INT64_MIN || bounding > INT64_MAX)
    overflow();
  return int64_t(bounding);
}

int Arith::compareDependent(const Affine& d) {
  if (!symbolic_)
    throw AffineError{"a value that depends on n in a run with n fixed"};
  if (const auto stretch = stretchOf(d)) {
    // Its sign at x0, kept as x grows while k * x + c does not reach 0: for every x if the sign
    // is k's, else for every x < -c / k; a 0 only at x0 itself.
    const int64_t k = stretch->k, c = d.v;
    const __int128 value = __int128(k) * stretch->x0 + c;
    int64_t& limit = *stretch->limit;
    if (value == 0) {
      limit = std::min(limit, stretch->x0);
      return 0;
    }
    const int sign = value < 0 ? -1 : 1;
    if (sign != (k < 0 ? -1 : 1))
      limit = std::min(limit, ceilDiv(-c, k) - 1);
    return sign;
  }
  // u * q + v has the sign of u for every q > -v / u (v: the part free of q at the residue that
  // bounds it). Most comparisons hold from the threshold already recorded on:
  // floor(-v / u) + 1 <= threshold_ exactly when -v / u < threshold_, which needs no division.
  const int64_t v = d.w == 0 ? d.v : boundingPart(d);
  const __int128 bound = __int128(threshold_) * d.u;
  const bool covered = d.u > 0 ? -__int128(v) < bound : -__int128(v) > bound;
  if (!covered)
    threshold_ = std::max(threshold_, floorDiv(-v, d.u) + 1);
  return d.u < 0 ? -1 : 1;
}

void Arith::overflow() {
  throw AffineError{"integer overflow"};
}

bool Arith::negative(const Affine& a) {
  if (a.isConstant())
    return a.v < 0;
  if (!symbolic_)
    throw AffineError{"a value that depends on n in a run with n fixed"};
  if (const auto stretch = stretchOf(a)) {
    // Negative at x0 and k > 0: up to x = ceil(-c / k) - 1; not negative and k < 0: up to
    // x = floor(c / -k); otherwise for every larger x.
    const int64_t k = stretch->k, c = a.v;
    int64_t& limit = *stretch->limit;
    const bool isNegative = __int128(k) * stretch->x0 + c < 0;
    if (isNegative && k > 0)
      limit = std::min(limit, ceilDiv(-c, k) - 1);
    else if (!isNegative && k < 0)
      limit = std::min(limit, floorDiv(c, -k));
    return isNegative;
  }
  // u > 0: u * q + v >= 0 from q = ceil(-v / u) on; u < 0: negative from floor(v / -u) + 1 on.
  // Where the threshold recorded already is as large (u > 0: -v / u <= threshold_; u < 0:
  // v / -u < threshold_), it stays as it is, and no division is needed to see that.
  const int64_t v = a.w == 0 ? a.v : boundingPart(a);
  const __int128 bound = __int128(threshold_) * (a.u > 0 ? a.u : -__int128(a.u));
  const bool covered = a.u > 0 ? -__int128(v) <= bound : __int128(v) < bound;
  if (!covered)
    threshold_ = std::max(threshold_, a.u > 0 ? ceilDiv(-v, a.u) : floorDiv(v, -a.u) + 1);
  return a.u < 0;
}

Affine Arith::floorDivide(const Affine& a, int64_t d) {
  requireExactInQ(a.u, d);
  Affine quotient{a.u / d, 0, 0};
  if (a.w % d == 0) {
    quotient.w = a.w / d;
    quotient.v = floorDiv(a.v, d);
    return quotient;
  }
  if (!residueFrom_)
    fixedResidue();
  // floor((w s + v) / d) = wq * s + floor((wr * s + v) / d) with w = wq * d + wr, wr of w's sign
  // and |wr| < d (chunk(n)'s ceil(s / 8R) has wq = 0): the last term is c at the first s, and
  // stays c while wr * s + v stays in [d * c, d * (c + 1)), which s moves it out of one way only.
  const int64_t wq = a.w / d, wr = a.w - wq * d;
  const __int128 first = __int128(wr) * *residueFrom_ + a.v;
  __int128 c = first / d;
  if (first % d != 0 && first < 0)
    --c;
  // Both numerators are at least |wr| * s0 >= 0, so the divisions are floors.
  const __int128 lastS =
      wr > 0 ? (__int128(d) * (c + 1) - 1 - a.v) / wr : (a.v - __int128(d) * c) / -__int128(wr);
  if (c < INT64_MIN || c > INT64_MAX)
    overflow();
  residueLimit_ = int64_t(std::min<__int128>(residueLimit_, lastS));
  quotient.w = wq;
  quotient.v = int64_t(c);
  return quotient;
}

namespace {

/// evaluate() without the optional: false (with `why`) where it gives nullopt. Its recursion
/// keeps values in registers rather than in optionals through memory: the verifier's runs
/// evaluate every region of every statement.
bool evaluateInto(const ir::Expr& e, const Bindings& env, Arith& arith, std::string* why,
                  Affine& out);
bool evaluateNode(const ir::Expr& e, const Bindings& env, Arith& arith, std::string* why,
                  Affine& out);

} // namespace

std::optional<Affine> evaluate(const ir::Expr& e, const Bindings& env, Arith& arith,
                               std::string* why) {
  Affine value;
  if (!evaluateInto(e, env, arith, why, value))
    return std::nullopt;
  return value;
}

namespace {

bool evaluateInto(const ir::Expr& e, const Bindings& env, Arith& arith, std::string* why,
                  Affine& out) {
  if (!evaluateNode(e, env, arith, why, out))
    return false;
  // The kernel computes e in its C type (ir::CType): the proof holds for the kernel only where
  // that type holds every value. A value that depends on n is a u64, which must not be negative.
  if (out.isConstant()) {
    if (out.v >= 0 && out.v <= INT32_MAX) // in every C type's range
      return true;
    const ir::CRange range = ir::rangeOf(e->type);
    if (out.v >= range.lo && out.v <= range.hi)
      return true;
    if (why)
      *why = ir::outOfRange(e, out.v, "on rank " + std::to_string(env.rank));
    return false;
  }
  if (!arith.negative(out))
    return true;
  if (why)
    *why = "'" + ir::toText(e) +
           "' is negative for large n, which the kernel's unsigned 64-bit arithmetic does not hold";
  return false;
}

/// A binary operator of two numbers (a rank expression, or any with n fixed): the value and
/// errors that the rules for values that depend on n (evaluateNode) give numbers, which record
/// nothing, computed directly: the runs evaluate loop bounds and indices so most often. An
/// overflow of + - * is the spec's, at its place. `handled` false: left to those rules.
bool numbersInto(const ir::Expr& e, int64_t a, int64_t b, std::string* why, Affine& out,
                 bool& handled) {
  handled = true;
  auto fail = [&](const std::string& message) {
    if (why)
      *why = message;
    return false;
  };
  auto give = [&](int64_t value) {
    out = Affine::constant(value);
    return true;
  };
  using ir::ExprKind;
  int64_t r;
  switch (e->kind) {
  case ExprKind::Add:
  case ExprKind::Sub:
  case ExprKind::Mul:
    if (e->kind == ExprKind::Add   ? __builtin_add_overflow(a, b, &r)
        : e->kind == ExprKind::Sub ? __builtin_sub_overflow(a, b, &r)
                                   : __builtin_mul_overflow(a, b, &r))
      return fail("'" + ir::toText(e) + "' overflows 64 bits");
    return give(r);
  case ExprKind::Div:
  case ExprKind::Mod:
    if (b == 0)
      return fail("division by zero");
    if (a < 0 || b < 0)
      return fail("division of a negative value");
    return give(e->kind == ExprKind::Div ? a / b : a % b);
  case ExprKind::CeilDiv:
  case ExprKind::RoundUp: {
    if (b <= 0)
      return fail(e->kind == ExprKind::CeilDiv ? "ceil_div by zero or a negative value"
                                               : "round_up to a multiple that is not positive");
    if (a < 0)
      return fail("rounding of a negative value");
    const int64_t quotient = a / b + (a % b != 0 ? 1 : 0);
    if (e->kind == ExprKind::CeilDiv)
      return give(quotient);
    if (__builtin_mul_overflow(quotient, b, &r))
      break; // the rules' own overflow
    return give(r);
  }
  case ExprKind::Min:
    if (a < 0 || b < 0)
      return fail("min of a negative value, which the kernel's min_u64 takes for a huge one");
    return give(std::min(a, b));
  case ExprKind::Eq:
  case ExprKind::Ne:
    if ((e->a->type == ir::CType::U64 || e->b->type == ir::CType::U64) && (a < 0 || b < 0))
      return fail("a comparison in unsigned 64 bits of a negative value");
    return give((a == b) == (e->kind == ExprKind::Eq) ? 1 : 0);
  default:
    break;
  }
  handled = false;
  return false;
}

bool evaluateNode(const ir::Expr& e, const Bindings& env, Arith& arith, std::string* why,
                  Affine& out) {
  auto fail = [&](const std::string& message) {
    if (why)
      *why = message;
    return false;
  };
  auto give = [&](const Affine& value) {
    out = value;
    return true;
  };
  using ir::ExprKind;
  switch (e->kind) {
  case ExprKind::Const:
    return give(Affine::constant(e->value));
  case ExprKind::Rank:
    return give(Affine::constant(env.rank));
  case ExprKind::NRanks:
    return give(Affine::constant(env.nranks));
  case ExprKind::Count:
    return give(env.count);
  case ExprKind::Root:
    return give(Affine::constant(env.root));
  case ExprKind::RowLength:
    return give(Affine::constant(env.rowLength));
  case ExprKind::Var: {
    const int64_t* value = env.vars.find(e->name);
    if (!value)
      return fail("unbound variable '" + e->name + "'");
    return give(Affine::constant(*value));
  }
  case ExprKind::ChunkSize:
  case ExprKind::ChunkBegin:
  case ExprKind::ChunkLength: {
    ChunkValues::Entry* kept = nullptr;
    if (env.chunks) {
      ChunkValues::Entry& entry = env.chunks->entryFor(e->a);
      kept = entry.kept ? &entry : nullptr;
    }
    Affine length, size;
    if (kept && kept->size) {
      length = *kept->lengthValue;
      size = *kept->size;
    } else {
      if (!evaluateInto(e->a, env, arith, why, length))
        return false;
      if (arith.less(length, Affine::constant(0)) ||
          (length.isConstant() && length.v > (int64_t(1) << 50)))
        return fail("chunk of a negative or huge length");
      // chunk_size(x) = ceil(ceil(x / R) / 8) * 8 = 8 * ceil(x / 8R).
      const int64_t period = int64_t(kChunkAlignElems) * env.nranks;
      size = Arith::mul(arith.ceilDivide(length, period), kChunkAlignElems);
      if (kept) {
        kept->lengthValue = length;
        kept->size = size;
        kept->begins.assign(size_t(env.nranks), std::nullopt);
        kept->lengths.assign(size_t(env.nranks), std::nullopt);
      }
    }
    if (e->kind == ExprKind::ChunkSize)
      return give(size);
    Affine index;
    if (!evaluateInto(e->b, env, arith, why, index))
      return false;
    if (!index.isConstant())
      throw AffineError{"a chunk index that depends on n"};
    if (index.v < 0 || index.v >= env.nranks)
      return fail("chunk " + std::to_string(index.v) +
                  " does not exist: there are nranks = " + std::to_string(env.nranks) + " chunks");
    std::optional<Affine>* keptBegin = kept ? &kept->begins[size_t(index.v)] : nullptr;
    std::optional<Affine>* keptLength = kept ? &kept->lengths[size_t(index.v)] : nullptr;
    if (e->kind == ExprKind::ChunkLength && keptLength && *keptLength)
      return give(**keptLength);
    Affine begin;
    if (keptBegin && *keptBegin) {
      begin = **keptBegin;
    } else {
      begin = arith.min(length, Arith::mul(size, index.v));
      if (keptBegin)
        *keptBegin = begin;
    }
    if (e->kind == ExprKind::ChunkBegin)
      return give(begin);
    const Affine chunkLength = Arith::sub(arith.min(length, Arith::mul(size, index.v + 1)), begin);
    if (keptLength)
      *keptLength = chunkLength;
    return give(chunkLength);
  }
  default:
    break;
  }
  Affine aValue;
  if (!evaluateInto(e->a, env, arith, why, aValue))
    return false;
  const Affine* a = &aValue;
  Affine bValue;
  if (!evaluateInto(e->b, env, arith, why, bValue))
    return false;
  const Affine* b = &bValue;
  if (a->isConstant() && b->isConstant()) {
    bool handled = false;
    const bool done = numbersInto(e, a->v, b->v, why, out, handled);
    if (handled)
      return done;
  }
  switch (e->kind) {
  case ExprKind::Add:
    return give(Arith::add(*a, *b));
  case ExprKind::Sub:
    return give(Arith::sub(*a, *b));
  case ExprKind::Mul:
    if (!a->isConstant() && !b->isConstant())
      throw AffineError{"n times n"};
    return give(a->isConstant() ? Arith::mul(*b, a->v) : Arith::mul(*a, b->v));
  case ExprKind::Div:
  case ExprKind::Mod: {
    if (!b->isConstant())
      throw AffineError{"a division by a value that depends on n"};
    if (b->v == 0)
      return fail("division by zero");
    if (arith.less(*a, Affine::constant(0)) || b->v < 0)
      return fail("division of a negative value");
    // Not negative: the kernel's unsigned division is the floor.
    if (e->kind == ExprKind::Div)
      return give(arith.floorDivide(*a, b->v));
    return give(arith.remainder(*a, b->v));
  }
  case ExprKind::CeilDiv:
  case ExprKind::RoundUp: {
    if (!b->isConstant())
      throw AffineError{"a rounding by a value that depends on n"};
    if (b->v <= 0)
      return fail(e->kind == ExprKind::CeilDiv ? "ceil_div by zero or a negative value"
                                               : "round_up to a multiple that is not positive");
    if (arith.less(*a, Affine::constant(0)))
      return fail("rounding of a negative value");
    const Affine quotient = arith.ceilDivide(*a, b->v);
    return give(e->kind == ExprKind::CeilDiv ? quotient : Arith::mul(quotient, b->v));
  }
  case ExprKind::Min:
    if (arith.negative(*a) || arith.negative(*b))
      return fail("min of a negative value, which the kernel's min_u64 takes for a huge one");
    return give(arith.min(*a, *b));
  case ExprKind::Eq:
  case ExprKind::Ne: {
    const bool unsignedCompare = e->a->type == ir::CType::U64 || e->b->type == ir::CType::U64;
    if (unsignedCompare && (arith.negative(*a) || arith.negative(*b)))
      return fail("a comparison in unsigned 64 bits of a negative value");
    const bool equal = arith.equal(*a, *b);
    return give(Affine::constant(equal == (e->kind == ExprKind::Eq) ? 1 : 0));
  }
  default:
    return fail("not a binary operator");
  }
}

} // namespace

ChunkValues::Entry& ChunkValues::entryFor(const ir::Expr& length) {
  for (Entry& entry : entries_)
    if (entry.length.get() == length.get())
      return entry;
  Entry& entry = entries_.emplace_back();
  entry.length = length;
  entry.kept = !ir::dependsOnRank(length);
  return entry;
}

} // namespace collc::execute
