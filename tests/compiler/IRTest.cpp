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

// Every node knows the C type toC's text has in the kernel, by C's rules for what it prints.
TEST(IR, TypesAreThoseOfThePrintedC) {
  EXPECT_EQ(ExprNode::constant(2147483647)->type, CType::Int);
  EXPECT_EQ(ExprNode::constant(-2147483647)->type, CType::Int);
  EXPECT_EQ(ExprNode::constant(2147483648)->type, CType::Long);  // a literal past int is a long
  EXPECT_EQ(ExprNode::constant(-2147483648)->type, CType::Long); // minus the long 2147483648
  EXPECT_EQ(ExprNode::count()->type, CType::U64);
  EXPECT_EQ(ExprNode::rowLength()->type, CType::U64);
  EXPECT_EQ(ExprNode::chunkSize(ExprNode::nranks())->type, CType::U64);
  Expr rankPlusLong =
      ExprNode::binary(ExprKind::Add, ExprNode::rank(), ExprNode::constant(int64_t(1) << 32));
  EXPECT_EQ(rankPlusLong->type, CType::Long);
  EXPECT_EQ(ExprNode::binary(ExprKind::Mul, rankPlusLong, ExprNode::count())->type, CType::U64);
  EXPECT_EQ(ExprNode::binary(ExprKind::Eq, ExprNode::count(), ExprNode::rank())->type, CType::Int);
}

// A value is what the kernel computes only where its C type holds it: 64-bit arithmetic would
// say (rank + k) + 715827882 * nranks is 2^31 at 3 ranks, the kernel's int wraps.
TEST(IR, EvaluationRefusesWhatTheKernelsTypeDoesNotHold) {
  auto peer = [](int64_t factor) {
    return ExprNode::binary(
        ExprKind::Add, ExprNode::binary(ExprKind::Add, ExprNode::rank(), ExprNode::var("k")),
        ExprNode::binary(ExprKind::Mul, ExprNode::constant(factor), ExprNode::nranks()));
  };
  std::string why;
  EXPECT_FALSE(evaluate(peer(715827882), Env{0, 3, 1, {{"k", 2}}}, &why));
  EXPECT_EQ(why, "'((rank + k) + (715827882 * nranks))' is 2147483648 here, which the kernel's "
                 "int (32 bits) arithmetic does not hold");
  EXPECT_EQ(evaluate(peer(715827882), Env{0, 3, 1, {{"k", 1}}}), 2147483647);
  // 2^32 is a long literal: the kernel computes the sum in 64 bits, as the verifier does.
  EXPECT_EQ(evaluate(peer(int64_t(1) << 32), Env{0, 3, 1, {{"k", 2}}}), 3 * (int64_t(1) << 32) + 2);
  // n is a u64: n - 8 at n = 1 wraps in the kernel.
  Expr less = ExprNode::binary(ExprKind::Sub, ExprNode::count(), ExprNode::constant(8));
  EXPECT_FALSE(evaluate(less, Env{0, 2, 1, {}}, &why));
  EXPECT_EQ(why, "'(n - 8)' is -7 here, which the kernel's unsigned 64-bit integer arithmetic "
                 "does not hold");
  EXPECT_EQ(evaluate(less, Env{0, 2, 8, {}}), 0);
}

TEST(IR, LoopsMustCountInTheKernelsInt) {
  const Expr zero = ExprNode::constant(0), top = ExprNode::constant(2147483647);
  EXPECT_EQ(intLoopProblem(zero, 0, top, 2147483647), "");
  const Expr past = ExprNode::constant(2147483648);
  EXPECT_EQ(intLoopProblem(zero, 0, past, 2147483648),
            "the loop's bound 2147483648 is past the int (32 bits) that counts the kernel's loop");
  const Expr unsignedEnd = ExprNode::chunkSize(ExprNode::nranks());
  EXPECT_NE(intLoopProblem(ExprNode::constant(-1), -1, unsignedEnd, 8), "");
  EXPECT_EQ(intLoopProblem(zero, 0, unsignedEnd, 8), "");
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
