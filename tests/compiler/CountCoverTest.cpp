// The cover of every count by runs with n symbolic (execute/CountCover.h): the runs must decide,
// between them, every n from 1 on, and each must decide exactly as numbers do at every count it
// claims. A stand-in for a program's run makes the decisions chunk(n) makes a run take (where
// each chunk starts and ends, which are empty or partial, a division by a small block), so the
// test needs no spec.
#include "compiler/execute/CountCover.h"

#include <gtest/gtest.h>
#include <vector>

namespace collc::execute {
namespace {

/// The decisions of a run over chunk(n) = 8 * ceil(n / 8R) at R ranks, with blocks of a chunk
/// split `blocks` ways, and (`packets`) n's place in a packet of 4: each as -1, 0 or 1, in order.
std::vector<int64_t> decisions(Arith& arith, const Affine& n, int nranks, int64_t blocks,
                               bool packets) {
  std::vector<int64_t> out;
  const Affine chunk = Arith::mul(arith.ceilDivide(n, 8 * int64_t(nranks)), 8);
  for (int k = 0; k <= nranks; ++k) {
    const Affine begin = arith.min(n, Arith::mul(chunk, k));
    out.push_back(arith.compare(begin, n)); // empty from chunk k on
    const Affine end = arith.min(n, Arith::mul(chunk, k + 1));
    out.push_back(arith.compare(Arith::sub(end, begin), chunk)); // partial
  }
  // A block of the chunk: a division that q splits unless the period holds it.
  const Affine block = arith.floorDivide(chunk, blocks);
  out.push_back(arith.compare(Arith::mul(block, blocks), chunk));
  if (packets)
    out.push_back(arith.compare(arith.remainder(n, 4), Affine::constant(0)));
  return out;
}

std::vector<int64_t> atCount(int64_t n, int nranks, int64_t blocks, bool packets) {
  Arith numbers(/*symbolic=*/false);
  return decisions(numbers, Affine::constant(n), nranks, blocks, packets);
}

struct Claim {
  std::vector<int64_t> decided;
  std::vector<int64_t> counts; // the counts up to `last` it claims
};

/// Every count from 1 to `last` must be claimed, and every claim must hold. Returns the runs.
size_t checkCover(int nranks, int64_t blocks, bool packets, int64_t last) {
  std::vector<Claim> claims;
  int64_t period = 1;
  auto large = [&](const Affine& count, Arith& arith) {
    Claim claim{decisions(arith, count, nranks, blocks, packets), {}};
    const int64_t from = std::max(arith.threshold(), int64_t(0));
    const int64_t lastResidue = std::min(arith.residueLimit(), arith.residueEnd());
    for (int64_t s = *arith.residueStart(); s <= lastResidue; ++s)
      for (int64_t q = from; count.u * q + s <= last; ++q)
        if (count.u * q + s >= 1)
          claim.counts.push_back(count.u * q + s);
    claims.push_back(std::move(claim));
    return true;
  };
  auto stretch = [&](const Affine& count, Arith& arith, int64_t first) {
    Claim claim{decisions(arith, count, nranks, blocks, packets), {}};
    if (arith.start()) { // q from a value on, one residue
      for (int64_t q = *arith.start(); q <= arith.limit() && count.u * q + count.v <= last; ++q)
        claim.counts.push_back(count.u * q + count.v);
    } else { // n itself
      for (int64_t n = first; n <= std::min(arith.residueLimit(), arith.residueEnd()) && n <= last;
           ++n)
        claim.counts.push_back(n);
    }
    if (first <= last) {
      EXPECT_EQ(claim.counts.front(), first);
    }
    claims.push_back(std::move(claim));
    return Covered::Stretch;
  };
  EXPECT_TRUE(coverCounts(period, large, stretch));
  std::vector<bool> claimed(size_t(last + 1), false);
  for (const Claim& claim : claims)
    for (int64_t n : claim.counts) {
      claimed[size_t(n)] = true;
      EXPECT_EQ(claim.decided, atCount(n, nranks, blocks, packets))
          << "nranks " << nranks << ", blocks " << blocks << ": a run's decisions at n = " << n;
    }
  for (int64_t n = 1; n <= last; ++n)
    EXPECT_TRUE(claimed[size_t(n)]) << "nranks " << nranks << ": n = " << n << " is in no run";
  return claims.size();
}

TEST(CountCover, EveryCountIsDecidedAsNumbersDecideIt) {
  for (int nranks : {2, 3, 5, 8, 12})
    for (int64_t blocks : {1, 3, 16})
      for (bool packets : {false, true})
        checkCover(nranks, blocks, packets, 8 * int64_t(nranks) * (nranks + 4));
}

// Ranges of residues run together, and the smaller counts a stretch of n a run: at 12 ranks the
// cover takes fewer runs than the 96 residues of chunk(n) would take one run each.
TEST(CountCover, ResiduesRunTogether) {
  EXPECT_LT(checkCover(12, 1, /*packets=*/false, 8 * 12 * 16), size_t(96));
}

// A run that needs a longer period splits the classes not yet run; those already run keep their
// verdict, and the counts below their thresholds are still covered.
TEST(CountCover, ASplitKeepsEveryCountCovered) {
  int64_t period = 1;
  int splits = 0;
  std::vector<bool> claimed(2001, false);
  auto large = [&](const Affine& count, Arith& arith) {
    // Exact in q only with a period that 6 divides: a SplitQ from period 1, then 2 * 3.
    (void)arith.floorDivide(count, 6);
    const int64_t lastResidue = std::min(arith.residueLimit(), arith.residueEnd());
    for (int64_t s = *arith.residueStart(); s <= lastResidue; ++s)
      for (int64_t q = arith.threshold(); count.u * q + s <= 2000; ++q)
        if (count.u * q + s >= 1)
          claimed[size_t(count.u * q + s)] = true;
    return true;
  };
  auto stretch = [&](const Affine&, Arith&, int64_t first) {
    claimed[size_t(first)] = true;
    return Covered::FirstOnly;
  };
  auto counting = [&](const Affine& count, Arith& arith) {
    try {
      return large(count, arith);
    } catch (const SplitQ&) {
      ++splits;
      throw;
    }
  };
  ASSERT_TRUE(coverCounts(period, counting, stretch));
  EXPECT_EQ(period, 6);
  EXPECT_GE(splits, 1);
  for (int64_t n = 1; n <= 2000; ++n)
    ASSERT_TRUE(claimed[size_t(n)]) << n;
}

TEST(CountCover, AStoppedRunEndsTheCover) {
  int64_t period = 1;
  auto large = [&](const Affine&, Arith&) { return false; };
  auto stretch = [&](const Affine&, Arith&, int64_t) { return Covered::Stretch; };
  EXPECT_FALSE(coverCounts(period, large, stretch));
}

} // namespace
} // namespace collc::execute
