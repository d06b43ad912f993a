// Integers that depend on n, for the verifier. For one rank count R the verifier writes the count
// as n = M * q + s (0 <= s < M) and runs a spec with q symbolic (every value is u * q + w * s + v)
// for a range of residues s at a time, s symbolic too. Sizes may use n only as a * n + b or
// chunk(a * n + b) (Sema), so every offset and length of every region is such an affine value as
// long as each division in it is exact in q: chunk(x) = 8 * ceil(x / 8R) needs 8R to divide the
// part of x in q, a block's L / R needs R to divide L's. Where one does not (a block of a chunk(n)
// buffer at 3 ranks: 8q / 3), the run stops with SplitQ and the verifier runs the class again as
// `factor` classes of a period M * factor, in which the division is exact. A division that is
// exact in q but not in s has, over a stretch of residues, a quotient that s moves by whole steps
// or not at all (chunk(n) is 8q + 8 for every s from 1 to 8R - 1): decided at the stretch's first
// s, it ends the stretch where that changes.
//
// In the symbolic run a comparison of two values is decided for all large q (by u; if u is equal,
// by w at the first residue; then v), and the run records from which q on, and up to which
// residue, that decision holds. Everything the run decides goes through these comparisons, so its
// outcome holds for every q from the largest such bound on and every residue up to the smallest.
// The smaller counts are run a stretch at a time, of q (Arith::from) or of n itself
// (Arith::residues with n = s): a run decides each comparison as at the stretch's first value and
// records up to which one that holds (execute/CountCover.h, dsl/README.md's "What the verifier
// proves").
#ifndef COLLC_COMPILER_EXECUTE_AFFINE_H
#define COLLC_COMPILER_EXECUTE_AFFINE_H

#include "compiler/ir/Expr.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collc::execute {

/// u * q + w * s + v, where n = M * q + s. With q fixed every value has u = 0, with s fixed
/// (every run but one over a range of residues, Arith::residues) w = 0.
struct Affine {
  int64_t u = 0, v = 0, w = 0;

  static Affine constant(int64_t v) { return Affine{0, v, 0}; }
  bool isConstant() const { return u == 0 && w == 0; }
  bool identical(const Affine& other) const { return u == other.u && v == other.v && w == other.w; }
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
  /// q symbolic for every large q, as Arith(true), and the residue s symbolic too, from `first`
  /// on: a comparison q does not decide (u equal) is decided as it comes out at s = first, and a
  /// division whose divisor does not divide the part in s (chunk(n) = 8 * ceil(n / 8R), with s
  /// up to 8R - 1) as its quotient at s = first. The run decides every s from `first` to
  /// residueLimit() alike, for every q from threshold() on, which holds for every s up to
  /// `last`. A value free of q (u = 0: q fixed, or n = s itself) makes it a stretch of counts.
  static Arith residues(int64_t first, int64_t last) {
    Arith arith(true);
    arith.residueFrom_ = first;
    arith.residueLast_ = last;
    return arith;
  }
  bool symbolic() const { return symbolic_; }
  /// Arith::from's q, if this is such a run.
  const std::optional<int64_t>& start() const { return from_; }
  /// Arith::residues' first and last s, if this is such a run.
  const std::optional<int64_t>& residueStart() const { return residueFrom_; }
  int64_t residueEnd() const { return residueLast_; }
  /// An Arith that decides every comparison as this one does, with nothing recorded yet: a
  /// comparison's outcome depends only on symbolic(), start() and the residues'.
  Arith fresh() const {
    Arith arith(symbolic_);
    arith.from_ = from_;
    arith.residueFrom_ = residueFrom_;
    arith.residueLast_ = residueLast_;
    return arith;
  }
  /// Records the threshold(), limit() and residueLimit() of a fresh() of this one, as if its
  /// comparisons had been made here.
  void adopt(int64_t threshold, int64_t limit, int64_t residueLimit) {
    threshold_ = std::max(threshold_, threshold);
    limit_ = std::min(limit_, limit);
    residueLimit_ = std::min(residueLimit_, residueLimit);
  }

  /// -1, 0 or 1: the sign of a - b, for every q >= threshold() (symbolic), for every q from
  /// from(q) to limit(), for every s from residues(s) to residueLimit(), or now (concrete).
  /// Inline: the verifier's runs spend most of their time here.
  int compare(const Affine& a, const Affine& b) {
    const Affine d = sub(a, b);
    if (d.u == 0 && d.w == 0)
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
    if (__builtin_add_overflow(a.u, b.u, &r.u) | __builtin_add_overflow(a.v, b.v, &r.v) |
        __builtin_add_overflow(a.w, b.w, &r.w))
      overflow();
    return r;
  }
  static Affine sub(const Affine& a, const Affine& b) {
    Affine r;
    if (__builtin_sub_overflow(a.u, b.u, &r.u) | __builtin_sub_overflow(a.v, b.v, &r.v) |
        __builtin_sub_overflow(a.w, b.w, &r.w))
      overflow();
    return r;
  }
  static Affine mul(const Affine& a, int64_t c) {
    Affine r;
    if (__builtin_mul_overflow(a.u, c, &r.u) | __builtin_mul_overflow(a.v, c, &r.v) |
        __builtin_mul_overflow(a.w, c, &r.w))
      overflow();
    return r;
  }
  /// floor(a / d), d > 0: exact where d divides the parts in q and s; SplitQ where it does not
  /// divide the part in q; over a range of residues where it does not divide the part in s, the
  /// quotient's part that s does not carry is its value at the first s, and residueLimit() ends
  /// where that changes.
  Affine floorDivide(const Affine& a, int64_t d);
  /// ceil(a / d), d > 0, as floorDivide.
  Affine ceilDivide(const Affine& a, int64_t d) { return mul(floorDivide(mul(a, -1), d), -1); }
  /// a - d * floor(a / d), d > 0, as floorDivide.
  Affine remainder(const Affine& a, int64_t d) { return sub(a, mul(floorDivide(a, d), d)); }

