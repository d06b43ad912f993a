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

int Arith::compareDependent(const Affine& d) {
  if (!symbolic_)
    throw AffineError{"a value that depends on n in a run with n fixed"};
  if (from_) {
    // Its sign at q = from_, kept as q grows while u * q + v does not reach 0: for every q if
    // the sign is u's, else for every q < -v / u; a 0 only at from_ itself.
    const __int128 value = at(d, *from_);
    if (value == 0) {
      limit_ = std::min(limit_, *from_);
      return 0;
    }
    const int sign = value < 0 ? -1 : 1;
    if (sign != (d.u < 0 ? -1 : 1))
      limit_ = std::min(limit_, ceilDiv(-d.v, d.u) - 1);
    return sign;
  }
  // u * q + v has the sign of u for every q > -v / u. Most comparisons hold from the threshold
  // already recorded on: floor(-v / u) + 1 <= threshold_ exactly when -v / u < threshold_, which
  // needs no division.
  const __int128 bound = __int128(threshold_) * d.u;
  const bool covered = d.u > 0 ? -__int128(d.v) < bound : -__int128(d.v) > bound;
  if (!covered)
    threshold_ = std::max(threshold_, floorDiv(-d.v, d.u) + 1);
  return d.u < 0 ? -1 : 1;
}

void Arith::overflow() {
  throw AffineError{"integer overflow"};
}

bool Arith::negative(const Affine& a) {
  if (a.u == 0)
    return a.v < 0;
  if (!symbolic_)
    throw AffineError{"a value that depends on n in a run with n fixed"};
  if (from_) {
    // Negative at from_ and u > 0: up to q = ceil(-v / u) - 1; not negative and u < 0: up to
    // q = floor(v / -u); otherwise for every larger q.
    const bool isNegative = at(a, *from_) < 0;
    if (isNegative && a.u > 0)
      limit_ = std::min(limit_, ceilDiv(-a.v, a.u) - 1);
    else if (!isNegative && a.u < 0)
      limit_ = std::min(limit_, floorDiv(a.v, -a.u));
    return isNegative;
  }
  // u > 0: u * q + v >= 0 from q = ceil(-v / u) on; u < 0: negative from floor(v / -u) + 1 on.
  // Where the threshold recorded already is as large (u > 0: -v / u <= threshold_; u < 0:
  // v / -u < threshold_), it stays as it is, and no division is needed to see that.
  const __int128 bound = __int128(threshold_) * (a.u > 0 ? a.u : -__int128(a.u));
  const bool covered = a.u > 0 ? -__int128(a.v) <= bound : __int128(a.v) < bound;
  if (!covered)
    threshold_ = std::max(threshold_, a.u > 0 ? ceilDiv(-a.v, a.u) : floorDiv(a.v, -a.u) + 1);
  return a.u < 0;
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
    Affine lengthValue;
    if (!evaluateInto(e->a, env, arith, why, lengthValue))
      return false;
    const Affine* length = &lengthValue;
    if (arith.less(*length, Affine::constant(0)) ||
        (length->isConstant() && length->v > (int64_t(1) << 50)))
      return fail("chunk of a negative or huge length");
    // chunk_size(x) = ceil(ceil(x / R) / 8) * 8 = 8 * ceil(x / 8R).
    const int64_t period = int64_t(kChunkAlignElems) * env.nranks;
    requireExactInQ(length->u, period);
    const Affine size{length->u / period * int64_t(kChunkAlignElems),
                      ceilDiv(length->v, period) * int64_t(kChunkAlignElems)};
    if (e->kind == ExprKind::ChunkSize)
      return give(size);
    Affine indexValue;
    if (!evaluateInto(e->b, env, arith, why, indexValue))
      return false;
    const Affine* index = &indexValue;
    if (!index->isConstant())
      throw AffineError{"a chunk index that depends on n"};
    if (index->v < 0 || index->v >= env.nranks)
      return fail("chunk " + std::to_string(index->v) +
                  " does not exist: there are nranks = " + std::to_string(env.nranks) + " chunks");
    const Affine begin = arith.min(*length, Arith::mul(size, index->v));
    if (e->kind == ExprKind::ChunkBegin)
      return give(begin);
    return give(Arith::sub(arith.min(*length, Arith::mul(size, index->v + 1)), begin));
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
  if (a->isConstant() && b->isConstant() &&
      (e->kind == ExprKind::Add || e->kind == ExprKind::Sub || e->kind == ExprKind::Mul)) {
    // Numbers (a rank expression, or any with n fixed): an overflow is the spec's, at its place.
    int64_t r;
    if (e->kind == ExprKind::Add   ? __builtin_add_overflow(a->v, b->v, &r)
        : e->kind == ExprKind::Sub ? __builtin_sub_overflow(a->v, b->v, &r)
                                   : __builtin_mul_overflow(a->v, b->v, &r))
      return fail("'" + ir::toText(e) + "' overflows 64 bits");
    return give(Affine::constant(r));
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
    requireExactInQ(a->u, b->v);
    // (u q + v) / d = (u / d) q + v / d and (u q + v) % d = v % d when d divides u.
    if (e->kind == ExprKind::Div)
      return give(Affine{a->u / b->v, floorDiv(a->v, b->v)});
    return give(Affine::constant(a->v - floorDiv(a->v, b->v) * b->v));
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
    requireExactInQ(a->u, b->v);
    // ceil((u q + v) / d) = (u / d) q + ceil(v / d) when d divides u.
    const Affine quotient{a->u / b->v, ceilDiv(a->v, b->v)};
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

void splitClasses(std::vector<int64_t>& pending, int64_t& period, int64_t factor) {
  std::vector<int64_t> finer;
  for (auto r = pending.rbegin(); r != pending.rend(); ++r)
    for (int64_t t = 0; t < factor; ++t)
      finer.push_back(*r + period * t);
  pending.assign(finer.rbegin(), finer.rend());
  period *= factor;
}

} // namespace collc::execute
