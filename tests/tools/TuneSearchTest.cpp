// The tuner's search against a model of a machine, without a GPU: it finds the model's best
// variant per size with far fewer measurements than the cross product, goes on past variants
// that are refused or fail, never measures a (variant, size) twice, reports progress that ends
// at its total, and the table it makes keeps every timing with one winner per size.
#include "tools/tune/TuneSearch.h"

#include "runtime/DispatchPlan.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace collc {

// gtest prints a variant that differs as its text, not its bytes.
void PrintTo(const TunedVariant& variant, std::ostream* out) {
  *out << variant.text();
}

namespace {

constexpr uint64_t K = 1024, M = 1024 * 1024;

/// A made-up machine: one-shot wins small sizes, two-shot large ones; sentinel beats barrier
/// small, barrier wins large; time falls with blocks up to an optimum that grows with size;
/// threads 512 and vector 16 are best; ll128_atomic never compiles; 1024 threads fail to run.
struct ModelMachine {
  int calls = 0;
  std::map<std::pair<TunedVariant, uint64_t>, int> measured; // how many times
  bool duplicate = false;
  // Noise: the first timing of these (variant, size) pairs is `slowBy` slow, later ones exact.
  std::set<std::pair<TunedVariant, uint64_t>> slowFirst;
  double slowBy = 1.005;
  // The machine's times; a test may swap in a model of its own.
  double (*model)(const TunedVariant&, uint64_t) = &ModelMachine::time;

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
    return v; // wholeStores stays as asked: unset is off, as in the compiler
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
          m.us = model(m.variant, bytes) *
                 (measured.count({m.variant, bytes}) == 0 && slowFirst.count({m.variant, bytes})
                      ? slowBy
                      : 1.0);
      }
      duplicate |= ++measured[{m.variant, bytes}] > 1;
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

/// runTuneSearch against `machine`, every progress report in `seen` when given.
std::vector<TuneMeasurement> search(const TuneSpace& space, ModelMachine& machine,
                                    std::vector<TuneProgress>* seen = nullptr,
                                    const std::vector<uint64_t>& at = sizes()) {
  TuneProgressFn progress;
  if (seen)
    progress = [seen](const TuneProgress& p) { seen->push_back(p); };
  return runTuneSearch(
      space, at, [&](auto& v, auto& s, auto& before) { return machine(v, s, before); }, progress);
}

/// `table` written as text and read back (a failure to read it fails the test), then the dispatch
/// plan it makes for the key of these tests' rows; nullopt where either step fails.
std::optional<DispatchPlan> readBackPlan(const TuningTable& table) {
  std::string text = tuningTableText(table);
  auto parsed = parseTuningTable(text, "tuned.tsv");
  if (!parsed) {
    ADD_FAILURE() << toString(parsed.takeError());
    return std::nullopt;
  }
  DispatchQuery query;
  query.key = {"GPU", 2, "nvlink-p2p", CollectiveKind::AllReduce, DType::BF16, ReduceOp::Sum};
  return tablePlan(*parsed, query);
}

TEST(TuneSearch, AStopKeepsWhatWasMeasuredAndMeasuresNothingMore) {
  ModelMachine machine;
  const TuneSpace space = fullSpace();
  const std::vector<TuneMeasurement> whole = search(space, machine);
  const int wholeCalls = machine.calls;
  ASSERT_GT(wholeCalls, 8);

  // Stopped after the eighth variant: the measurements of those eight come back, in order, and
  // the machine is asked for nothing more.
  ModelMachine stopped;
  std::vector<TuneMeasurement> kept = runTuneSearch(
      space, sizes(), [&](auto& v, auto& s, auto& before) { return stopped(v, s, before); }, {},
      [&] { return stopped.calls >= 8; });
  EXPECT_EQ(stopped.calls, 8);
  ASSERT_FALSE(kept.empty());
  ASSERT_LT(kept.size(), whole.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].variant, whole[i].variant) << i;
    EXPECT_EQ(kept[i].bytes, whole[i].bytes) << i;
  }
  // A stop from the start measures nothing at all.
  ModelMachine never;
  EXPECT_TRUE(runTuneSearch(
                  space, sizes(),
                  [&](auto& v, auto& s, auto& before) { return never(v, s, before); }, {},
                  [] { return true; })
                  .empty());
  EXPECT_EQ(never.calls, 0);
}

