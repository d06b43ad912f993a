#include "tools/bench/BenchResults.h"

#include <algorithm>
#include <map>

namespace collc {

const char* statusName(BenchTiming::Status status) {
  switch (status) {
  case BenchTiming::Status::NotRun:
    return "not run";
  case BenchTiming::Status::Ok:
    return "ok";
  case BenchTiming::Status::Wrong:
    return "WRONG";
  case BenchTiming::Status::Failed:
    return "FAILED";
  }
  return "?";
}

const NcclPoint* BenchResults::ncclAt(CollectiveKind kind, uint64_t bytes) const {
  for (const NcclPoint& point : nccl)
    if (point.kind == kind && point.bytes == bytes)
      return &point;
  return nullptr;
}

std::vector<CollectiveKind> BenchResults::kinds() const {
  std::vector<CollectiveKind> seen;
  for (const BenchRow& row : rows)
    if (std::find(seen.begin(), seen.end(), row.kind) == seen.end())
      seen.push_back(row.kind);
  return seen;
}

int BenchResults::failureCount() const {
  auto bad = [](const BenchTiming& t) {
    return t.status == BenchTiming::Status::Wrong || t.status == BenchTiming::Status::Failed;
  };
  int failures = 0;
  for (const BenchRow& row : rows)
    failures += bad(row.collc) + bad(row.unbounded);
  for (const NcclPoint& point : nccl)
    failures += bad(point.plain) + bad(point.symmetric);
  return failures;
}

std::vector<uint64_t> sweepSizes(uint64_t begin, uint64_t end, uint64_t factor) {
  std::vector<uint64_t> sizes;
  if (begin == 0 || begin > end || factor < 2)
    return sizes;
  for (uint64_t bytes = begin; bytes <= end; bytes *= factor) {
    sizes.push_back(bytes);
    if (bytes > end / factor) // the next one would pass `end` (or overflow)
      break;
  }
  return sizes;
}

std::string formatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + kUnits[unit];
}

double algbwGBps(uint64_t bytes, double us) {
  return us > 0 ? double(bytes) / (us * 1e3) : 0;
}

double busbwGBps(uint64_t bytes, double us, int nranks, CollectiveKind kind) {
  if (nranks <= 0)
    return 0;
  switch (kind) {
  case CollectiveKind::AllReduce:
    return algbwGBps(bytes, us) * 2.0 * (nranks - 1) / nranks;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return algbwGBps(bytes, us) * (nranks - 1);
  case CollectiveKind::Broadcast:
  case CollectiveKind::Reduce:
    return algbwGBps(bytes, us);
  }
  return 0;
}

std::optional<double> bestNcclUs(const NcclPoint& point) {
  std::optional<double> best;
  for (const BenchTiming* t : {&point.plain, &point.symmetric})
    if (t->ok() && (!best || t->us < *best))
      best = t->us;
  return best;
}

std::optional<double> vsBest(const BenchTiming& collc, const NcclPoint* point) {
  if (!collc.ok() || collc.us <= 0 || !point)
    return std::nullopt;
  std::optional<double> best = bestNcclUs(*point);
  if (!best)
    return std::nullopt;
  return *best / collc.us;
}

std::optional<double> watchdogCost(const BenchRow& row) {
  if (!row.collc.ok() || !row.unbounded.ok() || row.unbounded.us <= 0)
    return std::nullopt;
  return (row.collc.us - row.unbounded.us) / row.unbounded.us;
}

std::vector<std::pair<uint64_t, const BenchRow*>> bestPerSize(const BenchResults& results,
                                                              CollectiveKind kind) {
  std::map<uint64_t, const BenchRow*> best;
  for (const BenchRow& row : results.rows) {
    if (row.kind != kind)
      continue;
    const BenchRow*& slot = best[row.bytes];
    if (row.collc.ok() && (!slot || row.collc.us < slot->collc.us))
      slot = &row;
  }
  return {best.begin(), best.end()};
}

std::string kindList(const std::vector<CollectiveKind>& kinds) {
  std::string text;
  for (CollectiveKind kind : kinds)
    text += (text.empty() ? "" : ", ") + std::string(name(kind));
  return text;
}

} // namespace collc
