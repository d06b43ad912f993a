#include "runtime/TuneSearch.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>

namespace collc {

namespace {

/// A knob of stage 2: its name, its values, and where it lives in a variant.
struct Knob {
  const char* name;
  const std::vector<int>* values;
  std::optional<int> TunedVariant::*field;
};

/// The (spec, sync) pair a variant belongs to: stage 2 improves each pair on its own.
std::pair<std::string, std::optional<SyncKind>> pairOf(const TunedVariant& variant) {
  return {variant.spec, variant.sync};
}

class Search {
public:
  Search(const std::vector<uint64_t>& sizes, const TuneMeasureFn& measure,
         const TuneProgressFn& progress)
      : sizes_(sizes), measure_(measure), progress_(progress) {}

  /// Measures `variant` at `sizes`, records everything, and returns nothing: results() has it.
  void run(const TunedVariant& variant, const std::vector<uint64_t>& sizes) {
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
  std::vector<TuneMeasurement> results_;
  std::set<std::pair<TunedVariant, uint64_t>> tried_;
  std::string stage_;
  int done_ = 0, total_ = 0;
};

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

std::vector<TuneMeasurement> runTuneSearch(const TuneSpace& space,
                                           const std::vector<uint64_t>& sizes,
                                           const TuneMeasureFn& measure,
                                           const TuneProgressFn& progress) {
  Search search(sizes, measure, progress);
  const Knob knobs[] = {{"blocks", &space.blocks, &TunedVariant::blocks},
                        {"threads", &space.threads, &TunedVariant::threads},
                        {"vector", &space.vectorBytes, &TunedVariant::vectorBytes},
                        {"unroll", &space.unrolls, &TunedVariant::unroll}};
  const int keep = std::max(0, space.keepPerSize);
  // Stage 2's size when every knob's values but the base are new: the estimate for knobs not
  // planned yet.
  auto knobEstimate = [&](size_t from) {
    int values = 0;
    for (size_t k = from; k < std::size(knobs); ++k)
      values += std::max<int>(0, int(knobs[k].values->size()) - 1);
    return int(sizes.size()) * keep * values;
  };

  const int stage1 = int(space.specs.size() * space.syncs.size() * sizes.size());
  search.setStage("stage 1: algorithm x sync", stage1 + knobEstimate(0));
  for (const std::string& spec : space.specs)
    for (const std::optional<SyncKind>& sync : space.syncs)
      search.run(TunedVariant{spec, sync}, sizes);
  if (keep == 0)
    return search.take();

  for (size_t k = 0; k < std::size(knobs); ++k) {
    const Knob& knob = *(knobs + k);
    if (knob.values->empty())
      continue;
    // Per size, the `keep` best pairs so far, each at its best variant so far.
    BestPerPair best = bestPerPair(search.results());
    std::map<TunedVariant, std::vector<uint64_t>> plan; // variant -> sizes to measure it at
    for (uint64_t bytes : sizes) {
      std::vector<const TuneMeasurement*> pairs;
      for (const auto& [where, m] : best)
        if (where.first == bytes)
          pairs.push_back(m);
      std::sort(pairs.begin(), pairs.end(),
                [](const TuneMeasurement* a, const TuneMeasurement* b) { return a->us < b->us; });
      if (pairs.size() > size_t(keep))
        pairs.resize(size_t(keep));
      for (const TuneMeasurement* base : pairs)
        for (int value : *knob.values) {
          TunedVariant candidate = base->variant;
          candidate.*knob.field = value;
          if (!search.tried(candidate, bytes))
            plan[candidate].push_back(bytes);
        }
    }
    int planned = 0;
    for (const auto& [variant, at] : plan)
      planned += int(at.size());
    search.setStage(std::string("stage 2: ") + knob.name,
                    search.done() + planned + knobEstimate(k + 1));
    for (auto& [variant, at] : plan) {
      std::sort(at.begin(), at.end());
      search.run(variant, at);
    }
  }
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
  table.rows.erase(std::remove_if(table.rows.begin(), table.rows.end(),
                                  [&](const TuningRow& row) { return row.key.sameAs(key); }),
                   table.rows.end());
  table.rows.insert(table.rows.end(), rows.begin(), rows.end());
}

} // namespace collc