TEST(TuneSearch, FindsTheBestVariantPerSizeWithFewMeasurements) {
  ModelMachine machine;
  TuneSpace space = fullSpace();
  space.retimeWithin = 0; // the re-timing times a pair twice on purpose: a test of its own
  std::vector<TuneMeasurement> all = search(space, machine);
  EXPECT_FALSE(machine.duplicate) << "a (variant, size) was measured twice";
  // The cross product would be 2 x 3 x 8 x 4 x 3 x 2 = 1152 per size; the search times about a
  // twentieth of it.
  EXPECT_LT(all.size(), 60u * sizes().size());
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

/// What 2 x H200 showed at 64K: the spec's 8 x 512 is a local optimum of one knob at a time
/// (other block counts at 512 threads, or other threads at 8 blocks, are no faster), while many
/// blocks of few threads, one 16-byte vector per thread, are the fastest of all.
double manyBlocksOfFewThreads(const TunedVariant& v, uint64_t) {
  if (v.spec != "allreduce_oneshot" || v.sync != SyncKind::Sentinel)
    return 9.0;
  if (*v.blocks == 132 && *v.threads == 32)
    return 2.5;
  return *v.threads == 512 ? 3.0 : 3.2;
}

TEST(TuneSearch, BalancedShapesFindWhatOneKnobAtATimeCannotReach) {
  ModelMachine machine;
  machine.model = &manyBlocksOfFewThreads;
  TuneSpace space = fullSpace();
  space.keepPerSize = 1;
  space.vectorBytes.clear();
  space.unrolls.clear();
  std::vector<TuneMeasurement> all = search(space, machine, nullptr, {64 * K});
  const TuneMeasurement* best = bestAt(all, 64 * K);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(*best->variant.blocks, 132);
  EXPECT_EQ(*best->variant.threads, 32);
  EXPECT_DOUBLE_EQ(best->us, 2.5);
  EXPECT_FALSE(machine.duplicate);

  // One knob at a time alone stalls at 8 x 512, even with 32 threads among the values: at 512
  // threads no block count is faster, and at 8 blocks no thread count is.
  ModelMachine without;
  without.model = &manyBlocksOfFewThreads;
  space.balancedShapes = false;
  space.threads = {32, 64, 128, 256, 512, 1024};
  std::vector<TuneMeasurement> oneKnob = search(space, without, nullptr, {64 * K});
  EXPECT_DOUBLE_EQ(bestAt(oneKnob, 64 * K)->us, 3.0);
}

/// What 2 x H200 showed at 1M: one-shot, slow at its own 8 x 512, is the fastest with the whole
/// GPU. Here at 256K (16,384 vectors) it ranks third of the pairs at the specs' own shapes, 3.0
/// at the most blocks (132 x 128) and 2.0 at 64 x 256; both two-shots stay at 4.0 and 4.5.
double slowAtItsOwnShape(const TunedVariant& v, uint64_t) {
  if (v.spec == "allreduce_twoshot")
    return v.sync == SyncKind::Sentinel ? 4.0 : 4.5;
  if (v.sync != SyncKind::Sentinel)
    return 9.0;
  if (*v.blocks == 64 && *v.threads == 256)
    return 2.0;
  return *v.blocks == 132 && *v.threads == 128 ? 3.0 : 5.0;
}

TEST(TuneSearch, BalancedShapesReachAPairThatLostAtItsOwnShape) {
  TuneSpace space = fullSpace();
  space.keepPerSize = 1;
  space.vectorBytes.clear();
  space.unrolls.clear();
  ModelMachine machine;
  machine.model = &slowAtItsOwnShape;
  std::vector<TuneMeasurement> all = search(space, machine, nullptr, {256 * K});
  const TuneMeasurement* best = bestAt(all, 256 * K);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->variant.spec, "allreduce_oneshot");
  EXPECT_DOUBLE_EQ(best->us, 2.0);
  // Ranked third at its own shape, one-shot got every block count only because the most blocks
  // (its balanced 132 x 128) put it first.
  const TunedVariant mostBlocks("allreduce_oneshot", SyncKind::Sentinel, 132, 128, 16, 1);
  EXPECT_EQ((machine.measured[{mostBlocks, 256 * K}]), 1);
  EXPECT_FALSE(machine.duplicate);

  // Without balanced shapes, stage 2 refines only two-shot, the best pair at the own shapes.
  space.balancedShapes = false;
  ModelMachine without;
  without.model = &slowAtItsOwnShape;
  EXPECT_DOUBLE_EQ(bestAt(search(space, without, nullptr, {256 * K}), 256 * K)->us, 4.0);
}

