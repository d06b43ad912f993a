// The float64 reference of every kind (tools/harness/CollectiveReference.h) agrees with the
// verifier's postcondition (compiler/Postcondition.h), accepts the right outputs, and names what is
// wrong.
#include "tools/harness/CollectiveReference.h"

#include "abi/CollectiveShapes.h"
#include "compiler/Postcondition.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

constexpr CollectiveKind kKinds[] = {CollectiveKind::AllReduce,     CollectiveKind::AllGather,
                                     CollectiveKind::ReduceScatter, CollectiveKind::Broadcast,
                                     CollectiveKind::Reduce,        CollectiveKind::AllToAll};

/// Every rank's input for one call, and the exact output each rank should produce (computed from
/// the verifier's postcondition, independently of the reference under test).
struct Call {
  std::vector<std::vector<float>> inputs;
  std::vector<const void*> pointers;
  CollectiveCall call;

  Call(CollectiveKind kind, ReduceOp op, int nranks, uint64_t count, int root) {
    std::mt19937_64 rng(7);
    for (int r = 0; r < nranks; ++r) {
      inputs.emplace_back(inputElems(kind, count, nranks));
      fillRandom(DType::F32, inputs.back().data(), inputs.back().size(), rng);
    }
    for (const auto& in : inputs)
      pointers.push_back(in.data());
    call.kind = kind;
    call.type = DType::F32;
    call.op = op;
    call.root = root;
    call.count = count;
    call.inputs = pointers;
  }

  /// Rank r's correct output; elements the kind leaves unspecified hold NaN.
  std::vector<float> expected(int r) const {
    const int nranks = int(inputs.size());
    std::vector<float> out(outputElems(call.kind, call.count, nranks), NAN);
    for (uint64_t i = 0; i < out.size(); ++i) {
      auto sources = expectedOutput(call.kind, r, call.root, nranks, int64_t(call.count), i);
      if (!sources)
        continue;
      double value = 0;
      for (size_t k = 0; k < sources->size(); ++k) {
        double x = inputs[(*sources)[k].first][(*sources)[k].second];
        value = k == 0                     ? x
                : call.op == ReduceOp::Sum ? value + x
                : call.op == ReduceOp::Max ? std::max(value, x)
                                           : std::min(value, x);
      }
      out[i] = float(value);
    }
    return out;
  }
};

TEST(CollectiveReference, AcceptsTheOutputThePostconditionDescribes) {
  for (CollectiveKind kind : kKinds)
    for (ReduceOp op : kAllReduceOps)
      for (int nranks : {2, 3, 8}) {
        Call c(kind, op, nranks, 13, nranks - 1);
        for (int r = 0; r < nranks; ++r) {
          std::vector<float> out = c.expected(r);
          Comparison comparison = compareCollective(c.call, r, out.data(), "out");
          EXPECT_TRUE(comparison.ok()) << name(kind) << " " << name(op) << " rank " << r << ": "
                                       << comparison.firstMismatches;
        }
      }
}

TEST(CollectiveReference, CatchesAWrongElementAndNamesItsSources) {
  Call c(CollectiveKind::AllGather, ReduceOp::Sum, 4, 5, 0);
  std::vector<float> out = c.expected(1);
  out[12] = c.inputs[2][3]; // block 2 holds rank 2's input: element 12 must be in[2] of rank 2
  Comparison comparison = compareCollective(c.call, 1, out.data(), "rank 1 out");
  EXPECT_EQ(comparison.mismatches, 1u);
  EXPECT_NE(comparison.firstMismatches.find("rank 1 out[12]: got"), std::string::npos)
      << comparison.firstMismatches;
  EXPECT_NE(comparison.firstMismatches.find("a copy must match exactly); from rank 2 in[2]"),
            std::string::npos)
      << comparison.firstMismatches;
}

TEST(CollectiveReference, ReduceScatterTakesEachRanksOwnBlock) {
  Call c(CollectiveKind::ReduceScatter, ReduceOp::Sum, 2, 4, 0);
  // Rank 1's output must be the sum of block 1; block 0's sum is wrong everywhere.
  std::vector<float> out(4);
  for (int i = 0; i < 4; ++i)
    out[i] = c.inputs[0][i] + c.inputs[1][i];
  EXPECT_EQ(compareCollective(c.call, 1, out.data(), "out").mismatches, 4u);
  EXPECT_TRUE(compareCollective(c.call, 0, out.data(), "out").ok());
}

TEST(CollectiveReference, ReduceChecksOnlyTheRoot) {
  Call c(CollectiveKind::Reduce, ReduceOp::Max, 3, 6, 2);
  std::vector<float> garbage(6, 12345.0f);
  EXPECT_TRUE(compareCollective(c.call, 0, garbage.data(), "out").ok());
  EXPECT_EQ(compareCollective(c.call, 2, garbage.data(), "out").mismatches, 6u);
}

TEST(CollectiveReference, CopiesTreatSignedZerosAsEqualAndNanAsNan) {
  Call c(CollectiveKind::Broadcast, ReduceOp::Sum, 2, 3, 1);
  c.inputs[1] = {-0.0f, NAN, 1.5f};
  std::vector<float> out = {0.0f, NAN, 1.5f}; // the sentinel strategy sends -0.0 as +0.0
  EXPECT_TRUE(compareCollective(c.call, 0, out.data(), "out").ok());
  out[1] = 1.0f;
  EXPECT_EQ(compareCollective(c.call, 0, out.data(), "out").mismatches, 1u);
}

} // namespace
} // namespace collc
