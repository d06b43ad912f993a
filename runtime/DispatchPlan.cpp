#include "runtime/DispatchPlan.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

namespace collc {

namespace {

/// Builds a plan from (range, variant) pairs sorted by fromBytes and disjoint, filling the gaps
/// and both ends, and dropping what lies above maxBytes.
DispatchPlan planFromRanges(std::vector<std::pair<DispatchRange, TunedVariant>> picked,
                            uint64_t maxBytes) {
  DispatchPlan plan;
  auto indexOf = [&](const TunedVariant& variant) {
    auto it = std::find(plan.variants.begin(), plan.variants.end(), variant);
    if (it != plan.variants.end())
      return size_t(it - plan.variants.begin());
    plan.variants.push_back(variant);
    return plan.variants.size() - 1;
  };
  // Ranges wholly above the largest call are never chosen: their variants need not be loaded.
  // The first range always stays, so that a plan is never empty.
  while (picked.size() > 1 && picked.back().first.fromBytes > maxBytes)
    picked.pop_back();
  for (size_t i = 0; i < picked.size(); ++i) {
    DispatchRange range = picked[i].first;
    range.variant = indexOf(picked[i].second);
    // The first range reaches down to 0; a gap belongs to the range below it; the last range
    // reaches up to no end.
    if (i == 0)
      range.fromBytes = 0;
    if (i + 1 < picked.size())
      range.toBytes = picked[i + 1].first.fromBytes;
    else
      range.toBytes = kNoUpperBound;
    if (!plan.ranges.empty() && plan.ranges.back().variant == range.variant)
      plan.ranges.back().toBytes = range.toBytes; // merge neighbours that run the same variant
    else
      plan.ranges.push_back(range);
  }
  return plan;
}

/// Whether `row` is one of the rows `query` reads, given the key chosen for it.
bool readsRow(const TuningRow& row, const TuningKey& chosen, const DispatchQuery& query) {
  return row.key.sameAs(chosen) && (query.spec.empty() || row.variant.spec == query.spec);
}

/// The most specific key that matches `query` (with its spec, if any); the first in the file
/// among equals. Null if none.
const TuningKey* chosenKey(const TuningTable& table, const DispatchQuery& query) {
  const TuningKey* chosen = nullptr;
  for (const TuningRow& row : table.rows) {
    if (!matches(row.key, query.key))
      continue;
    if (!query.spec.empty() && row.variant.spec != query.spec)
      continue;
    if (!chosen || row.key.specificity() > chosen->specificity())
      chosen = &row.key;
  }
  return chosen;
}

std::string keyText(const TuningQuery& key) {
  return fmt::format("{} ranks={} {} {} {} {}", key.gpu, key.nranks, key.topology,
                     name(key.collective), name(key.dtype), name(key.op));
}

} // namespace

size_t DispatchPlan::variantFor(uint64_t bytes) const {
  // The last range whose fromBytes <= bytes; ranges are contiguous from 0.
  auto it = std::upper_bound(ranges.begin(), ranges.end(), bytes,
                             [](uint64_t b, const DispatchRange& r) { return b < r.fromBytes; });
  return it == ranges.begin() ? ranges.front().variant : std::prev(it)->variant;
}

DispatchPlan defaultDispatchPlan(const DispatchQuery& query) {
  if (!query.spec.empty()) {
    DispatchPlan plan =
        planFromRanges({{DispatchRange{}, TunedVariant{query.spec}}}, kNoUpperBound);
    plan.source = "built-in default rule: " + query.spec + " with its own sync and launch";
    return plan;
  }
  // Measured on 2 x H200 (docs/tuning.md gives the table and the figures): up to 1 MiB the
  // latency is the kernel boundary and one flight, and many small blocks (one per multiprocessor,
  // 128 threads) start the data soonest; from 1 MiB the bytes need 512-thread blocks; from 4 MiB
  // two-shot's halved traffic wins; and from 16 MiB the barrier's one flag per block beats the
  // sentinel's per-element polling. From 1 MiB whole stores pay (8% at 1M and 4M), and from
  // 16 MiB with 1024 threads (206 against 217 us at 64M); below 1 MiB they cost up to 3%. Every
  // block must be resident, so no more blocks than multiprocessors; where the GPU is not known,
  // 32.
  const int blocks = query.multiprocessors > 0 ? std::min(132, query.multiprocessors) : 32;
  auto wholeStores = [](TunedVariant variant) {
    variant.wholeStores = 1;
    return variant;
  };
  const TunedVariant oneshotSmall{"allreduce_oneshot", SyncKind::Sentinel, blocks, 128};
  const TunedVariant oneshotWide =
      wholeStores(TunedVariant{"allreduce_oneshot", SyncKind::Sentinel, blocks, 512});
  const TunedVariant twoshotSentinel =
      wholeStores(TunedVariant{"allreduce_twoshot", SyncKind::Sentinel, blocks, 512});
  const TunedVariant twoshotBarrier =
      wholeStores(TunedVariant{"allreduce_twoshot", SyncKind::Barrier, blocks, 1024});
  // Where the two-shot stops short of the one-shot's rank counts (a stdlib whose two-shot declares
  // fewer; today both declare 2..72), past them the one-shot takes its sizes too.
  const std::optional<std::pair<int, int>> twoshotRanks =
      query.declaredRanks ? query.declaredRanks(twoshotSentinel.spec) : std::nullopt;
  if (twoshotRanks &&
      (query.key.nranks < twoshotRanks->first || query.key.nranks > twoshotRanks->second)) {
    DispatchPlan plan = planFromRanges(
        {{{0, 1 << 20}, oneshotSmall}, {{1 << 20, kNoUpperBound}, oneshotWide}}, query.maxBytes);
    plan.source = fmt::format(
        "built-in default rule for allreduce with {} blocks at {} ranks (one-shot sentinel at "
        "every size, 128 threads below 1M, whole stores from 1M: allreduce_twoshot declares "
        "ranks {}..{})",
        blocks, query.key.nranks, twoshotRanks->first, twoshotRanks->second);
    return plan;
  }
  DispatchPlan plan = planFromRanges({{{0, 1 << 20}, oneshotSmall},
                                      {{1 << 20, 4 << 20}, oneshotWide},
                                      {{4 << 20, 16 << 20}, twoshotSentinel},
                                      {{16 << 20, kNoUpperBound}, twoshotBarrier}},
                                     query.maxBytes);
  plan.source = fmt::format("built-in default rule for allreduce with {} blocks (one-shot "
                            "sentinel below 4M, 128 threads below 1M; two-shot sentinel below "
                            "16M, two-shot barrier with 1024 threads above; whole stores from 1M)",
                            blocks);
  return plan;
}

std::optional<DispatchPlan> tablePlan(const TuningTable& table, const DispatchQuery& query,
                                      std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<DispatchPlan> {
    if (why)
      *why = std::move(reason);
    return std::nullopt;
  };
  const TuningKey* chosen = chosenKey(table, query);
  if (!chosen)
    return fail(fmt::format("no row of {} matches {}{}", table.path, keyText(query.key),
                            query.spec.empty() ? "" : " with spec " + query.spec));
  // Per range (rows of one key have coinciding or disjoint ranges): the marked winner, else the
  // fastest finite time.
  std::map<std::pair<uint64_t, uint64_t>, const TuningRow*> winners;
  for (const TuningRow& row : table.rows) {
    if (!readsRow(row, *chosen, query))
      continue;
    const TuningRow*& slot = winners[{row.fromBytes, row.toBytes}];
    if (!std::isfinite(row.us) && !row.best)
      continue;
    if (!slot || (row.best && !slot->best) || (!slot->best && row.us < slot->us))
      slot = &row;
  }
  std::vector<std::pair<DispatchRange, TunedVariant>> picked;
  int lines = 0;
  for (const auto& [range, row] : winners) {
    if (!row)
      continue;
    picked.push_back({DispatchRange{range.first, range.second}, row->variant});
    ++lines;
  }
  if (picked.empty())
    return fail(fmt::format("every matching row of {} failed (its time is inf)", table.path));
  DispatchPlan plan = planFromRanges(std::move(picked), query.maxBytes);
  plan.fromTable = true;
  plan.source =
      fmt::format("tuning table {} ({} ranges for {})", table.path, lines, keyText(query.key));
  return plan;
}

std::vector<const TuningRow*> planRows(const TuningTable& table, const DispatchQuery& query) {
  std::vector<const TuningRow*> rows;
  const TuningKey* chosen = chosenKey(table, query);
  if (!chosen)
    return rows;
  for (const TuningRow& row : table.rows)
    if (readsRow(row, *chosen, query))
      rows.push_back(&row);
  return rows;
}

DispatchPlan chooseDispatchPlan(const TuningTable* table, const DispatchQuery& query) {
  std::string why = "no tuning table";
  if (table)
    if (auto plan = tablePlan(*table, query, &why))
      return std::move(*plan);
  DispatchPlan plan = defaultDispatchPlan(query);
  plan.source += " [" + why + "]";
  return plan;
}

std::string describePlan(const DispatchPlan& plan) {
  std::string text;
  for (const DispatchRange& range : plan.ranges)
    text += fmt::format("[{}, {})  {}\n", formatTableBytes(range.fromBytes),
                        formatTableBytes(range.toBytes), plan.variants[range.variant].text());
  return text;
}

} // namespace collc