TEST(TuneSearch, BalancedThreadsGiveEachThreadAboutOneVector) {
  // 64K of 16-byte vectors is 4096 of them.
  EXPECT_EQ(balancedThreads(64 * K, 132, 16, 1024), 32); // 31.03 a block: one warp
  EXPECT_EQ(balancedThreads(64 * K, 64, 16, 1024), 64);  // exactly 64
  EXPECT_EQ(balancedThreads(64 * K, 32, 16, 1024), 128); // exactly 128
  EXPECT_EQ(balancedThreads(64 * K, 16, 8, 1024), 512);  // 8-byte vectors: twice as many
  EXPECT_EQ(balancedThreads(1 * M, 132, 16, 1024), 512); // 496.5 a block: the next power of two
  EXPECT_EQ(balancedThreads(1 * K, 8, 16, 1024), kMinBalancedThreads); // 8 a block: one warp
  EXPECT_EQ(balancedThreads(64 * M, 1, 16, 1024), 1024); // capped by the largest searched
  EXPECT_EQ(balancedThreads(64 * M, 1, 16, 512), 512);
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
  std::vector<TuneMeasurement> all = search(fullSpace(), machine, &seen);
  ASSERT_EQ(seen.size(), all.size());
  const int done = int(all.size());
  std::vector<std::string> stages;
  std::map<std::string, int> perStage;
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].done, int(i + 1));
    EXPECT_LE(seen[i].done, seen[i].total);
    // Every estimate, stage 3's included, bounds the work from above: the time left only comes
    // down to the truth, never jumps up when stage 3 starts.
    EXPECT_GE(seen[i].total, done) << seen[i].stage;
    if (stages.empty() || stages.back() != seen[i].stage)
      stages.push_back(seen[i].stage);
    ++perStage[seen[i].stage];
  }
  EXPECT_EQ(stages, (std::vector<std::string>{
                        "stage 1: algorithm x sync", "stage 2: balanced shapes", "stage 2: blocks",
                        "stage 2: threads", "stage 2: vector", "stage 2: unroll",
                        "stage 3: cross-check", "stage 3: re-time"}));
  EXPECT_EQ(seen.back().total, done); // the last stage's count is exact
  EXPECT_GT(perStage["stage 3: cross-check"], 0);
  EXPECT_GT(perStage["stage 3: re-time"], 0);
  // When the cross-check starts its own count is exact; what is left over is the re-timing's
  // bound (two per size), which covers what it did.
  const TuneProgress& cross =
      seen[size_t(seen.size() - perStage["stage 3: cross-check"] - perStage["stage 3: re-time"])];
  ASSERT_EQ(cross.stage, "stage 3: cross-check");
  const int retimeBound = cross.total - (cross.done - 1) - perStage["stage 3: cross-check"];
  EXPECT_EQ(retimeBound, 2 * int(sizes().size()));
  EXPECT_GE(retimeBound, perStage["stage 3: re-time"]);
}

/// The stage that made each measurement, from the progress reports (one per measurement).
std::vector<std::string> stagesOf(const std::vector<TuneProgress>& seen) {
  std::vector<std::string> stages;
  for (const TuneProgress& p : seen)
    stages.push_back(p.stage);
  return stages;
}

/// The case: stage 2 refines each size on its own, so a shape it finds at a large size is
/// never timed at a smaller one where it is the fastest too. Here one-shot wants every block it
/// can get, but at its own 8 blocks it loses to two-shot at 512K, so with one pair kept per size
/// only 4M refines one-shot and finds 132 blocks; at 512K, 132 blocks would beat two-shot.
double oneShotWantsBlocks(const TunedVariant& v, uint64_t bytes) {
  const double kb = double(bytes) / 1024;
  if (v.spec == "allreduce_oneshot")
    return 4 + kb * 0.004 * (1 + 8.0 / *v.blocks);
  return 2 + kb * 0.01 * (1 + 0.01 * std::fabs(std::log2(*v.blocks / 16.0)));
}

