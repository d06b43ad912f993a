// What `collc bench` measures, as plain data: one row per (variant, size), NCCL's figures per size,
// the NVRTC compile times, and the header that says where and how they were taken. The benchmark
// (tools/bench/Benchmark.h) fills it on a GPU; the writers (tools/bench/BenchReport.h) and their
// tests need none. The arithmetic that turns times into the reported figures lives here too, so
// that the table, the CSV and the JSON cannot disagree.
#ifndef COLLC_TOOLS_BENCH_BENCHRESULTS_H
#define COLLC_TOOLS_BENCH_BENCHRESULTS_H

#include "abi/Types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collc {

/// One measured time: reported only when the result it timed was checked and correct.
struct BenchTiming {
  enum class Status {
    NotRun, // not measured (not asked for, or an earlier failure of the variant)
    Ok,     // checked against the float64 reference, then timed
    Wrong,  // a checked result was wrong: no time is reported
    Failed  // the measurement itself failed (CUDA or NCCL error, watchdog, hang)
  };
  Status status = Status::NotRun;
  double us = 0;    // per-op microseconds, when Ok
  std::string note; // why, when Wrong or Failed (first mismatches, the error)

  bool ok() const { return status == Status::Ok; }
  static BenchTiming measured(double us) { return {Status::Ok, us, ""}; }
  static BenchTiming wrong(std::string note) { return {Status::Wrong, 0, std::move(note)}; }
  static BenchTiming failed(std::string note) { return {Status::Failed, 0, std::move(note)}; }
};

/// "ok", "not run", "WRONG", "FAILED": the status column of the CSV and the JSON.
const char* statusName(BenchTiming::Status status);

/// How a bench row names its variant: "spec/sync", then the launch shape where known.
inline std::string benchVariantName(const std::string& spec, const std::string& sync,
                                    const std::string& launch) {
  return spec + "/" + sync + (launch.empty() ? "" : " " + launch);
}

/// One collc variant at one size.
struct BenchRow {
  std::string spec;   // "allreduce_oneshot"
  std::string sync;   // "ll"
  std::string launch; // its launch shape, "132x1024 v16 u1" (launchText); empty: not known
  CollectiveKind kind = CollectiveKind::AllReduce; // for its bus bandwidth
  uint64_t bytes = 0;
  uint64_t count = 0; // elements per rank
  BenchTiming collc;
  /// The same variant compiled without the watchdog's bound (--watchdog-cost), else NotRun.
  BenchTiming unbounded;

  /// "allreduce_oneshot/ll 8x512 v16 u1": what tells the variants of one table apart.
  std::string variant() const { return benchVariantName(spec, sync, launch); }
};

/// NCCL's own version of one kind (runtime/NcclCollective.h: ncclAllReduce, ncclAllGather, ...)
/// at one size: plain cudaMalloc buffers, and symmetric windows (ncclMemAlloc +
/// ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC)), NotRun where not measured. A row is
/// compared with the point of its own kind and size.
struct NcclPoint {
  uint64_t bytes = 0;
  BenchTiming plain, symmetric;
  CollectiveKind kind = CollectiveKind::AllReduce;
};

/// Wall times of one variant's NVRTC compile (`collc bench --compile-times`).
struct CompileTimes {
  std::string variant;      // "allreduce_oneshot/ll bf16 sum, 2 ranks, sm_90"
  double frontEndMs = 0;    // spec -> CUDA source (parse, verify, lower, generate, format)
  double coldMs = 0;        // the first NVRTC compile of this process, into an empty cache
  double coldAgainMs = 0;   // a second compile with the cache off: NVRTC already loaded
  double warmMs = 0;        // the same compile again: a hit in the disk cache
  bool coldWasMiss = false; // sanity: the cold compile did compile
  bool warmWasHit = false;  // sanity: the warm one came from the cache
  double coldGoalMs = 300;  // the goals of issue 4
  double warmGoalMs = 1;
  bool coldMeetsGoal() const { return coldMs <= coldGoalMs; }
  bool warmMeetsGoal() const { return warmWasHit && warmMs <= warmGoalMs; }
};

