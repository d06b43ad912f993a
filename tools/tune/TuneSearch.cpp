#include "tools/tune/TuneSearch.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <set>

namespace collc {

namespace {

/// A knob of stage 2: its name, its values, and where it lives in a variant.
struct Knob {
  const char* name;
  const std::vector<int>* values;
  std::optional<int> TunedVariant::*field;
  /// A knob whose best value moves with this one's: each value is tried at each of its values
  /// too (null: none).
  const std::vector<int>* crossValues = nullptr;
  std::optional<int> TunedVariant::*crossField = nullptr;
};

/// The (spec, sync) pair a variant belongs to: stage 2 improves each pair on its own.
std::pair<std::string, std::optional<SyncKind>> pairOf(const TunedVariant& variant) {
  return {variant.spec, variant.sync};
}

class Search {
public:
  Search(const std::vector<uint64_t>& sizes, const TuneMeasureFn& measure,
         const TuneProgressFn& progress, const TuneStopFn& stop)
      : sizes_(sizes), measure_(measure), progress_(progress), stop_(stop) {}

  /// Measures `variant` at `sizes`, records everything, and returns nothing: results() has it.
  /// Once stopped, measures nothing: the stages that follow plan from what there is and run
  /// nothing, so the search returns what it measured.
  void run(const TunedVariant& variant, const std::vector<uint64_t>& sizes) {
    if (stopped_ || (stop_ && stop_())) {
      stopped_ = true;
      return;
    }
    std::vector<TuneMeasurement> got = measure_(variant, sizes, [&](uint64_t bytes) {
      ++done_;
      if (progress_)
        progress_({done_, std::max(total_, done_), stage_,
                   variant.text() + " at " + formatTableBytes(bytes)});
    });
    for (TuneMeasurement& m : got) {
      tried_.insert({variant, m.bytes});
      tried_.insert({m.variant, m.bytes});
      results_.push_back(std::move(m));
    }
  }