TEST(TuneSearch, CrossCheckFindsAtASmallSizeTheShapeStageTwoFoundAtALargeOne) {
  TuneSpace space;
  space.specs = {"allreduce_oneshot", "allreduce_twoshot"};
  space.syncs = {SyncKind::Sentinel};
  space.blocks = {8, 16, 32, 64, 132};
  space.keepPerSize = 1;
  const std::vector<uint64_t> at = {64 * K, 512 * K, 4 * M};
  const TunedVariant found("allreduce_oneshot", SyncKind::Sentinel, 132, 512, 16, 1);
  TuningKey key{"GPU", 2, "nvlink-p2p", CollectiveKind::AllReduce, DType::BF16, ReduceOp::Sum};
  auto bestRow = [&](const std::vector<TuningRow>& rows, uint64_t bytes) {
    const TuningRow* best = nullptr;
    for (const TuningRow& row : rows)
      if (row.bytes == bytes && row.best)
        best = &row;
    return best;
  };

  // Without stage 3 (as before it): 4M finds 132 blocks, 512K never times it.
  ModelMachine before;
  before.model = &oneShotWantsBlocks;
  space.finalistsPerSize = 0;
  std::vector<TuneMeasurement> old = search(space, before, nullptr, at);
  EXPECT_EQ(bestAt(old, 4 * M)->variant, found);
  EXPECT_EQ(before.measured.count({found, 512 * K}), 0u);
  EXPECT_EQ(bestAt(old, 512 * K)->variant.spec, "allreduce_twoshot");
  const double oldUs = bestAt(old, 512 * K)->us;

  // With it, 132 blocks is timed at 512K and wins there, in the table too.
  ModelMachine machine;
  machine.model = &oneShotWantsBlocks;
  space.finalistsPerSize = 2;
  space.retimeWithin = 0; // the model has no noise to settle
  std::vector<TuneProgress> seen;
  std::vector<TuneMeasurement> all = search(space, machine, &seen, at);
  ASSERT_EQ(seen.size(), all.size());
  EXPECT_EQ(bestAt(all, 512 * K)->variant, found);
  EXPECT_LT(bestAt(all, 512 * K)->us, oldUs * 0.9);
  EXPECT_DOUBLE_EQ(bestAt(all, 512 * K)->us, oneShotWantsBlocks(found, 512 * K));
  const std::vector<TuningRow> rows = tuningRows(all, at, key);
  const TuningRow* row = bestRow(rows, 512 * K);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->variant, found);
  // ... and it was stage 3 that timed it there, once.
  EXPECT_EQ((machine.measured[{found, 512 * K}]), 1);
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].variant == found && all[i].bytes == 512 * K) {
      EXPECT_EQ(seen[i].stage, "stage 3: cross-check");
    }
  }
  // At 64K two-shot is still the fastest: the cross-check timed one-shot there and kept it out.
  EXPECT_EQ((machine.measured[{found, 64 * K}]), 1);
  EXPECT_EQ(bestAt(all, 64 * K)->variant.spec, "allreduce_twoshot");
}

