// Integers that depend on n, for the verifier. For one rank count R the verifier writes the count
// as n = M * q + s (M = 8R to begin with, 0 <= s < M) and runs a spec twice over: once for a fixed
// q (every value is a plain number), and once for q itself (every value is u * q + v). Sizes may
// use n only as a * n + b or chunk(a * n + b) (Sema), so every offset and length of every region
// is such an affine value as long as each division in it is exact in q: chunk(x) = 8 * ceil(x / 8R)
// needs 8R to divide the part of x in q, a block's L / R needs R to divide L's. Where one does not
// (a block of a chunk(n) buffer at 3 ranks: 8q / 3), the run stops with SplitQ and the verifier
// runs the class again as `factor` classes of a period M * factor, in which the division is exact.
//
// In the symbolic run a comparison of two values is decided for all large q (by u, then v), and
// the run records from which q on that decision holds. Everything the run decides goes through
// these comparisons, so its outcome holds for every q from the largest such bound on. The smaller
// q are run a stretch at a time (Arith::from): a run decides each comparison as at the stretch's
// first q and records up to which q that holds (Verifier.cpp, dsl/README.md's "What the verifier
// proves").
#ifndef COLLC_COMPILER_EXECUTE_AFFINE_H
#define COLLC_COMPILER_EXECUTE_AFFINE_H

#include "compiler/ir/Expr.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collc::execute {

/// u * q + v. With a fixed q every value has u = 0.
struct Affine {
  int64_t u = 0, v = 0;

  static Affine constant(int64_t v) { return Affine{0, v}; }
  bool isConstant() const { return u == 0; }
  bool identical(const Affine& other) const { return u == other.u && v == other.v; }
};

/// Thrown where an operation overflows or leaves the affine values (an internal limit, reported
/// as a verification error by the caller).
struct AffineError {
  std::string why;
};

/// Thrown in a run with q symbolic where a division of u * q + v by d is not exact in q (d does
/// not divide u). Writing q = factor * q' + t (factor = d / gcd(u, d)) for each t < factor makes
/// the part in q' u * factor, which d divides: the caller runs those classes instead.
struct SplitQ {
  int64_t factor;
};

/// The classes n = period * q + r still to run (`pending`, the next one last), each replaced by
/// the `factor` classes n = (period * factor) * q' + (r + period * t), t < factor, in the same
/// order; `period` becomes period * factor.
void splitClasses(std::vector<int64_t>& pending, int64_t& period, int64_t factor);

class Arith {
public:
  /// q symbolic (true) or every value a number (false).
  explicit Arith(bool symbolic) : symbolic_(symbolic) {}
  /// q symbolic from `q` on, every comparison decided as it comes out at q itself: the run
  /// decides every q from `q` to limit() alike (the smaller q below a symbolic run's threshold,
  /// run a stretch at a time rather than one by one).
  static Arith from(int64_t q) {
    Arith arith(true);
    arith.from_ = q;
    return arith;
  }
  bool symbolic() const { return symbolic_; }
  /// Arith::from's q, if this is such a run.
  const std::optional<int64_t>& start() const { return from_; }
  /// An Arith that decides every comparison as this one does, with nothing recorded yet: a
  /// comparison's outcome depends only on symbolic() and start().
  Arith fresh() const {
    Arith arith(symbolic_);
    arith.from_ = from_;
    return arith;
  }
  /// Records the threshold() and limit() of a fresh() of this one, as if its comparisons had been
  /// made here.
  void adopt(int64_t threshold, int64_t limit) {
    threshold_ = std::max(threshold_, threshold);
    limit_ = std::min(limit_, limit);
  }

