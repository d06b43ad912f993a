// Arith::from(q0) (execute/Affine.h): a run with q symbolic that decides every comparison as at
// q = q0, and says up to which q all of them keep that outcome. The verifier runs the counts below
// a symbolic run's threshold a stretch at a time on it (dsl/README.md, step 4), so each decision
// must be the one numbers give at every q of the stretch, and the stretch must end where one
// changes.
#include "compiler/execute/Affine.h"

#include <gtest/gtest.h>

namespace collc::execute {
namespace {

int sign(int64_t x) {
  return x < 0 ? -1 : x > 0 ? 1 : 0;
}
int64_t at(const Affine& a, int64_t q) {
  return a.u * q + a.v;
}

// Every pair of values u * q + v with small u and v, from every small q0: the comparison as
// numbers at each q of [q0, limit] is the one decided, and at limit + 1 it is not.
TEST(ArithStretch, ComparisonsHoldExactlyOverTheStretch) {
  int stretchesEnded = 0;
  for (int64_t u1 = -3; u1 <= 3; ++u1)
    for (int64_t v1 = -9; v1 <= 9; v1 += 3)
      for (int64_t u2 = -2; u2 <= 2; ++u2)
        for (int64_t v2 = -7; v2 <= 7; v2 += 2)
          for (int64_t q0 = 0; q0 <= 6; ++q0) {
            const Affine a{u1, v1}, b{u2, v2};
            Arith arith = Arith::from(q0);
            const int decided = arith.compare(a, b);
            const int64_t limit = arith.limit();
            ASSERT_GE(limit, q0);
            const int64_t last = std::min<int64_t>(limit, q0 + 40);
            for (int64_t q = q0; q <= last; ++q)
              ASSERT_EQ(sign(at(a, q) - at(b, q)), decided)
                  << u1 << "q+" << v1 << " vs " << u2 << "q+" << v2 << " from " << q0 << " at "
                  << q;
            if (limit != INT64_MAX) {
              EXPECT_NE(sign(at(a, limit + 1) - at(b, limit + 1)), decided)
                  << u1 << "q+" << v1 << " vs " << u2 << "q+" << v2 << " from " << q0;
              ++stretchesEnded;
            } else {
              // Kept for every q: as numbers far along too.
              EXPECT_EQ(sign(at(a, q0 + 1000) - at(b, q0 + 1000)), decided);
            }
          }
  EXPECT_GT(stretchesEnded, 100);
}

TEST(ArithStretch, NegativeHoldsExactlyOverTheStretch) {
  for (int64_t u = -4; u <= 4; ++u)
    for (int64_t v = -20; v <= 20; ++v)
      for (int64_t q0 = 0; q0 <= 8; ++q0) {
        const Affine a{u, v};
        Arith arith = Arith::from(q0);
        const bool decided = arith.negative(a);
        const int64_t limit = arith.limit();
        ASSERT_GE(limit, q0);
        for (int64_t q = q0; q <= std::min<int64_t>(limit, q0 + 40); ++q)
          ASSERT_EQ(at(a, q) < 0, decided) << u << "q+" << v << " from " << q0 << " at " << q;
        if (limit != INT64_MAX) {
          EXPECT_NE(at(a, limit + 1) < 0, decided) << u << "q+" << v << " from " << q0;
        }
      }
}

// The limit is the least over every comparison made, as the threshold of a run for large q is the
// greatest.
TEST(ArithStretch, TheStretchIsTheShortestOfItsComparisons) {
  Arith arith = Arith::from(1);
  EXPECT_EQ(arith.limit(), INT64_MAX);
  EXPECT_TRUE(arith.less(Affine{1, 0}, Affine::constant(10))); // q < 10 up to q = 9
  EXPECT_EQ(arith.limit(), 9);
  EXPECT_TRUE(arith.less(Affine{2, 0}, Affine::constant(9))); // 2q < 9 up to q = 4
  EXPECT_EQ(arith.limit(), 4);
  EXPECT_TRUE(arith.less(Affine{1, 0}, Affine::constant(100))); // longer: the limit stays
  EXPECT_EQ(arith.limit(), 4);
  EXPECT_TRUE(arith.equal(Affine{1, 0}, Affine::constant(1))); // q = 1 at q = 1 only
  EXPECT_EQ(arith.limit(), 1);
}

// Arith::residues(s0, last): u * q + w * s + v. A comparison q decides holds for every q from the
// threshold on and every s in [s0, last]; one the residue decides (u equal) holds for every s of
// [s0, residueLimit()] and every q, and not at residueLimit() + 1.
TEST(ArithResidues, ComparisonsHoldOverTheResiduesAndLargeQ) {
  int rangesEnded = 0;
  for (int64_t u = -2; u <= 2; ++u)
    for (int64_t w = -3; w <= 3; ++w)
      for (int64_t v = -40; v <= 40; v += 7)
        for (int64_t s0 = 0; s0 <= 20; s0 += 4) {
          const int64_t last = 23;
          const Affine d{u, v, w};
          Arith arith = Arith::residues(s0, last);
          const int decided = arith.compare(d, Affine::constant(0));
          const int64_t end = std::min(arith.residueLimit(), last);
          ASSERT_GE(end, s0);
          for (int64_t s = s0; s <= end; ++s)
            for (int64_t q = arith.threshold(); q <= arith.threshold() + 30; ++q)
              ASSERT_EQ(sign(u * q + w * s + v), decided)
                  << u << "q+" << w << "s+" << v << " from s " << s0 << " at q " << q << ", s "
                  << s;
          if (u == 0 && arith.residueLimit() < last) {
            EXPECT_NE(sign(w * (arith.residueLimit() + 1) + v), decided);
            ++rangesEnded;
          }
        }
  EXPECT_GT(rangesEnded, 50);
}

// A division whose divisor does not divide the part in s: the quotient over [s0, residueLimit()]
// is the one numbers give, for every q, and it changes at residueLimit() + 1.
TEST(ArithResidues, DivisionsHoldOverTheResidues) {
  int rangesEnded = 0;
  for (int64_t d : {2, 3, 8, 24, 96})
    for (int64_t w = -5; w <= 5; ++w)
      for (int64_t v = -30; v <= 200; v += 13)
        for (int64_t s0 = 0; s0 <= 95; s0 += 19) {
          const int64_t u = 2 * d; // exact in q
          Arith arith = Arith::residues(s0, 95);
          const Affine a{u, v, w};
          const Affine floor = arith.floorDivide(a, d), ceil = arith.ceilDivide(a, d),
                       rest = arith.remainder(a, d);
          const int64_t end = std::min<int64_t>(arith.residueLimit(), 95);
          auto floorAt = [&](int64_t x) { return x >= 0 ? x / d : -((-x + d - 1) / d); };
          for (int64_t s = s0; s <= end; ++s)
            for (int64_t q = 0; q <= 3; ++q) {
              const int64_t x = u * q + w * s + v;
              ASSERT_EQ(floor.u * q + floor.w * s + floor.v, floorAt(x)) << x << " / " << d;
              ASSERT_EQ(ceil.u * q + ceil.w * s + ceil.v, -floorAt(-x)) << x << " / " << d;
              ASSERT_EQ(rest.u * q + rest.w * s + rest.v, x - d * floorAt(x)) << x << " % " << d;
            }
          if (end < 95) {
            const int64_t s = end + 1, x = w * s + v;
            const bool floorKept = floor.w * s + floor.v == floorAt(x);
            const bool ceilKept = ceil.w * s + ceil.v == -floorAt(-x);
            EXPECT_FALSE(floorKept && ceilKept) << w << "s+" << v << " / " << d << " from " << s0;
            ++rangesEnded;
          }
        }
  EXPECT_GT(rangesEnded, 100);
  // chunk(n) at 12 ranks, n = 96 q + s: 8 * ceil(n / 96) is 8q + 8 for every s from 1 to 95.
  Arith arith = Arith::residues(1, 95);
  const Affine chunk = Arith::mul(arith.ceilDivide(Affine{96, 0, 1}, 96), 8);
  EXPECT_TRUE(chunk.identical(Affine{8, 8, 0}));
  EXPECT_EQ(arith.residueLimit(), 96);
}

} // namespace
} // namespace collc::execute