TEST(TuneSearch, CrossCheckTimesEveryFinalistAtEverySizeAndNoPairTwice) {
  ModelMachine machine;
  TuneSpace space = fullSpace();
  space.retimeWithin = 0;
  std::vector<TuneProgress> seen;
  std::vector<TuneMeasurement> all = search(space, machine, &seen);
  ASSERT_EQ(seen.size(), all.size());
  EXPECT_FALSE(machine.duplicate) << "a (variant, size) was measured twice";
  const std::vector<std::string> stages = stagesOf(seen);
  const size_t first =
      size_t(std::find(stages.begin(), stages.end(), "stage 3: cross-check") - stages.begin());
  ASSERT_LT(first, all.size()) << "no stage 3";
  EXPECT_EQ(std::count(stages.begin() + long(first), stages.end(), "stage 3: cross-check"),
            long(all.size() - first))
      << "nothing after the cross-check without a re-timing";

  // The finalists of stages 1 and 2, and the timings they lacked then: what stage 3 made.
  const std::vector<TuneMeasurement> before(all.begin(), all.begin() + long(first));
  const std::vector<TunedVariant> finalists = tuneFinalists(before, sizes(), 2);
  EXPECT_GT(finalists.size(), 2u);
  EXPECT_LE(finalists.size(), 2 * sizes().size());
  std::set<std::pair<TunedVariant, uint64_t>> lacking;
  for (const TunedVariant& f : finalists)
    for (uint64_t bytes : sizes())
      if (std::none_of(before.begin(), before.end(), [&](const TuneMeasurement& m) {
            return m.variant == f && m.bytes == bytes;
          }))
        lacking.insert({f, bytes});
  std::set<std::pair<TunedVariant, uint64_t>> made;
  for (size_t i = first; i < all.size(); ++i) {
    made.insert({all[i].variant, all[i].bytes});
    // Refused and failed variants never get this far.
    EXPECT_NE(all[i].variant.sync, SyncKind::LL128Atomic);
    EXPECT_NE(all[i].variant.threads, 1024);
  }
  EXPECT_EQ(made, lacking);
  EXPECT_GT(made.size(), 0u);
  // So each size's best is the fastest of every finalist there.
  for (uint64_t bytes : sizes())
    for (const TunedVariant& f : finalists)
      for (const TuneMeasurement& m : all) {
        if (m.variant == f && m.bytes == bytes) {
          EXPECT_LE(bestAt(all, bytes)->us, m.us);
        }
      }
}

