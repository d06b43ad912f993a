// Which variant dispatch picks for which size, without a GPU: the built-in rule, the table's
// winners (marked or fastest), the most specific key, spec filters, gaps, and the sizes below the
// first and above the last range.
#include "runtime/DispatchPlan.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

constexpr uint64_t K = 1024, M = 1024 * 1024;

DispatchQuery h200Query() {
  DispatchQuery query;
  query.key = {"NVIDIA_H200", 2, "nvlink-p2p", CollectiveKind::AllReduce, DType::BF16,
               ReduceOp::Sum};
  return query;
}

TuningTable parse(const std::string& text) {
  auto table = parseTuningTable(text, "t.tsv");
  EXPECT_TRUE(bool(table)) << toString(table.takeError());
  return table ? std::move(*table) : TuningTable{};
}

const TunedVariant& chosen(const DispatchPlan& plan, uint64_t bytes) {
  return plan.variants.at(plan.variantFor(bytes));
}

/// Plans hold: contiguous ranges from 0 to no end, each naming a variant that exists.
void expectWellFormed(const DispatchPlan& plan) {
  ASSERT_FALSE(plan.ranges.empty());
  EXPECT_EQ(plan.ranges.front().fromBytes, 0u);
  EXPECT_EQ(plan.ranges.back().toBytes, kNoUpperBound);
  for (size_t i = 0; i < plan.ranges.size(); ++i) {
    EXPECT_LT(plan.ranges[i].variant, plan.variants.size());
    EXPECT_LT(plan.ranges[i].fromBytes, plan.ranges[i].toBytes);
    if (i > 0) {
      EXPECT_EQ(plan.ranges[i].fromBytes, plan.ranges[i - 1].toBytes);
    }
  }
}

const char* const kMeasured = R"(
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot sentinel 8  512 16 1 2.28 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot ll       8  512 16 1 2.10 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   8K   4K   allreduce_oneshot sentinel 8  512 16 1 2.53 *
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   8K   4K   allreduce_oneshot ll       8  512 16 1 2.40 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 8K   1M   64K  allreduce_twoshot sentinel 16 512 16 1 5.0  -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 1M   inf  4M   allreduce_twoshot barrier  64 512 16 1 30.0 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 1M   inf  4M   allreduce_twoshot ll128_atomic 16 512 16 1 inf -
)";

TEST(DispatchPlan, DefaultRuleFollowsTheH200Measurements) {
  DispatchPlan plan = defaultDispatchPlan(h200Query());
  expectWellFormed(plan);
  EXPECT_FALSE(plan.fromTable);
  EXPECT_EQ(chosen(plan, 0).spec, "allreduce_oneshot");
  EXPECT_EQ(chosen(plan, 1 * K).sync, SyncKind::Sentinel);
  EXPECT_EQ(chosen(plan, 1 * K).threads, 128);
  EXPECT_EQ(chosen(plan, 1 * M - 1).threads, 128);
  EXPECT_EQ(chosen(plan, 1 * M).spec, "allreduce_oneshot");
  EXPECT_EQ(chosen(plan, 1 * M).threads, 512);
  EXPECT_FALSE(chosen(plan, 1 * M - 1).wholeStores.has_value()) << "below 1M they cost a little";
  EXPECT_EQ(chosen(plan, 1 * M).wholeStores, 1);
  EXPECT_EQ(chosen(plan, 4 * M).wholeStores, 1);
  EXPECT_EQ(chosen(plan, 4 * M - 1).spec, "allreduce_oneshot");
  EXPECT_EQ(chosen(plan, 4 * M).spec, "allreduce_twoshot");
  EXPECT_EQ(chosen(plan, 4 * M).sync, SyncKind::Sentinel);
  EXPECT_EQ(chosen(plan, 16 * M).sync, SyncKind::Barrier);
  EXPECT_EQ(chosen(plan, 16 * M).threads, 1024);
  EXPECT_EQ(chosen(plan, 16 * M).wholeStores, 1);
  EXPECT_EQ(chosen(plan, 64 * M).sync, SyncKind::Barrier);
  EXPECT_EQ(chosen(plan, kNoUpperBound).sync, SyncKind::Barrier);
  for (uint64_t bytes : {uint64_t(0), 1 * M, 4 * M, 64 * M})
    EXPECT_EQ(chosen(plan, bytes).blocks, 32) << "the GPU's size is not known: a safe grid";
  EXPECT_EQ(plan.variants.size(), 4u);

  // Knowing the GPU, every range takes one block per multiprocessor, up to 132.
  DispatchQuery h200 = h200Query();
  h200.multiprocessors = 132;
  EXPECT_EQ(chosen(defaultDispatchPlan(h200), 1 * K).blocks, 132);
  EXPECT_EQ(chosen(defaultDispatchPlan(h200), 512 * K).blocks, 132);
  h200.multiprocessors = 200;
  EXPECT_EQ(chosen(defaultDispatchPlan(h200), 64 * M).blocks, 132);
  h200.multiprocessors = 20;
  EXPECT_EQ(chosen(defaultDispatchPlan(h200), 64 * M).blocks, 20);
}