  bool tried(const TunedVariant& variant, uint64_t bytes) const {
    return tried_.count({variant, bytes}) != 0;
  }
  void setStage(std::string stage, int total) {
    stage_ = std::move(stage);
    total_ = total;
  }
  int done() const { return done_; }
  const std::vector<TuneMeasurement>& results() const { return results_; }
  std::vector<TuneMeasurement> take() { return std::move(results_); }

private:
  const std::vector<uint64_t>& sizes_;
  const TuneMeasureFn& measure_;
  const TuneProgressFn& progress_;
  const TuneStopFn& stop_;
  bool stopped_ = false;
  std::vector<TuneMeasurement> results_;
  std::set<std::pair<TunedVariant, uint64_t>> tried_;
  std::string stage_;
  int done_ = 0, total_ = 0;
};

/// The `count` fastest distinct variants with a finite time at `bytes`, fastest first; a variant
/// timed twice there counts with its faster time.
std::vector<const TuneMeasurement*> fastestAt(const std::vector<TuneMeasurement>& results,
                                              uint64_t bytes, size_t count) {
  std::map<TunedVariant, const TuneMeasurement*> fastest;
  for (const TuneMeasurement& m : results) {
    if (m.bytes != bytes || !std::isfinite(m.us))
      continue;
    const TuneMeasurement*& slot = fastest[m.variant];
    if (!slot || m.us < slot->us)
      slot = &m;
  }
  std::vector<const TuneMeasurement*> order;
  for (const auto& [variant, m] : fastest)
    order.push_back(m);
  // Ties go to the variant measured first, so that the order never depends on the map's.
  std::sort(order.begin(), order.end(), [](const TuneMeasurement* a, const TuneMeasurement* b) {
    return a->us < b->us || (a->us == b->us && a < b);
  });
  if (order.size() > count)
    order.resize(count);
  return order;
}

/// The best finite measurement of each (size, pair): the base that stage 2 varies.
using BestPerPair = std::map<std::pair<uint64_t, std::pair<std::string, std::optional<SyncKind>>>,
                             const TuneMeasurement*>;

BestPerPair bestPerPair(const std::vector<TuneMeasurement>& results) {
  BestPerPair best;
  for (const TuneMeasurement& m : results) {
    if (!std::isfinite(m.us))
      continue;
    const TuneMeasurement*& slot = best[{m.bytes, pairOf(m.variant)}];
    if (!slot || m.us < slot->us)
      slot = &m;
  }
  return best;
}

} // namespace

int balancedThreads(uint64_t bytes, int blocks, int vectorBytes, int maxThreads) {
  const uint64_t vectors = (bytes + uint64_t(vectorBytes) - 1) / uint64_t(vectorBytes);
  const uint64_t perBlock = (vectors + uint64_t(blocks) - 1) / uint64_t(blocks);
  int threads = kMinBalancedThreads;
  while (uint64_t(threads) < perBlock && threads < maxThreads)
    threads *= 2;
  return std::min(threads, maxThreads);
}

BalancedShapesBound balancedShapesBound(const TuneSpace& space, int sizes) {
  BalancedShapesBound bound;
  if (space.keepPerSize <= 0 || !space.balancedShapes || space.blocks.empty() ||
      space.threads.empty())
    return bound;
  const int pairs = int(space.specs.size() * space.syncs.size());
  bound.mostBlocks = sizes * pairs;
  bound.everyBlockCount =
      sizes * std::max(space.keepPerSize, space.balancedPairsPerSize) * int(space.blocks.size());
  return bound;
}

std::vector<TunedVariant> tuneFinalists(const std::vector<TuneMeasurement>& measurements,
                                        const std::vector<uint64_t>& sizes, int perSize) {
  std::vector<TunedVariant> finalists;
  for (uint64_t bytes : sizes)
    for (const TuneMeasurement* m : fastestAt(measurements, bytes, size_t(std::max(0, perSize))))
      if (std::find(finalists.begin(), finalists.end(), m->variant) == finalists.end())
        finalists.push_back(m->variant);
  return finalists;
}

std::vector<TuneMeasurement> runTuneSearch(const TuneSpace& space,
                                           const std::vector<uint64_t>& sizes,
                                           const TuneMeasureFn& measure,
                                           const TuneProgressFn& progress, const TuneStopFn& stop) {
  Search search(sizes, measure, progress, stop);
  const Knob knobs[] = {{"blocks", &space.blocks, &TunedVariant::blocks},
                        {"threads", &space.threads, &TunedVariant::threads},
                        {"vector", &space.vectorBytes, &TunedVariant::vectorBytes},
                        {"unroll", &space.unrolls, &TunedVariant::unroll},
                        // Whole stores change what a thread keeps in flight, so the best thread
                        // count moves with them: on 2 x H200 two-shot at 64M was fastest at 512
                        // threads without and at 1024 with (206 against 216.6 us; docs/tuning.md),
                        // which a step from the best without never reaches.
                        {"whole_stores", &space.wholeStores, &TunedVariant::wholeStores,
                         &space.threads, &TunedVariant::threads}};
  const int keep = std::max(0, space.keepPerSize);
  const int finalists = keep == 0 ? 0 : std::max(0, space.finalistsPerSize);
  const bool retime = finalists > 0 && space.retimeWithin > 0;
  const int n = int(sizes.size());
  // Stage 2's size when every knob's values but the base are new: the estimate for knobs not
  // planned yet.
  auto knobEstimate = [&](size_t from) {
    int values = 0;
    for (size_t k = from; k < std::size(knobs); ++k) {
      const size_t cross =
          knobs[k].crossValues ? std::max<size_t>(1, knobs[k].crossValues->size()) : 1;
      values += std::max<int>(0, int(knobs[k].values->size() * cross) - 1);
    }
    return n * keep * values;
  };
  // Stage 3's size before stage 2 has picked the finalists: each size's finalists new variants
  // timed only there, so each is timed at every other size, and every size re-timed. An upper
  // bound, like knobEstimate, so that the time left only ever comes down to the truth.
  const int retimeEstimate = retime ? 2 * n : 0;
  const int stage3Estimate = finalists * n * std::max(0, n - 1) + retimeEstimate;

  const BalancedShapesBound balancedBound = balancedShapesBound(space, n);
  const int stage1 = int(space.specs.size() * space.syncs.size() * sizes.size());
  search.setStage("stage 1: algorithm x sync",
                  stage1 + balancedBound.total() + knobEstimate(0) + stage3Estimate);
  for (const std::string& spec : space.specs)
    for (const std::optional<SyncKind>& sync : space.syncs)
      search.run(TunedVariant{spec, sync}, sizes);
  if (keep == 0)
    return search.take();

  // Stage 2's steps share one plan: per size, the `pairsPerSize` best pairs so far, each at its
  // best variant so far, and the candidates a step makes of that base at that size.
  auto runStep = [&](const std::string& stage, int pairsPerSize, int estimateAfter,
                     const std::function<std::vector<TunedVariant>(const TunedVariant& base,
                                                                   uint64_t bytes)>& candidates) {
    BestPerPair best = bestPerPair(search.results());
    std::map<TunedVariant, std::vector<uint64_t>> plan; // variant -> sizes to measure it at
    for (uint64_t bytes : sizes) {
      std::vector<const TuneMeasurement*> pairs;
      for (const auto& [where, m] : best)
        if (where.first == bytes)
          pairs.push_back(m);
      std::sort(pairs.begin(), pairs.end(),
                [](const TuneMeasurement* a, const TuneMeasurement* b) { return a->us < b->us; });
      if (pairs.size() > size_t(pairsPerSize))
        pairs.resize(size_t(pairsPerSize));
      // Pairs differ in spec or sync, and a step's candidates of one base differ in the knob it
      // moves, so no candidate comes twice at a size.
      for (const TuneMeasurement* base : pairs)
        for (const TunedVariant& candidate : candidates(base->variant, bytes))
          if (!search.tried(candidate, bytes))
            plan[candidate].push_back(bytes);
    }
    int planned = 0;
    for (const auto& [variant, at] : plan)
      planned += int(at.size());
    search.setStage(stage, search.done() + planned + estimateAfter);
    for (auto& [variant, at] : plan) {
      std::sort(at.begin(), at.end());
      search.run(variant, at);
    }
  };

  // Balanced shapes first: blocks and threads interact (a message's vectors can be spread over
  // few blocks of many threads or many blocks of few), so one knob at a time from the spec's own
  // shape can stall where both must move at once: at 64K on 2 x H200, 132 x 32 beat every shape
  // that one move from 8 x 512 reaches. A balanced shape gives each thread about one vector at
  // that size.
  const int maxThreads =
      space.threads.empty() ? 0 : *std::max_element(space.threads.begin(), space.threads.end());
  auto balancedAt = [&](const TunedVariant& base, uint64_t bytes, int blocks) {
    TunedVariant candidate = base;
    candidate.blocks = blocks;
    candidate.threads = balancedThreads(bytes, blocks, base.vectorBytes.value_or(16), maxThreads);
    return candidate;
  };
  if (balancedBound.total() > 0) {
    // Every pair at the most blocks first: a pair slow at its own shape may be the fastest with
    // the whole GPU (one-shot at 1M: 8 x 512 slow, 132 x 512 the best), and only a timing there
    // can rank it among the pairs that get every block count.
    const int most = *std::max_element(space.blocks.begin(), space.blocks.end());
    runStep("stage 2: balanced shapes", int(space.specs.size() * space.syncs.size()),
            balancedBound.everyBlockCount + knobEstimate(0) + stage3Estimate,
            [&](const TunedVariant& base, uint64_t bytes) {
              return std::vector<TunedVariant>{balancedAt(base, bytes, most)};
            });
    runStep("stage 2: balanced shapes", std::max(keep, space.balancedPairsPerSize),
            knobEstimate(0) + stage3Estimate, [&](const TunedVariant& base, uint64_t bytes) {
              std::vector<TunedVariant> out;
              for (int blocks : space.blocks)
                out.push_back(balancedAt(base, bytes, blocks));
              return out;
            });
  }
  for (size_t k = 0; k < std::size(knobs); ++k) {
    const Knob& knob = *(knobs + k);
    if (knob.values->empty())
      continue;
    runStep(std::string("stage 2: ") + knob.name, keep, knobEstimate(k + 1) + stage3Estimate,
            [&](const TunedVariant& base, uint64_t) {
              std::vector<TunedVariant> out;
              for (int value : *knob.values) {
                TunedVariant candidate = base;
                candidate.*knob.field = value;
                out.push_back(candidate);
                if (knob.crossValues)
                  for (int crossValue : *knob.crossValues) {
                    candidate.*knob.crossField = crossValue;
                    if (std::find(out.begin(), out.end(), candidate) == out.end())
                      out.push_back(candidate);
                  }
              }
              return out;
            });
  }
  if (finalists == 0)
    return search.take();

  // Stage 3, cross-check: every finalist at every size it has no timing at yet. Only finite
  // timings make finalists, so a variant refused or failed everywhere is never one; one that
  // failed at some sizes is not timed there again (that failure is its timing).
  std::vector<std::pair<TunedVariant, std::vector<uint64_t>>> crossPlan;
  int crossPlanned = 0;
  for (const TunedVariant& variant : tuneFinalists(search.results(), sizes, finalists)) {
    std::vector<uint64_t> at;
    for (uint64_t bytes : sizes)
      if (!search.tried(variant, bytes))
        at.push_back(bytes);
    crossPlanned += int(at.size());
    if (!at.empty())
      crossPlan.emplace_back(variant, std::move(at));
  }
  search.setStage("stage 3: cross-check", search.done() + crossPlanned + retimeEstimate);
  for (const auto& [variant, at] : crossPlan)
    search.run(variant, at);
  if (!retime)
    return search.take();

  // Stage 3, re-time. One timing can be 1-3% off from the next run's, so where a size's two
  // fastest are that close, which one the table marks best is a coin toss. Timing both once
  // more there and keeping the faster timing of each (what tuningRows and bestAt do with a
  // variant timed twice) costs at most two timings a size and settles the close calls that
  // noise decides. The faster, not the mean: noise on a GPU mostly slows a run down (clocks,
  // a late rank), so the faster timing is nearer to what the variant does; a mean would keep
  // half of a slow outlier. The third and later stay at one timing: min of two only lowers
  // the top two, so none of them can overtake.
  std::map<TunedVariant, std::vector<uint64_t>> retimePlan;
  int retimePlanned = 0;
  for (uint64_t bytes : sizes) {
    std::vector<const TuneMeasurement*> top = fastestAt(search.results(), bytes, 2);
    if (top.size() == 2 && top[1]->us <= top[0]->us * (1 + space.retimeWithin)) {
      retimePlan[top[0]->variant].push_back(bytes);
      retimePlan[top[1]->variant].push_back(bytes);
      retimePlanned += 2;
    }
  }
  search.setStage("stage 3: re-time", search.done() + retimePlanned);
  for (const auto& [variant, at] : retimePlan)
    search.run(variant, at);
  return search.take();
}

const TuneMeasurement* bestAt(const std::vector<TuneMeasurement>& measurements, uint64_t bytes) {
  const TuneMeasurement* best = nullptr;
  for (const TuneMeasurement& m : measurements)
    if (m.bytes == bytes && std::isfinite(m.us) && (!best || m.us < best->us))
      best = &m;
  return best;
}

std::vector<TuningRow> tuningRows(const std::vector<TuneMeasurement>& measurements,
                                  const std::vector<uint64_t>& sizes, const TuningKey& key) {
  std::vector<TuningRow> rows;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t bytes = sizes[i];
    // A variant measured twice at one size (asked for two ways) is one row: its faster time.
    std::map<TunedVariant, const TuneMeasurement*> fastest;
    std::vector<const TuneMeasurement*> order;
    for (const TuneMeasurement& m : measurements) {
      if (m.bytes != bytes || m.refused)
        continue;
      auto [it, inserted] = fastest.try_emplace(m.variant, &m);
      if (inserted)
        order.push_back(&m);
      else if (m.us < it->second->us)
        it->second = &m;
    }
    const TuneMeasurement* best = bestAt(measurements, bytes);
    std::vector<TuningRow> here;
    for (const TuneMeasurement* first : order) {
      const TuneMeasurement& m = *fastest[first->variant];
      TuningRow row;
      row.key = key;
      row.fromBytes = i == 0 ? 0 : bytes;
      row.toBytes = i + 1 < sizes.size() ? sizes[i + 1] : kNoUpperBound;
      row.bytes = bytes;
      row.variant = m.variant;
      row.us = m.us;
      row.best = best && m.variant == best->variant;
      row.note = m.note;
      here.push_back(std::move(row));
    }
    std::stable_sort(here.begin(), here.end(),
                     [](const TuningRow& a, const TuningRow& b) { return a.us < b.us; });
    rows.insert(rows.end(), here.begin(), here.end());
  }
  return rows;
}

