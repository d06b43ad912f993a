// The tuner's search against a model of a machine, without a GPU: it finds the model's best
// variant per size with far fewer measurements than the cross product, goes on past variants
// that are refused or fail, never measures a (variant, size) twice, reports progress that ends
// at its total, and the table it makes keeps every timing with one winner per size.
#include "runtime/TuneSearch.h"

#include "runtime/DispatchPlan.h"

#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <set>

namespace collc {
namespace {

constexpr uint64_t K = 1024, M = 1024 * 1024;

/// A made-up machine: one-shot wins small sizes, two-shot large ones; sentinel beats barrier
/// small, barrier wins large; time falls with blocks up to an optimum that grows with size;
/// threads 512 and vector 16 are best; ll128_atomic never compiles; 1024 threads fail to run.
struct ModelMachine {
  int calls = 0;
  std::set<std::pair<TunedVariant, uint64_t>> measured;
  bool duplicate = false;

  static TunedVariant resolve(TunedVariant v) {
    if (!v.sync)
      v.sync = SyncKind::Barrier;
    if (!v.blocks)
      v.blocks = v.spec == "allreduce_oneshot" ? 8 : 16;
    if (!v.threads)
      v.threads = 512;
    if (!v.vectorBytes)
      v.vectorBytes = 16;
    if (!v.unroll)
      v.unroll = 1;
    return v;
  }

  static double time(const TunedVariant& v, uint64_t bytes) {
    const double kb = double(bytes) / 1024;
    const bool oneshot = v.spec == "allreduce_oneshot";
    double latency = (*v.sync == SyncKind::Barrier ? 3.0 : 2.0) + (oneshot ? 0 : 1.5);
    double perKb = (oneshot ? 0.02 : 0.008) * (*v.sync == SyncKind::Barrier ? 1.0 : 1.6);
    const double idealBlocks = std::clamp(kb / 64, 1.0, 64.0);
    perKb *= 1 + std::fabs(std::log2(*v.blocks / idealBlocks)) * 0.2;
    perKb *= *v.threads == 512 ? 1.0 : 1.15;
    perKb *= *v.vectorBytes == 16 ? 1.0 : 1.3;
    perKb *= *v.unroll == 1 ? 1.0 : 1.05;
    return latency + perKb * kb;
  }