/// Where and how the figures were taken: printed above the table, kept in the CSV and JSON.
struct BenchHeader {
  std::string collcVersion, gitCommit, nvrtcVersion, ncclVersion;
  std::string date;               // "2026-12-01 10:00:00 UTC"
  std::string gpu;                // "NVIDIA H200"
  std::string kind = "allreduce"; // the kinds of the rows, "allreduce, allgather" for several
  std::string dtype = "bf16", op = "sum";
  int nranks = 2;
  int elementBytes = 2;
  /// "one process drives 2 GPUs" or "one process per GPU (2 processes)".
  std::string processes;
  /// What the NCCL columns are (which NCCL collective each kind was compared with, and how), or
  /// why they are empty ("NCCL not found: ...").
  std::string ncclNote;
  int graphOps = 50, replays = 7;
};

struct BenchResults {
  BenchHeader header;
  std::vector<BenchRow> rows;     // variant-major, sizes ascending within a variant
  std::vector<NcclPoint> nccl;    // per kind, sizes ascending
  std::vector<std::string> notes; // "skipped allreduce_oneshot/ll128: ...", sizes left out
  std::optional<CompileTimes> compileTimes;
  bool watchdogCost = false; // rows carry `unbounded` timings

  /// NCCL's figures for `kind` at `bytes`, or null.
  const NcclPoint* ncclAt(CollectiveKind kind, uint64_t bytes) const;
  /// NCCL's figures for the row's kind and size, or null.
  const NcclPoint* ncclFor(const BenchRow& row) const { return ncclAt(row.kind, row.bytes); }
  /// The kinds of the rows, in the order they first appear.
  std::vector<CollectiveKind> kinds() const;
  /// Rows whose collc or unbounded timing is Wrong or Failed, and NCCL points likewise.
  int failureCount() const;
};

/// The sizes of a sweep: begin, begin*factor, ... up to and including end (nccl-tests' -b -e -f).
/// Empty when the arguments make no sweep (begin 0, begin > end, factor < 2).
std::vector<uint64_t> sweepSizes(uint64_t begin, uint64_t end, uint64_t factor);

/// "1 KiB", "64 MiB", "1536 B": powers of 1024 where the size is a whole multiple.
std::string formatBytes(uint64_t bytes);

/// nccl-tests' algorithm bandwidth in GB/s (1e9 bytes/s): bytes per rank / time.
double algbwGBps(uint64_t bytes, double us);
/// nccl-tests' bus bandwidth, comparable to link speed: algbw times the collective's bus factor.
/// `bytes` is one rank's count of elements in bytes (collc's sizes), so for the kinds whose
/// nccl-tests size is the whole gathered or scattered buffer (nranks times that) the factor is
/// nccl-tests' (n-1)/n times n: allreduce 2(n-1)/n; allgather, reducescatter, alltoall n-1;
/// broadcast, reduce 1.
double busbwGBps(uint64_t bytes, double us, int nranks,
                 CollectiveKind kind = CollectiveKind::AllReduce);
/// The better (smaller) of NCCL's correct times at one size, or nullopt if neither is.
std::optional<double> bestNcclUs(const NcclPoint& point);
/// best NCCL time / collc time: above 1, collc is faster. nullopt without both.
std::optional<double> vsBest(const BenchTiming& collc, const NcclPoint* point);
/// (bounded - unbounded) / unbounded: the watchdog's relative cost. nullopt without both.
std::optional<double> watchdogCost(const BenchRow& row);

/// Per size (ascending), the row of the fastest correct collc variant of `kind`, or null where
/// none was correct: variants of different kinds do not compete.
std::vector<std::pair<uint64_t, const BenchRow*>> bestPerSize(const BenchResults& results,
                                                              CollectiveKind kind);
/// "allreduce", or "allreduce, allgather" for several kinds: what the header calls the kinds.
std::string kindList(const std::vector<CollectiveKind>& kinds);

} // namespace collc

#endif // COLLC_TOOLS_BENCH_BENCHRESULTS_H
