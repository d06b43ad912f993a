#include "tools/bench/Benchmark.h"

#include "runtime/CollectiveInstance.h"
#include "runtime/HeapSize.h"
#include "tools/bench/NcclBaseline.h"
#include "tools/harness/RunHarness.h"

#include <algorithm>
#include <memory>

namespace collc {

namespace {

uint64_t bytesOf(const CompiledCollective& compiled, uint64_t count) {
  return count * sizeOf(compiled.dtype);
}

void announce(const BenchSettings& settings, const std::string& what) {
  if (settings.progress)
    settings.progress(what);
}

void rowDone(const BenchSettings& settings, const BenchRow& row) {
  if (settings.rowDone)
    settings.rowDone(row);
}

RunOptions runOptions(const BenchSettings& settings, uint64_t count) {
  RunOptions options;
  options.count = count;
  options.graphOps = settings.graphOps;
  options.replays = settings.replays;
  options.seed = settings.seed;
  return options;
}

/// Whether other processes drive some of the world's ranks: their calls must stay in step.
bool sharedWithOtherProcesses(const SymmetricWorld& world) {
  return world.localRanks().size() < size_t(world.nranks());
}

/// One checked-then-timed measurement. An error comes back as the Expected's error; a wrong
/// result as a Wrong timing.
Expected<BenchTiming> measure(SymmetricWorld& world, CollectiveInstance& instance,
                              const CompiledCollective& compiled, const RunOptions& options) {
  Expected<RunReport> report = runAndCheck(world, instance, compiled, options);
  if (!report)
    return report.takeError();
  if (!report->correct)
    return BenchTiming::wrong(report->firstMismatches);
  return BenchTiming::measured(report->usPerOp);
}

/// The instances of one variant: the bounded one, and the unbounded twin where measured. The
/// twin is made second so that it is destroyed first and the heap is given back in order.
struct VariantInstances {
  std::unique_ptr<CollectiveInstance> bounded, unbounded;
};

Expected<VariantInstances> makeInstances(SymmetricWorld& world, const BenchVariant& variant,
                                         uint64_t maxCount, uint64_t timeoutNs) {
  VariantInstances instances;
  auto bounded =
      CollectiveInstance::create(world, variant.compiled, variant.cubin, maxCount, timeoutNs);
  if (!bounded)
    return bounded.takeError();
  instances.bounded = std::move(*bounded);
  if (variant.measuresWatchdogCost()) {
    auto unbounded = CollectiveInstance::create(world, variant.unbounded, variant.unboundedCubin,
                                                maxCount, timeoutNs);
    if (!unbounded)
      return unbounded.takeError();
    instances.unbounded = std::move(*unbounded);
  }
  return instances;
}

} // namespace

uint64_t benchHeapBytes(const std::vector<BenchVariant>& variants, uint64_t maxCount) {
  uint64_t most = 0;
  for (const BenchVariant& variant : variants) {
    uint64_t bytes = heapBytesFor(variant.compiled, maxCount);
    if (variant.measuresWatchdogCost())
      bytes += heapBytesFor(variant.unbounded, maxCount);
    most = std::max(most, bytes);
  }
  return most;
}

Expected<std::vector<BenchRow>> benchVariants(SymmetricWorld& world,
                                              const std::vector<BenchVariant>& variants,
                                              const BenchSettings& settings) {
  const bool stopOnError = sharedWithOtherProcesses(world);
  const uint64_t maxCount = settings.counts.empty()
                                ? 0
                                : *std::max_element(settings.counts.begin(), settings.counts.end());
  std::vector<BenchRow> rows;
  for (const BenchVariant& variant : variants) {
    const size_t first = rows.size();
    for (uint64_t count : settings.counts) {
      BenchRow row;
      row.spec = variant.spec;
      row.kind = variant.compiled.kind;
      row.sync = variant.sync;
      row.launch = launchText(variant.compiled.launch);
      row.count = count;
      row.bytes = bytesOf(variant.compiled, count);
      rows.push_back(std::move(row));
    }
    if (settings.counts.empty())
      continue;
    Expected<VariantInstances> instances =
        makeInstances(world, variant, maxCount, settings.timeoutNs);
    if (!instances) {
      if (stopOnError)
        return instances.takeError();
      const std::string why = toString(instances.takeError());
      for (size_t i = first; i < rows.size(); ++i) {
        rows[i].collc = BenchTiming::failed(why);
        rowDone(settings, rows[i]);
      }
      continue;
    }
    for (size_t i = first; i < rows.size(); ++i) {
      BenchRow& row = rows[i];
      const std::string size = formatBytes(row.bytes);
      announce(settings, row.variant() + " " + size);
      RunOptions options = runOptions(settings, row.count);
      options.reference = variant.reference;
      Expected<BenchTiming> timing = measure(world, *instances->bounded, variant.compiled, options);
      if (timing && instances->unbounded) {
        row.collc = std::move(*timing);
        announce(settings, row.variant() + " " + size + " (no watchdog)");
        timing = measure(world, *instances->unbounded, variant.unbounded, options);
        if (timing)
          row.unbounded = std::move(*timing);
      } else if (timing) {
        row.collc = std::move(*timing);
      }
      if (!timing) {
        if (stopOnError)
          return makeError(row.variant() + " at " + size + ": " + toString(timing.takeError()));
        // Blame the run that failed: the bounded one unless it had already been measured.
        BenchTiming& failed =
            row.collc.status == BenchTiming::Status::NotRun ? row.collc : row.unbounded;
        failed = BenchTiming::failed(toString(timing.takeError()));
        rowDone(settings, row);
        for (size_t later = i + 1; later < rows.size(); ++later) {
          rows[later].collc.note = "not measured: the variant failed at " + size;
          rowDone(settings, rows[later]);
        }
        break;
      }
      rowDone(settings, row);
    }
  }
  return rows;
}

Expected<std::vector<NcclPoint>>
benchNcclBaseline(const std::vector<int>& devices, const std::vector<NcclCollective>& collectives,
                  const std::vector<std::shared_ptr<const ir::Program>>& references,
                  const BenchSettings& settings) {
  const int nranks = int(devices.size());
  // One set of buffers serves every collective: as large as the largest call needs.
  uint64_t maxBytes = 0;
  for (const NcclCollective& collective : collectives)
    for (uint64_t count : settings.counts)
      maxBytes = std::max(maxBytes, ncclBaselineBytes(collective, count, nranks));
  auto nccl = NcclBaseline::create(devices, maxBytes);
  if (!nccl)
    return nccl.takeError();
  NcclBaselineOptions options;
  options.graphOps = settings.graphOps;
  options.replays = settings.replays;
  options.seed = settings.seed;
  std::vector<NcclPoint> points;
  for (size_t c = 0; c < collectives.size(); ++c) {
    const NcclCollective& collective = collectives[c];
    options.reference = c < references.size() ? references[c] : nullptr;
    const std::string call(ncclCallName(collective.kind));
    for (uint64_t count : settings.counts) {
      NcclPoint point;
      point.kind = collective.kind;
      point.bytes = count * sizeOf(collective.dtype);
      for (bool symmetric : {false, true}) {
        announce(settings, "NCCL " + call + " " + (symmetric ? "symmetric" : "plain") + " " +
                               formatBytes(point.bytes));
        auto timing = (*nccl)->measureCollective(collective, count, symmetric, options);
        BenchTiming& slot = symmetric ? point.symmetric : point.plain;
        if (!timing)
          slot = BenchTiming::failed(toString(timing.takeError()));
        else if (!timing->correct)
          slot = BenchTiming::wrong(timing->firstMismatches);
        else
          slot = BenchTiming::measured(timing->usPerOp);
      }
      points.push_back(std::move(point));
    }
  }
  return points;
}

Expected<std::vector<NcclPoint>> benchNcclInWorld(SymmetricWorld& world,
                                                  const CompiledCollective& like,
                                                  std::shared_ptr<const ir::Program> reference,
                                                  const BenchSettings& settings) {
  uint64_t maxCount = 0;
  for (uint64_t count : settings.counts)
    maxCount = std::max(maxCount, count);
  auto instance = CollectiveInstance::createNccl(world, like, maxCount);
  if (!instance)
    return instance.takeError();
  std::vector<NcclPoint> points;
  for (uint64_t count : settings.counts) {
    NcclPoint point;
    point.kind = like.kind;
    point.bytes = bytesOf(like, count);
    announce(settings,
             "NCCL " + std::string(ncclCallName(like.kind)) + " plain " + formatBytes(point.bytes));
    RunOptions options = runOptions(settings, count);
    options.reference = reference;
    Expected<BenchTiming> timing = measure(world, **instance, like, options);
    if (!timing) {
      // The processes may be out of step now: record it and make no more calls.
      point.plain = BenchTiming::failed(toString(timing.takeError()));
      points.push_back(std::move(point));
      break;
    }
    point.plain = std::move(*timing);
    points.push_back(std::move(point));
  }
  return points;
}

} // namespace collc