  std::vector<TuneMeasurement> operator()(const TunedVariant& asked,
                                          const std::vector<uint64_t>& sizes,
                                          const std::function<void(uint64_t)>& before) {
    ++calls;
    std::vector<TuneMeasurement> out;
    for (uint64_t bytes : sizes) {
      before(bytes);
      TuneMeasurement m;
      m.bytes = bytes;
      if (asked.sync == SyncKind::LL128Atomic) {
        m.variant = asked;
        m.note = "refused: the model has no atomics";
        m.refused = true;
      } else {
        m.variant = resolve(asked);
        if (*m.variant.threads == 1024)
          m.note = "FAILED: too many resources requested for launch";
        else
          m.us = time(m.variant, bytes);
      }
      duplicate |= !measured.insert({m.variant, bytes}).second;
      out.push_back(m);
    }
    return out;
  }
};

TuneSpace fullSpace() {
  TuneSpace space;
  space.specs = {"allreduce_oneshot", "allreduce_twoshot"};
  space.syncs = {SyncKind::Barrier, SyncKind::Sentinel, SyncKind::LL128Atomic};
  space.blocks = {1, 2, 4, 8, 16, 32, 64, 132};
  space.threads = {128, 256, 512, 1024};
  space.vectorBytes = {4, 8, 16};
  space.unrolls = {1, 2};
  space.keepPerSize = 2;
  return space;
}

std::vector<uint64_t> sizes() {
  return {1 * K, 16 * K, 256 * K, 4 * M, 64 * M};
}

/// The model's true optimum at `bytes` over the whole cross product.
double bruteForceBest(uint64_t bytes) {
  TuneSpace space = fullSpace();
  double best = INFINITY;
  for (const std::string& spec : space.specs)
    for (SyncKind sync : {SyncKind::Barrier, SyncKind::Sentinel})
      for (int b : space.blocks)
        for (int t : {128, 256, 512})
          for (int v : space.vectorBytes)
            for (int u : space.unrolls)
              best =
                  std::min(best, ModelMachine::time(TunedVariant(spec, sync, b, t, v, u), bytes));
  return best;
}

TEST(TuneSearch, FindsTheBestVariantPerSizeWithFewMeasurements) {
  ModelMachine machine;
  std::vector<TuneMeasurement> all = runTuneSearch(
      fullSpace(), sizes(), [&](auto& v, auto& s, auto& before) { return machine(v, s, before); },
      nullptr);
  EXPECT_FALSE(machine.duplicate) << "a (variant, size) was measured twice";
  // The cross product would be 2 x 3 x 8 x 4 x 3 x 2 = 1152 per size.
  EXPECT_LT(all.size(), 200u * sizes().size() / 5);
  for (uint64_t bytes : sizes()) {
    const TuneMeasurement* best = bestAt(all, bytes);
    ASSERT_NE(best, nullptr) << bytes;
    EXPECT_NEAR(best->us, bruteForceBest(bytes), 1e-9 + bruteForceBest(bytes) * 0.01)
        << formatTableBytes(bytes) << ": found " << best->variant.text();
  }
  EXPECT_EQ(bestAt(all, 1 * K)->variant.spec, "allreduce_oneshot");
  EXPECT_EQ(bestAt(all, 1 * K)->variant.sync, SyncKind::Sentinel);
  EXPECT_EQ(bestAt(all, 64 * M)->variant.spec, "allreduce_twoshot");
  EXPECT_EQ(bestAt(all, 64 * M)->variant.sync, SyncKind::Barrier);
  EXPECT_EQ(bestAt(all, 64 * M)->variant.blocks, 64);
}

TEST(TuneSearch, RefusedAndFailedVariantsScoreInfinityAndTheSearchGoesOn) {
  ModelMachine machine;
  std::vector<TuneMeasurement> all = runTuneSearch(
      fullSpace(), sizes(), [&](auto& v, auto& s, auto& before) { return machine(v, s, before); },
      nullptr);
  int refused = 0, failed = 0;
  for (const TuneMeasurement& m : all) {
    if (m.variant.sync == SyncKind::LL128Atomic) {
      ++refused;
      EXPECT_TRUE(std::isinf(m.us));
      EXPECT_NE(m.note.find("refused"), std::string::npos);
    }
    if (m.variant.threads == 1024) {
      ++failed;
      EXPECT_TRUE(std::isinf(m.us));
    }
  }
  EXPECT_EQ(refused, 2 * int(sizes().size())); // stage 1 only: never among the best
  EXPECT_GT(failed, 0);                        // tried in stage 2, and the search went on
  for (uint64_t bytes : sizes())
    EXPECT_NE(bestAt(all, bytes)->variant.threads, 1024);
}

TEST(TuneSearch, ProgressCountsEveryMeasurementAndEndsAtItsTotal) {
  ModelMachine machine;
  std::vector<TuneProgress> seen;
  std::vector<TuneMeasurement> all = runTuneSearch(
      fullSpace(), sizes(), [&](auto& v, auto& s, auto& before) { return machine(v, s, before); },
      [&](const TuneProgress& p) { seen.push_back(p); });
  ASSERT_EQ(seen.size(), all.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].done, int(i + 1));
    EXPECT_LE(seen[i].done, seen[i].total);
  }
  EXPECT_EQ(seen.back().total, seen.back().done); // the last stage's count is exact
  EXPECT_EQ(seen.front().stage, "stage 1: algorithm x sync");
  EXPECT_EQ(seen.back().stage, "stage 2: unroll");
  // The first estimate is an upper bound of what was done.
  EXPECT_GE(seen.front().total, seen.back().done);
}