std::vector<std::string> refusedVariants(const std::vector<TuneMeasurement>& measurements) {
  std::vector<std::string> lines;
  std::set<TunedVariant> seen;
  for (const TuneMeasurement& m : measurements)
    if (m.refused && seen.insert(m.variant).second)
      lines.push_back(m.variant.text() + ": " + m.note);
  return lines;
}

void replaceKeyRows(TuningTable& table, const TuningKey& key, std::vector<TuningRow> rows) {
  // A tune that measured nothing (every variant refused) has nothing to replace them with.
  if (rows.empty())
    return;
  // The sizes the new rows measured; the key's rows measured outside them stay.
  uint64_t lowest = kNoUpperBound, highest = 0;
  for (const TuningRow& row : rows) {
    lowest = std::min(lowest, row.bytes);
    highest = std::max(highest, row.bytes);
  }
  auto replaced = [&](const TuningRow& row) {
    return row.key.sameAs(key) && row.bytes >= lowest && row.bytes <= highest;
  };
  table.rows.erase(std::remove_if(table.rows.begin(), table.rows.end(), replaced),
                   table.rows.end());
  bool keptBelow = false;
  uint64_t keptAbove = kNoUpperBound; // the smallest size of the key measured above the new ones
  for (const TuningRow& row : table.rows)
    if (row.key.sameAs(key)) {
      keptBelow |= row.bytes < lowest;
      if (row.bytes > highest)
        keptAbove = std::min(keptAbove, row.bytes);
    }
  // Where the kept rows meet the new ones, the new sizes take over at their own smallest size
  // and hand over at the kept rows' smallest size above them: no two ranges overlap.
  for (TuningRow& row : table.rows) {
    if (!row.key.sameAs(key))
      continue;
    if (row.bytes < lowest)
      row.toBytes = std::min(row.toBytes, lowest);
    else
      row.fromBytes = std::max(row.fromBytes, keptAbove);
  }
  for (TuningRow& row : rows) {
    if (keptBelow)
      row.fromBytes = std::max(row.fromBytes, lowest);
    row.toBytes = std::min(row.toBytes, keptAbove);
  }
  table.rows.insert(table.rows.end(), rows.begin(), rows.end());
}

} // namespace collc