TEST(TuneSearch, FinalistsAreTheFastestFiniteDistinctVariantsOfEachSize) {
  auto timed = [](const char* spec, uint64_t bytes, double us, bool refused = false) {
    TuneMeasurement m;
    m.variant = TunedVariant(spec);
    m.bytes = bytes;
    m.us = us;
    m.refused = refused;
    return m;
  };
  const std::vector<TuneMeasurement> all = {
      timed("a", 1 * K, 1.0),      timed("b", 1 * K, 1.1),
      timed("c", 1 * K, INFINITY), timed("d", 1 * K, INFINITY, true),
      timed("a", 1 * K, 1.05), // a twice: one finalist
      timed("e", 2 * K, INFINITY), timed("b", 2 * K, 2.0),
      timed("c", 2 * K, 1.5)};
  const std::vector<uint64_t> at = {1 * K, 2 * K};
  auto specs = [&](int perSize) {
    std::vector<std::string> out;
    for (const TunedVariant& v : tuneFinalists(all, at, perSize))
      out.push_back(v.spec);
    return out;
  };
  // c failed at 1K but is the fastest at 2K; d (refused) and e (failed) never make it.
  EXPECT_EQ(specs(2), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(specs(1), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(specs(9), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(specs(0).empty());
}

TEST(TuneSearch, ReTimingSettlesACloseCallThatNoiseDecided) {
  // At 1K one-shot sentinel with 1 block is the fastest and 2 blocks 0.3% behind; at 64M the
  // first two are far apart. The first timing of 1 block at 1K comes out 0.5% slow.
  TuneSpace space;
  space.specs = {"allreduce_oneshot", "allreduce_twoshot"};
  space.syncs = {SyncKind::Barrier, SyncKind::Sentinel};
  space.blocks = {1, 2, 4};
  const std::vector<uint64_t> at = {1 * K, 64 * M};
  const TunedVariant fastest("allreduce_oneshot", SyncKind::Sentinel, 1, 512, 16, 1);
  const TunedVariant second("allreduce_oneshot", SyncKind::Sentinel, 2, 512, 16, 1);
  ASSERT_LT(ModelMachine::time(fastest, 1 * K), ModelMachine::time(second, 1 * K));
  ASSERT_LT(ModelMachine::time(second, 1 * K), ModelMachine::time(fastest, 1 * K) * 1.005);

  // Without the re-timing the noise picks the second.
  ModelMachine noisy;
  noisy.slowFirst = {{fastest, 1 * K}};
  space.retimeWithin = 0;
  EXPECT_EQ(bestAt(search(space, noisy, nullptr, at), 1 * K)->variant, second);

  ModelMachine machine;
  machine.slowFirst = {{fastest, 1 * K}};
  space.retimeWithin = 0.03;
  std::vector<TuneProgress> seen;
  std::vector<TuneMeasurement> all = search(space, machine, &seen, at);
  ASSERT_EQ(seen.size(), all.size());
  EXPECT_EQ(bestAt(all, 1 * K)->variant, fastest);
  EXPECT_DOUBLE_EQ(bestAt(all, 1 * K)->us, ModelMachine::time(fastest, 1 * K));
  // The re-timing timed exactly the first two at 1K once more; 64M, where they are more than 3%
  // apart, it left alone.
  const std::vector<std::string> stages = stagesOf(seen);
  std::set<std::pair<TunedVariant, uint64_t>> retimed;
  for (size_t i = 0; i < all.size(); ++i)
    if (stages[i] == "stage 3: re-time")
      retimed.insert({all[i].variant, all[i].bytes});
  EXPECT_EQ(retimed,
            (std::set<std::pair<TunedVariant, uint64_t>>{{fastest, 1 * K}, {second, 1 * K}}));
  EXPECT_EQ(std::count(stages.begin(), stages.end(), "stage 3: re-time"), 2);
  for (const auto& [pair, times] : machine.measured)
    EXPECT_EQ(times, retimed.count(pair) ? 2 : 1) << pair.first.text() << " at " << pair.second;
  std::vector<TuneMeasurement> first;
  for (size_t i = 0; i < all.size(); ++i)
    if (stages[i] != "stage 3: re-time")
      first.push_back(all[i]);
  const TuneMeasurement* big = bestAt(first, 64 * M);
  for (const TuneMeasurement& m : first) {
    if (m.bytes == 64 * M && m.variant != big->variant && std::isfinite(m.us)) {
      EXPECT_GT(m.us, big->us * 1.03) << m.variant.text();
    }
  }
  // The table has one row per (variant, size) and marks the re-timed fastest best.
  TuningKey key{"GPU", 2, "nvlink-p2p", CollectiveKind::AllReduce, DType::BF16, ReduceOp::Sum};
  int rowsOfFastest = 0;
  for (const TuningRow& row : tuningRows(all, at, key))
    if (row.variant == fastest && row.bytes == 1 * K) {
      ++rowsOfFastest;
      EXPECT_TRUE(row.best);
      EXPECT_DOUBLE_EQ(row.us, ModelMachine::time(fastest, 1 * K));
    }
  EXPECT_EQ(rowsOfFastest, 1);
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
  // Every (variant, size) timed is a row, but for the refused variant (never run): it is named
  // once instead. One timed twice (re-timed) is one row, with its faster time.
  std::map<std::pair<TunedVariant, uint64_t>, double> fastest;
  for (const TuneMeasurement& m : all)
    if (!m.refused) {
      auto [it, inserted] = fastest.try_emplace({m.variant, m.bytes}, m.us);
      it->second = std::min(it->second, m.us);
    }
  EXPECT_LT(fastest.size(), all.size() - 2 * sizes().size()); // some were re-timed
  EXPECT_EQ(rows.size(), fastest.size());
  for (const TuningRow& row : rows)
    EXPECT_EQ(row.us, (fastest[{row.variant, row.bytes}])) << row.variant.text();
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
  auto plan = readBackPlan(table);
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

/// Rows as tuningRows makes them for `variant` measured at `at`, under `key`.
std::vector<TuningRow> sweepRows(const TuningKey& key, const std::string& variant,
                                 const std::vector<uint64_t>& at) {
  std::vector<TuneMeasurement> measured;
  for (uint64_t bytes : at) {
    TuneMeasurement m;
    m.variant = TunedVariant(variant, SyncKind::Sentinel, 8, 512, 16, 1);
    m.bytes = bytes;
    m.us = 1.0;
    measured.push_back(m);
  }
  return tuningRows(measured, at, key);
}

/// (from, to, spec) of every row of the table, in order.
std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges(const TuningTable& table) {
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> out;
  for (const TuningRow& row : table.rows)
    out.emplace_back(row.fromBytes, row.toBytes, row.variant.spec);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TuneSearch, ASweepTunedInPiecesKeepsEveryPieceWithoutOverlaps) {
  const TuningKey key{"GPU",        2, "nvlink-p2p", CollectiveKind::AllReduce, DType::BF16,
                      ReduceOp::Sum};
  TuningTable table;
  replaceKeyRows(table, key, sweepRows(key, "small", {1 * K, 4 * K, 16 * K}));
  // Above the first piece: the first piece's last range now ends where the second begins.
  replaceKeyRows(table, key, sweepRows(key, "large", {1 * M, 4 * M}));
  using Range = std::tuple<uint64_t, uint64_t, std::string>;
  EXPECT_EQ(ranges(table), (std::vector<Range>{{0, 4 * K, "small"},
                                               {4 * K, 16 * K, "small"},
                                               {16 * K, 1 * M, "small"},
                                               {1 * M, 4 * M, "large"},
                                               {4 * M, kNoUpperBound, "large"}}));
  // In the middle, over some sizes of each piece: those are replaced, the others stay.
  replaceKeyRows(table, key, sweepRows(key, "middle", {16 * K, 64 * K, 256 * K, 1 * M}));
  EXPECT_EQ(ranges(table), (std::vector<Range>{{0, 4 * K, "small"},
                                               {4 * K, 16 * K, "small"},
                                               {16 * K, 64 * K, "middle"},
                                               {64 * K, 256 * K, "middle"},
                                               {256 * K, 1 * M, "middle"},
                                               {1 * M, 4 * M, "middle"},
                                               {4 * M, kNoUpperBound, "large"}}));
  // Below everything: the new piece starts at 0 and hands over at the smallest size kept.
  replaceKeyRows(table, key, sweepRows(key, "tiny", {256, 1 * K}));
  EXPECT_EQ(std::get<2>(ranges(table)[0]), "tiny");
  EXPECT_EQ(ranges(table)[1], (Range{1 * K, 4 * K, "tiny"}));
  EXPECT_EQ(ranges(table)[2], (Range{4 * K, 16 * K, "small"}));

  // The table it writes reads back (the reader refuses overlapping ranges) and dispatches each
  // size to its piece.
  auto plan = readBackPlan(table);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->variants[plan->variantFor(512)].spec, "tiny");
  EXPECT_EQ(plan->variants[plan->variantFor(8 * K)].spec, "small");
  EXPECT_EQ(plan->variants[plan->variantFor(100 * K)].spec, "middle");
  EXPECT_EQ(plan->variants[plan->variantFor(64 * M)].spec, "large");

  // A tune that measured nothing (every variant refused) keeps what the table had.
  const auto before = ranges(table);
  replaceKeyRows(table, key, {});
  EXPECT_EQ(ranges(table), before);

  // The whole span again: every row of the key replaced, as a fresh tune of it.
  replaceKeyRows(table, key, sweepRows(key, "whole", {256, 64 * M}));
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(ranges(table),
            (std::vector<Range>{{0, 64 * M, "whole"}, {64 * M, kNoUpperBound, "whole"}}));
}

// Whole stores, searched at every thread count: a machine on which they pay for large messages
// only at a thread count that is not the best without them (as at 64M on 2 x H200: 1024 threads,
// not 512; this model's 1024 threads fail, so 256 here), and cost a little for small ones, gets
// each where it is faster.
TEST(TuneSearch, WholeStoresArePickedPerSize) {
  ModelMachine machine;
  machine.model = [](const TunedVariant& v, uint64_t bytes) {
    const double t = ModelMachine::time(v, bytes);
    if (v.wholeStores.value_or(0) == 0)
      return t;
    return bytes >= M && *v.threads == 256 ? t * 0.8 : t + 0.05;
  };
  TuneSpace space = fullSpace();
  space.wholeStores = {0, 1};
  space.retimeWithin = 0; // the re-timing times a pair twice on purpose
  auto measurements = search(space, machine);
  EXPECT_FALSE(machine.duplicate);
  const TuneMeasurement* small = bestAt(measurements, 1 * K);
  const TuneMeasurement* large = bestAt(measurements, 64 * M);
  ASSERT_TRUE(small && large);
  EXPECT_NE(small->variant.wholeStores, 1) << small->variant.text();
  EXPECT_EQ(large->variant.wholeStores, 1) << large->variant.text();
  EXPECT_EQ(large->variant.threads, 256) << large->variant.text();
  EXPECT_NE(large->variant.text().find(" w1"), std::string::npos);
}

} // namespace
} // namespace collc
