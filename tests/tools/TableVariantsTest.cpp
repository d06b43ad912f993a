// The fixed variants `collc bench --dispatch` compares dispatch with (tools/tune/TableVariants.h):
// the finite variants of the chosen key, those timed at every size, and the tuner's finalists.
#include "tools/tune/TableVariants.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

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

const char* const kMeasured = R"(
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot sentinel 8  512 16 1 2.28 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot ll       8  512 16 1 2.10 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   8K   4K   allreduce_oneshot sentinel 8  512 16 1 2.53 *
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   8K   4K   allreduce_oneshot ll       8  512 16 1 2.40 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 8K   1M   64K  allreduce_twoshot sentinel 16 512 16 1 5.0  -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 1M   inf  4M   allreduce_twoshot barrier  64 512 16 1 30.0 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 1M   inf  4M   allreduce_twoshot ll128_atomic 16 512 16 1 inf -
)";

TEST(TableVariants, AreTheFiniteOnesOfTheChosenKey) {
  TuningTable table = parse(kMeasured);
  std::vector<TunedVariant> variants = tableVariants(table, h200Query());
  ASSERT_EQ(variants.size(), 4u); // oneshot sentinel and ll, twoshot sentinel and barrier
  EXPECT_EQ(variants[0].sync, SyncKind::Sentinel);
  EXPECT_EQ(variants[1].sync, SyncKind::LL);
  EXPECT_EQ(variants[3].blocks, 64);
  DispatchQuery other = h200Query();
  other.key.nranks = 4;
  EXPECT_TRUE(tableVariants(table, other).empty());
}

// collc tune times its finalists at every size; a variant it timed at some sizes only is left
// out of the comparison when asked, and one that failed somewhere is not complete either.
TEST(TableVariants, TimedAtEverySize) {
  TuningTable table = parse(R"(
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot sentinel 8  512 16 1 2.28 *
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot ll       8  512 16 1 2.40 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_twoshot barrier  64 512 16 1 inf -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot sentinel 4  128 16 1 2.20 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   inf  4M   allreduce_oneshot sentinel 8  512 16 1 21.0 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   inf  4M   allreduce_oneshot ll       8  512 16 1 40.0 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   inf  4M   allreduce_twoshot barrier  64 512 16 1 20.0 *
)");
  std::vector<TunedVariant> all = tableVariants(table, h200Query());
  EXPECT_EQ(all.size(), 4u);
  std::vector<TunedVariant> complete = tableVariants(table, h200Query(), TableVariants::EverySize);
  ASSERT_EQ(complete.size(), 2u); // the 4x128 one lacks 4M; two-shot failed at 1K
  EXPECT_EQ(complete[0].sync, SyncKind::Sentinel);
  EXPECT_EQ(complete[0].blocks, 8);
  EXPECT_EQ(complete[1].sync, SyncKind::LL);
}

// A table tuned in two pieces: each piece's finalists were cross-checked only at its own sizes.
// The finalists are each size's two fastest and any variant timed at every size.
TEST(TableVariants, FinalistsOfATableTunedInPieces) {
  TuningTable table = parse(R"(
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot sentinel 8   512 16 1 2.30 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot sentinel 132 128 16 1 1.80 *
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot sentinel 64  128 16 1 1.85 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot sentinel 132 128 16 1 1.82 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0    2K   1K   allreduce_oneshot ll       4   128 16 1 1.90 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   inf  16M  allreduce_oneshot sentinel 8   512 16 1 90.0 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   inf  16M  allreduce_twoshot barrier  132 512 16 1 56.0 *
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   inf  16M  allreduce_twoshot sentinel 132 512 16 1 57.0 -
NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 2K   inf  16M  allreduce_twoshot ll       132 512 16 1 inf -
)");
  std::vector<TunedVariant> finalists = tableVariants(table, h200Query(), TableVariants::Finalists);
  // 8x512 (every size), then 132x128 and 64x128 (1K: 132x128's second timing does not push
  // 64x128 out), then the two two-shots (16M); neither the slower ll nor the failed one.
  ASSERT_EQ(finalists.size(), 5u);
  EXPECT_EQ(finalists[0].blocks, 8);
  EXPECT_EQ(finalists[1].blocks, 132);
  EXPECT_EQ(finalists[1].threads, 128);
  EXPECT_EQ(finalists[2].blocks, 64);
  EXPECT_EQ(finalists[3].sync, SyncKind::Barrier);
  EXPECT_EQ(finalists[4].sync, SyncKind::Sentinel);
  EXPECT_EQ(finalists[4].spec, "allreduce_twoshot");
  std::vector<TunedVariant> complete = tableVariants(table, h200Query(), TableVariants::EverySize);
  ASSERT_EQ(complete.size(), 1u);
  EXPECT_EQ(complete[0].blocks, 8);
}

} // namespace
} // namespace collc