  /// -1, 0 or 1: the sign of a - b, for every q >= threshold() (symbolic), for every q from
  /// from(q) to limit(), or now (concrete).
  /// Inline: the verifier's runs spend most of their time here.
  int compare(const Affine& a, const Affine& b) {
    const Affine d = sub(a, b);
    if (d.u == 0)
      return d.v < 0 ? -1 : d.v > 0 ? 1 : 0;
    return compareDependent(d);
  }
  bool less(const Affine& a, const Affine& b) { return compare(a, b) < 0; }
  /// a < 0, for every q >= threshold() (symbolic), or now; unlike less(a, 0) it records only
  /// from which q on the answer holds, not from which the sign of a does.
  bool negative(const Affine& a);
  bool lessEqual(const Affine& a, const Affine& b) { return compare(a, b) <= 0; }
  bool equal(const Affine& a, const Affine& b) { return compare(a, b) == 0; }
  Affine min(const Affine& a, const Affine& b) { return lessEqual(a, b) ? a : b; }
  Affine max(const Affine& a, const Affine& b) { return lessEqual(a, b) ? b : a; }

  static Affine add(const Affine& a, const Affine& b) {
    Affine r;
    if (__builtin_add_overflow(a.u, b.u, &r.u) | __builtin_add_overflow(a.v, b.v, &r.v))
      overflow();
    return r;
  }
  static Affine sub(const Affine& a, const Affine& b) {
    Affine r;
    if (__builtin_sub_overflow(a.u, b.u, &r.u) | __builtin_sub_overflow(a.v, b.v, &r.v))
      overflow();
    return r;
  }
  static Affine mul(const Affine& a, int64_t c) {
    Affine r;
    if (__builtin_mul_overflow(a.u, c, &r.u) | __builtin_mul_overflow(a.v, c, &r.v))
      overflow();
    return r;
  }

  /// The smallest q from which every comparison made so far keeps its outcome (0 if none
  /// depends on q).
  int64_t threshold() const { return threshold_; }
  /// Arith::from(q): the largest q' such that every comparison made so far keeps, for every q
  /// from q to q', the outcome it has at q (INT64_MAX if none depends on q).
  int64_t limit() const { return limit_; }

private:
  /// The sign of d (d.u != 0) for large q, or at from_; records from which q on, or up to which.
  int compareDependent(const Affine& d);
  /// The value of a at q = from_.
  static __int128 at(const Affine& a, int64_t q) { return __int128(a.u) * q + a.v; }
  [[noreturn]] static void overflow();

  bool symbolic_;
  int64_t threshold_ = 0;
  std::optional<int64_t> from_; // Arith::from
  int64_t limit_ = INT64_MAX;
};

/// The loop variables bound while a run executes: few at a time, so a flat list. Names point into
/// the program, which outlives every run.
class VarBindings {
public:
  void set(const std::string& name, int64_t value) {
    for (auto& [bound, v] : vars_)
      if (*bound == name) {
        v = value;
        return;
      }
    vars_.push_back({&name, value});
  }
  void erase(const std::string& name) {
    for (size_t i = 0; i < vars_.size(); ++i)
      if (*vars_[i].first == name) {
        vars_.erase(vars_.begin() + long(i));
        return;
      }
  }
  const int64_t* find(const std::string& name) const {
    for (const auto& [bound, v] : vars_)
      if (*bound == name)
        return &v;
    return nullptr;
  }

private:
  std::vector<std::pair<const std::string*, int64_t>> vars_;
};

/// The values an expression's free names take.
struct Bindings {
  int64_t rank = 0, nranks = 2, root = 0, rowLength = 0;
  Affine count;
  VarBindings vars;
};

/// Evaluates `e` (AffineError where a division leaves the affine values, or overflow; SplitQ where
/// one is not exact in q); nullopt with `why` for the spec's own errors (division by zero, a chunk
/// that does not exist, an unbound name) and for a value the kernel's C type for it does not hold
/// (ir::outOfRange; in u64, a negative value).
std::optional<Affine> evaluate(const ir::Expr& e, const Bindings& env, Arith& arith,
                               std::string* why);

} // namespace collc::execute

#endif // COLLC_COMPILER_EXECUTE_AFFINE_H