TEST(TuneSearch, StageOneOnlyWhenNothingIsKept) {
  ModelMachine machine;
  TuneSpace space = fullSpace();
  space.keepPerSize = 0;
  std::vector<TuneMeasurement> all = runTuneSearch(
      space, sizes(), [&](auto& v, auto& s, auto& before) { return machine(v, s, before); },
      nullptr);
  EXPECT_EQ(all.size(), 2u * 3u * sizes().size());
  EXPECT_EQ(machine.calls, 6); // one call per variant, over every size
}

TEST(TuneSearch, RowsKeepEveryTimingAndMarkOneWinnerPerSize) {
  ModelMachine machine;
  std::vector<TuneMeasurement> all = runTuneSearch(
      fullSpace(), sizes(), [&](auto& v, auto& s, auto& before) { return machine(v, s, before); },
      nullptr);
  TuningKey key{"GPU", 2, "nvlink-p2p", CollectiveKind::AllReduce, DType::BF16, ReduceOp::Sum};
  std::vector<TuningRow> rows = tuningRows(all, sizes(), key);
  // Every timing is a row, but for the refused variant (never run): it is named once instead.
  EXPECT_EQ(rows.size(), all.size() - 2 * sizes().size());
  for (const TuningRow& row : rows)
    EXPECT_NE(row.variant.sync, SyncKind::LL128Atomic);
  std::vector<std::string> refused = refusedVariants(all);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused[0], "allreduce_oneshot/ll128_atomic -x- v- u-: refused: the model has no "
                        "atomics");
  std::map<uint64_t, int> winners;
  for (const TuningRow& row : rows) {
    winners[row.bytes] += row.best;
    EXPECT_TRUE(row.key.sameAs(key));
  }
  for (uint64_t bytes : sizes())
    EXPECT_EQ(winners[bytes], 1) << bytes;
  EXPECT_EQ(rows.front().fromBytes, 0u);
  EXPECT_EQ(rows.front().toBytes, 16 * K);
  EXPECT_EQ(rows.back().fromBytes, 64 * M);
  EXPECT_EQ(rows.back().toBytes, kNoUpperBound);

  // Written, read back and dispatched: the plan runs each size's winner.
  TuningTable table;
  table.path = "tuned.tsv";
  table.header = {"test"};
  table.rows = rows;
  std::string text;
  llvm::raw_string_ostream out(text);
  writeTuningTable(out, table);
  out.flush();
  auto parsed = parseTuningTable(text, "tuned.tsv");
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  DispatchQuery query;
  query.key = {"GPU", 2, "nvlink-p2p", CollectiveKind::AllReduce, DType::BF16, ReduceOp::Sum};
  auto plan = tablePlan(*parsed, query);
  ASSERT_TRUE(plan);
  for (uint64_t bytes : sizes())
    EXPECT_EQ(plan->variants[plan->variantFor(bytes)], bestAt(all, bytes)->variant) << bytes;
}

TEST(TuneSearch, ReplacingAKeyKeepsTheOtherKeys) {
  TuningKey bf16{"GPU", 2, "nvlink-p2p", CollectiveKind::AllReduce, DType::BF16, ReduceOp::Sum};
  TuningKey f32 = bf16;
  f32.dtype = DType::F32;
  TuningTable table;
  TuningRow old;
  old.key = bf16;
  old.variant.spec = "old";
  TuningRow other = old;
  other.key = f32;
  table.rows = {old, other};
  TuningRow fresh = old;
  fresh.variant.spec = "fresh";
  replaceKeyRows(table, bf16, {fresh});
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].key.dtype, DType::F32);
  EXPECT_EQ(table.rows[1].variant.spec, "fresh");
}

} // namespace
} // namespace collc