TEST(DispatchPlan, DefaultRuleKeepsToSpecsThatDeclareTheRankCount) {
  DispatchQuery query = h200Query();
  query.declaredRanks = [](const std::string& spec) -> std::optional<std::pair<int, int>> {
    if (spec == "allreduce_twoshot")
      return std::pair{2, 15};
    return std::pair{2, 72};
  };
  query.key.nranks = 16;
  DispatchPlan past = defaultDispatchPlan(query);
  expectWellFormed(past);
  ASSERT_EQ(past.ranges.size(), 2u);
  for (const TunedVariant& variant : past.variants)
    EXPECT_EQ(variant.spec, "allreduce_oneshot");
  EXPECT_EQ(chosen(past, 1 * K).threads, 128);
  EXPECT_EQ(chosen(past, 64 * M).threads, 512);
  EXPECT_EQ(chosen(past, 64 * M).wholeStores, 1);
  EXPECT_NE(past.source.find("allreduce_twoshot declares ranks 2..15"), std::string::npos);
  // At a count the two-shot declares, and where the ranges are not known, the measured rule.
  query.key.nranks = 15;
  EXPECT_EQ(chosen(defaultDispatchPlan(query), 64 * M).spec, "allreduce_twoshot");
  query.key.nranks = 16;
  query.declaredRanks = nullptr;
  EXPECT_EQ(chosen(defaultDispatchPlan(query), 64 * M).spec, "allreduce_twoshot");
}

TEST(DispatchPlan, DefaultRuleLoadsOnlyWhatTheLargestCallNeeds) {
  DispatchQuery query = h200Query();
  query.maxBytes = 16 * K;
  DispatchPlan plan = defaultDispatchPlan(query);
  expectWellFormed(plan);
  ASSERT_EQ(plan.variants.size(), 1u);
  EXPECT_EQ(plan.variants[0].spec, "allreduce_oneshot");
  query.maxBytes = 1 * M; // exactly at a boundary: the next range is reachable
  EXPECT_EQ(defaultDispatchPlan(query).variants.size(), 2u);
}

TEST(DispatchPlan, DefaultRuleForOneSpecIsThatSpecAlone) {
  DispatchQuery query = h200Query();
  query.spec = "my.coll";
  DispatchPlan plan = defaultDispatchPlan(query);
  expectWellFormed(plan);
  ASSERT_EQ(plan.variants.size(), 1u);
  EXPECT_EQ(plan.variants[0], TunedVariant{"my.coll"});
}