  /// The smallest q from which every comparison made so far keeps its outcome (0 if none
  /// depends on q).
  int64_t threshold() const { return threshold_; }
  /// Arith::from(q): the largest q' such that every comparison made so far keeps, for every q
  /// from q to q', the outcome it has at q (INT64_MAX if none depends on q).
  int64_t limit() const { return limit_; }
  /// Arith::residues(s): the largest s' such that every comparison and quotient made so far
  /// keeps, for every s from s to s', the outcome it has at s (INT64_MAX if none depends on s).
  int64_t residueLimit() const { return residueLimit_; }

private:
  /// The sign of d (d.u or d.w not 0) for large q, at from_, or at residueFrom_; records from
  /// which q on, or up to which q or s.
  int compareDependent(const Affine& d);
  /// A comparison decided over a stretch rather than for large q: the stretch's variable (s where
  /// d is free of q over residues, q from from_), its coefficient k in d, its first value x0, and
  /// the limit that records how far an answer holds. nullopt where d is decided for large q;
  /// AffineError where d depends on a part the run fixes.
  struct Stretch {
    int64_t k, x0;
    int64_t* limit;
  };
  std::optional<Stretch> stretchOf(const Affine& d) {
    if (d.u == 0) {
      if (!residueFrom_)
        fixedResidue();
      return Stretch{d.w, *residueFrom_, &residueLimit_};
    }
    if (!from_)
      return std::nullopt;
    if (d.w != 0)
      fixedResidue();
    return Stretch{d.u, *from_, &limit_};
  }
  [[noreturn]] static void fixedResidue();
  /// The part of d free of q at the residue (first or last) where it sets the largest threshold:
  /// u * q + w * s + v has u's sign for every s in the range once it has at that s.
  int64_t boundingPart(const Affine& d) const;
  [[noreturn]] static void overflow();

  bool symbolic_;
  int64_t threshold_ = 0;
  std::optional<int64_t> from_; // Arith::from
  int64_t limit_ = INT64_MAX;
  std::optional<int64_t> residueFrom_; // Arith::residues
  int64_t residueLast_ = 0;
  int64_t residueLimit_ = INT64_MAX;
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
  /// The innermost binding first: most reads are of the innermost loop's variable.
  const int64_t* find(const std::string& name) const {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (sameName(*it->first, name))
        return &it->second;
    return nullptr;
  }

private:
  /// Names are a letter or two: compared inline before the library's compare.
  static bool sameName(const std::string& a, const std::string& b) {
    return a.size() == b.size() && (a.empty() || a[0] == b[0]) && a == b;
  }
  std::vector<std::pair<const std::string*, int64_t>> vars_;
};

/// chunk_size, chunk_begin and chunk_len of a length free of ranks and loop variables, kept for
/// one run: every rank asks for the same chunks, and the run's comparisons come out the same each
/// time, so the first answer stands for the rest (and records what they would).
class ChunkValues {
public:
  struct Entry {
    ir::Expr length;   // held, so that no other expression takes its address while the run lasts
    bool kept = false; // free of ranks and loop variables
    std::optional<Affine> lengthValue, size;
    std::vector<std::optional<Affine>> begins, lengths; // by chunk index
  };
  /// The entry of `length`, made on first use; its references stay valid for the run.
  Entry& entryFor(const ir::Expr& length);

private:
  std::deque<Entry> entries_;
};

/// The values an expression's free names take.
struct Bindings {
  int64_t rank = 0, nranks = 2, root = 0, rowLength = 0;
  Affine count;
  VarBindings vars;
  ChunkValues* chunks = nullptr; // a run's, where it keeps them
};

/// Evaluates `e` (AffineError where a division leaves the affine values, or overflow; SplitQ where
/// one is not exact in q); nullopt with `why` for the spec's own errors (division by zero, a chunk
/// that does not exist, an unbound name) and for a value the kernel's C type for it does not hold
/// (ir::outOfRange; in u64, a negative value).
std::optional<Affine> evaluate(const ir::Expr& e, const Bindings& env, Arith& arith,
                               std::string* why);

} // namespace collc::execute

#endif // COLLC_COMPILER_EXECUTE_AFFINE_H
