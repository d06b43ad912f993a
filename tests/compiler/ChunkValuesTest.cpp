// A run keeps the chunks of lengths free of ranks (execute/Affine.h, ChunkValues): every rank asks
// for the same ones. Kept or not, an expression must have the same value and the run must record
// the same comparisons; a length that depends on the rank is never kept.
#include "compiler/execute/Affine.h"

#include <gtest/gtest.h>

namespace collc::execute {
namespace {

using ir::ExprNode;

struct Outcome {
  std::vector<Affine> values;
  int64_t threshold, residueLimit;
};

/// chunk_begin, chunk_len and chunk_size of `length` for every chunk and rank, each asked twice,
/// over the residues 1..23 of n = 24q + s at 3 ranks, with (or without) a run's ChunkValues.
Outcome askEveryRank(const ir::Expr& length, bool keep) {
  Arith arith = Arith::residues(1, 23);
  ChunkValues chunks;
  std::vector<Affine> values;
  for (int rank = 0; rank < 3; ++rank)
    for (int pass = 0; pass < 2; ++pass)
      for (int k = 0; k < 3; ++k) {
        Bindings env;
        env.nranks = 3;
        env.rank = rank;
        env.count = Affine{24, 0, 1};
        env.chunks = keep ? &chunks : nullptr;
        const ir::Expr index = ExprNode::constant(k);
        for (const ir::Expr& e :
             {ExprNode::chunkBegin(length, index), ExprNode::chunkLength(length, index),
              ExprNode::chunkSize(length)}) {
          std::string why;
          const auto value = evaluate(e, env, arith, &why);
          EXPECT_TRUE(value) << why;
          values.push_back(value.value_or(Affine{}));
        }
      }
  return {values, arith.threshold(), arith.residueLimit()};
}

void expectSame(const Outcome& kept, const Outcome& fresh) {
  ASSERT_EQ(kept.values.size(), fresh.values.size());
  for (size_t i = 0; i < kept.values.size(); ++i)
    EXPECT_TRUE(kept.values[i].identical(fresh.values[i])) << i;
  EXPECT_EQ(kept.threshold, fresh.threshold);
  EXPECT_EQ(kept.residueLimit, fresh.residueLimit);
}

TEST(ChunkValues, KeptChunksAreTheChunksAndRecordTheSameComparisons) {
  const ir::Expr n = ExprNode::count();
  const ir::Expr length = ExprNode::binary(ir::ExprKind::Add, n, ExprNode::constant(5));
  expectSame(askEveryRank(length, true), askEveryRank(length, false));
  const Outcome outcome = askEveryRank(length, true);
  EXPECT_GT(outcome.threshold, 0) << "the chunks' comparisons record a threshold";
}

TEST(ChunkValues, ALengthThatDependsOnTheRankIsNotKept) {
  const ir::Expr length = ExprNode::binary(ir::ExprKind::Add, ExprNode::count(), ExprNode::rank());
  ChunkValues chunks;
  EXPECT_FALSE(chunks.entryFor(length).kept);
  EXPECT_TRUE(chunks.entryFor(ExprNode::count()).kept);
  const Outcome kept = askEveryRank(length, true), fresh = askEveryRank(length, false);
  expectSame(kept, fresh);
  // Chunk 2's length of n + 1 (rank 1's, value 18 + 7) is not that of n (rank 0's, value 7).
  EXPECT_FALSE(kept.values[18 + 7].identical(kept.values[7]));
}

} // namespace
} // namespace collc::execute