TEST(DispatchPlan, TableWinnersRunTheirRanges) {
  TuningTable table = parse(kMeasured);
  std::string why;
  auto plan = tablePlan(table, h200Query(), &why);
  ASSERT_TRUE(plan) << why;
  expectWellFormed(*plan);
  EXPECT_TRUE(plan->fromTable);
  // 0..2K: no mark, so the fastest (ll, 2.10).
  EXPECT_EQ(chosen(*plan, 0).sync, SyncKind::LL);
  EXPECT_EQ(chosen(*plan, 2 * K - 1).sync, SyncKind::LL);
  // 2K..8K: the marked one wins over a faster one (a person's override).
  EXPECT_EQ(chosen(*plan, 2 * K).sync, SyncKind::Sentinel);
  EXPECT_EQ(chosen(*plan, 8 * K - 1).sync, SyncKind::Sentinel);
  EXPECT_EQ(chosen(*plan, 8 * K).spec, "allreduce_twoshot");
  EXPECT_EQ(chosen(*plan, 8 * K).sync, SyncKind::Sentinel);
  // From 1M: the failed (inf) row never wins.
  EXPECT_EQ(chosen(*plan, 1 * M).sync, SyncKind::Barrier);
  EXPECT_EQ(chosen(*plan, 1 * M).blocks, 64);
  EXPECT_EQ(chosen(*plan, 1ull << 40).sync, SyncKind::Barrier);
  EXPECT_EQ(plan->variants.size(), 4u);
}

TEST(DispatchPlan, GapsAndEndsTakeTheNearestRange) {
  TuningTable table = parse(R"(
GPU 2 nvlink-p2p allreduce bf16 sum 4K  8K  4K  a  barrier 8  512 16 1 3.0 *
GPU 2 nvlink-p2p allreduce bf16 sum 64K 1M  64K b  barrier 16 512 16 1 9.0 *
)");
  DispatchQuery query = h200Query();
  query.key.gpu = "GPU";
  auto plan = tablePlan(table, query);
  ASSERT_TRUE(plan);
  expectWellFormed(*plan);
  EXPECT_EQ(chosen(*plan, 1).spec, "a");      // below the first range: the first
  EXPECT_EQ(chosen(*plan, 16 * K).spec, "a"); // in the gap: the range below
  EXPECT_EQ(chosen(*plan, 64 * K).spec, "b");
  EXPECT_EQ(chosen(*plan, 256 * M).spec, "b"); // above the last: the last
  EXPECT_EQ(plan->ranges.size(), 2u);
}

TEST(DispatchPlan, NeighboursWithOneVariantMerge) {
  TuningTable table = parse(R"(
GPU 2 nvlink-p2p allreduce bf16 sum 0  4K  1K  a barrier 8 512 16 1 3.0 *
GPU 2 nvlink-p2p allreduce bf16 sum 4K 8K  4K  a barrier 8 512 16 1 3.5 *
GPU 2 nvlink-p2p allreduce bf16 sum 8K inf 8K  b barrier 8 512 16 1 4.0 *
)");
  DispatchQuery query = h200Query();
  query.key.gpu = "GPU";
  auto plan = tablePlan(table, query);
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->ranges.size(), 2u);
  EXPECT_EQ(plan->ranges[0].toBytes, 8 * K);
}

TEST(DispatchPlan, TheMostSpecificMatchingKeyWins) {
  TuningTable table = parse(R"(
*           * *          allreduce * *   0 inf 1K loose  - - - - - 5.0 *
NVIDIA_H200 2 nvlink-p2p allreduce * sum 0 inf 1K middle - - - - - 5.0 *
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0 inf 1K exact - - - - - 5.0 *
NVIDIA_H200 4 nvlink-p2p allreduce bf16 sum 0 inf 1K fourranks - - - - - 5.0 *
)");
  auto plan = tablePlan(table, h200Query());
  ASSERT_TRUE(plan);
  EXPECT_EQ(chosen(*plan, 1 * K).spec, "exact");
  DispatchQuery f32 = h200Query();
  f32.key.dtype = DType::F32;
  EXPECT_EQ(chosen(*tablePlan(table, f32), 1 * K).spec, "middle");
  DispatchQuery max = h200Query();
  max.key.op = ReduceOp::Max;
  EXPECT_EQ(chosen(*tablePlan(table, max), 1 * K).spec, "loose");
}

