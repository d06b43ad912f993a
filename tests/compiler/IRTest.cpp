#include "compiler/ir/IR.h"

#include <gtest/gtest.h>

namespace collc::ir {
namespace {

TEST(IR, FoldsConstantsAndIdentities) {
  Expr sum = ExprNode::binary(ExprKind::Add, ExprNode::constant(2), ExprNode::constant(3));
  ASSERT_EQ(sum->kind, ExprKind::Const);
  EXPECT_EQ(sum->value, 5);
  Expr same = ExprNode::binary(ExprKind::Mul, ExprNode::count(), ExprNode::constant(1));
  EXPECT_EQ(same->kind, ExprKind::Count);
  Expr zero = ExprNode::binary(ExprKind::Add, ExprNode::rank(), ExprNode::constant(0));
  EXPECT_EQ(zero->kind, ExprKind::Rank);
}

TEST(IR, EvaluatesRankArithmetic) {
  Expr next = ExprNode::binary(
      ExprKind::Mod, ExprNode::binary(ExprKind::Add, ExprNode::rank(), ExprNode::var("i")),
      ExprNode::nranks());
  Env env{3, 4, 100, {{"i", 2}}};
  EXPECT_EQ(evaluate(next, env), 1);
  EXPECT_EQ(toC(next), "((rank + v_i) % kRanks)");
}

TEST(IR, EvaluationErrorsAreReportedNotUndefined) {
  std::string why;
  Expr div = ExprNode::binary(ExprKind::Div, ExprNode::count(), ExprNode::var("z"));
  EXPECT_FALSE(evaluate(div, Env{0, 2, 10, {{"z", 0}}}, &why));
  EXPECT_EQ(why, "division by zero");
  Expr big = ExprNode::binary(ExprKind::Mul, ExprNode::count(), ExprNode::count());
  EXPECT_FALSE(evaluate(big, Env{0, 2, int64_t(1) << 40, {}}, &why));
  EXPECT_EQ(why, "integer overflow");
  EXPECT_FALSE(evaluate(ExprNode::var("nope"), Env{}, &why));
}

// Chunks must tile the buffer exactly, start at multiples of 8 elements, and match the device
// helpers chunk_begin/chunk_len, for every rank count and awkward sizes.
TEST(IR, ChunksTileTheBufferAligned) {
  for (int nranks = 2; nranks <= 8; ++nranks) {
    for (int64_t count : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 4097, 1 << 20}) {
      int64_t covered = 0;
      for (int k = 0; k < nranks; ++k) {
        Env env{0, nranks, count, {{"k", k}}};
        int64_t begin = *evaluate(ExprNode::chunkBegin(ExprNode::count(), ExprNode::var("k")), env);
        int64_t length =
            *evaluate(ExprNode::chunkLength(ExprNode::count(), ExprNode::var("k")), env);
        int64_t size = *evaluate(ExprNode::chunkSize(ExprNode::count()), env);
        EXPECT_EQ(begin, covered) << nranks << " ranks, count " << count << ", chunk " << k;
        EXPECT_TRUE(begin % kChunkAlignElems == 0 || length == 0);
        EXPECT_LE(length, size);
        covered += length;
      }
      EXPECT_EQ(covered, count) << nranks << " ranks, count " << count;
    }
  }
}

TEST(IR, ChunkIndexOutOfRangeIsAnError) {
  std::string why;
  Env env{0, 4, 100, {}};
  EXPECT_FALSE(evaluate(ExprNode::chunkBegin(ExprNode::count(), ExprNode::constant(4)), env, &why));
  EXPECT_NE(why.find("chunk 4 does not exist"), std::string::npos);
}

TEST(IR, StructuralEquality) {
  Expr a = ExprNode::chunkSize(ExprNode::count());
  Expr b = ExprNode::chunkSize(ExprNode::count());
  EXPECT_TRUE(structurallyEqual(a, b));
  EXPECT_FALSE(structurallyEqual(a, ExprNode::count()));
  EXPECT_TRUE(dependsOnRank(ExprNode::binary(ExprKind::Add, ExprNode::rank(), a)));
  EXPECT_FALSE(dependsOnRank(a));
}

} // namespace
} // namespace collc::ir