TEST(DispatchPlan, NoMatchingRowFallsBackToTheDefaultRuleAndSaysWhy) {
  TuningTable table = parse(kMeasured);
  DispatchQuery query = h200Query();
  query.key.nranks = 8;
  std::string why;
  EXPECT_FALSE(tablePlan(table, query, &why));
  EXPECT_NE(why.find("no row of t.tsv matches NVIDIA_H200 ranks=8"), std::string::npos) << why;
  DispatchPlan plan = chooseDispatchPlan(&table, query);
  expectWellFormed(plan);
  EXPECT_FALSE(plan.fromTable);
  EXPECT_NE(plan.source.find("built-in default rule"), std::string::npos) << plan.source;
  EXPECT_NE(plan.source.find("no row of t.tsv matches"), std::string::npos) << plan.source;
  DispatchPlan noTable = chooseDispatchPlan(nullptr, h200Query());
  EXPECT_NE(noTable.source.find("no tuning table"), std::string::npos) << noTable.source;
  // Other GPU, other topology: the table does not speak for them.
  query = h200Query();
  query.key.gpu = "NVIDIA_B200";
  EXPECT_FALSE(tablePlan(table, query));
  query = h200Query();
  query.key.topology = "pcie-p2p";
  EXPECT_FALSE(tablePlan(table, query));
}

TEST(DispatchPlan, OnlyFailedRowsMeanNoPlan) {
  TuningTable table =
      parse("GPU 2 nvlink-p2p allreduce bf16 sum 0 inf 1K a barrier 8 512 16 1 inf -\n");
  DispatchQuery query = h200Query();
  query.key.gpu = "GPU";
  std::string why;
  EXPECT_FALSE(tablePlan(table, query, &why));
  EXPECT_NE(why.find("failed"), std::string::npos) << why;
}

TEST(DispatchPlan, ASpecKeepsToItsOwnRows) {
  TuningTable table = parse(kMeasured);
  DispatchQuery query = h200Query();
  query.spec = "allreduce_twoshot";
  auto plan = tablePlan(table, query);
  ASSERT_TRUE(plan);
  expectWellFormed(*plan);
  for (const TunedVariant& variant : plan->variants)
    EXPECT_EQ(variant.spec, "allreduce_twoshot");
  EXPECT_EQ(chosen(*plan, 1 * K).sync, SyncKind::Sentinel); // below its first range
  query.spec = "not_in_the_table";
  EXPECT_FALSE(tablePlan(table, query));
}

TEST(DispatchPlan, RangesAboveTheLargestCallAreNotLoaded) {
  TuningTable table = parse(kMeasured);
  DispatchQuery query = h200Query();
  query.maxBytes = 4 * K;
  auto plan = tablePlan(table, query);
  ASSERT_TRUE(plan);
  expectWellFormed(*plan);
  EXPECT_EQ(plan->variants.size(), 2u); // ll (0..2K) and sentinel (2K..)
  EXPECT_EQ(chosen(*plan, 4 * K).sync, SyncKind::Sentinel);
}

TEST(DispatchPlan, PlanRowsAreThoseOfTheChosenKeyAndSpec) {
  TuningTable table = parse(kMeasured);
  std::vector<const TuningRow*> rows = planRows(table, h200Query());
  ASSERT_EQ(rows.size(), 7u); // every row, the inf one too, in the order of the file
  EXPECT_EQ(rows.front(), &table.rows.front());
  EXPECT_EQ(rows.back(), &table.rows.back());
  DispatchQuery twoshot = h200Query();
  twoshot.spec = "allreduce_twoshot";
  rows = planRows(table, twoshot);
  ASSERT_EQ(rows.size(), 3u);
  for (const TuningRow* row : rows)
    EXPECT_EQ(row->variant.spec, "allreduce_twoshot");
  DispatchQuery other = h200Query();
  other.key.nranks = 4;
  EXPECT_TRUE(planRows(table, other).empty());
}

TEST(DispatchPlan, DescribesItsRanges) {
  std::string text = describePlan(defaultDispatchPlan(h200Query()));
  EXPECT_NE(text.find("[0, 1M)  allreduce_oneshot/sentinel 32x128 v- u-"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[16M, inf)  allreduce_twoshot/barrier 32x1024 v- u- w1"), std::string::npos)
      << text;
}

} // namespace
} // namespace collc
