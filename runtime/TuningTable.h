// The tuning table: what `collc tune` measured on a machine, as a text file a person can read and
// edit, in the spirit of NCCL's nccl_tuner.conf. One row per (variant, measured size), keyed by
// GPU model, rank count, topology, collective, dtype and op, with the size range the row speaks
// for. Every timing is kept, not only the winner; the winner of each range is marked `*`, and
// editing that mark is how a person overrides the tuner. docs/tuning.md describes the format.
//
// Pure text processing: no GPU, no compiler. The dispatcher (runtime/DispatchPlan.h) reads it.
#ifndef COLLC_RUNTIME_TUNINGTABLE_H
#define COLLC_RUNTIME_TUNINGTABLE_H

#include "abi/Types.h"
#include "runtime/Status.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace collc {

/// "to" of a range that has no upper end (written `inf`).
inline constexpr uint64_t kNoUpperBound = std::numeric_limits<uint64_t>::max();

/// Where a row applies. Empty optionals and "*" strings are wildcards: they match anything.
struct TuningKey {
  std::string gpu = "*";      // GPU model with spaces as '_': "NVIDIA_H200"
  std::optional<int> nranks;  // rank count
  std::string topology = "*"; // "nvlink-p2p", "pcie-p2p", ...
  CollectiveKind collective = CollectiveKind::AllReduce;
  std::optional<DType> dtype;
  std::optional<ReduceOp> op;

  /// How many fields are not wildcards: a more specific key wins over a looser one.
  int specificity() const;
  bool sameAs(const TuningKey& other) const;
};

/// The concrete call a row's key is compared with (no wildcards).
struct TuningQuery {
  std::string gpu; // as gpuModelKey() writes it
  int nranks = 2;
  std::string topology;
  CollectiveKind collective = CollectiveKind::AllReduce;
  DType dtype = DType::BF16;
  ReduceOp op = ReduceOp::Sum;
};

bool matches(const TuningKey& key, const TuningQuery& query);

/// One variant of a collective: a spec and the choices that override its defaults. An unset
/// field (written `-`) keeps the spec's own sync or launch knob.
struct TunedVariant {
  TunedVariant() = default;
  explicit TunedVariant(std::string spec, std::optional<SyncKind> sync = std::nullopt,
                        std::optional<int> blocks = std::nullopt,
                        std::optional<int> threads = std::nullopt,
                        std::optional<int> vectorBytes = std::nullopt,
                        std::optional<int> unroll = std::nullopt,
                        std::optional<int> wholeStores = std::nullopt)
      : spec(std::move(spec)), sync(sync), blocks(blocks), threads(threads),
        vectorBytes(vectorBytes), unroll(unroll), wholeStores(wholeStores) {}

  std::string spec; // stdlib name or path
  std::optional<SyncKind> sync;
  std::optional<int> blocks, threads, vectorBytes, unroll;
  std::optional<int> wholeStores; // 0 or 1 (LaunchShape::wholeStores)

  /// "allreduce_oneshot/sentinel 8x512 v16 u1", and " w1" with whole stores on; unset fields
  /// read "-".
  std::string text() const;
  bool operator==(const TunedVariant& other) const;
  bool operator!=(const TunedVariant& other) const { return !(*this == other); }
  bool operator<(const TunedVariant& other) const;
};

struct TuningRow {
  TuningKey key;
  uint64_t fromBytes = 0;           // the range this row speaks for: fromBytes <= bytes < toBytes
  uint64_t toBytes = kNoUpperBound; // kNoUpperBound: no upper end
  uint64_t bytes = 0;               // the size (bytes per rank) it was measured at
  TunedVariant variant;
  double us = std::numeric_limits<double>::infinity(); // per op; infinity: failed or refused
  bool best = false;                                   // the winner of its key and range
  std::string note;                                    // why it failed, or a person's remark
  int line = 0;                                        // in the file it came from; 0: not read

  bool sameRange(const TuningRow& other) const {
    return fromBytes == other.fromBytes && toBytes == other.toBytes;
  }
};

struct TuningTable {
  std::string path;                // where it was read from, for messages
  std::vector<std::string> header; // comment lines above the rows (without "# "), kept on write
  std::vector<TuningRow> rows;
};

/// Parses a table. Errors are "PATH:LINE: error: ..." (a wrong column count, an unknown dtype, a
/// range that overlaps another of the same key, two winners for one range, ...).
Expected<TuningTable> parseTuningTable(std::string_view text, const std::string& path);
/// Reads and parses `path`; an error names the file when it cannot be read.
Expected<TuningTable> readTuningTable(const std::string& path);
/// The table as its file holds it: its header comments, the column names, then the rows with
/// aligned columns.
std::string tuningTableText(const TuningTable& table);

/// $COLLC_TUNING_TABLE, else $XDG_CONFIG_HOME/collc/tuning.tsv, else ~/.config/collc/tuning.tsv;
/// empty if there is no home.
std::string defaultTuningTablePath();

/// A GPU name as the table's gpu column holds it: spaces become '_' ("NVIDIA H200" ->
/// "NVIDIA_H200").
std::string gpuModelKey(const std::string& gpuName);

/// "1K", "64M", "1536", "inf" (kNoUpperBound): sizes as the table writes them.
std::string formatTableBytes(uint64_t bytes);
/// Reads what formatTableBytes writes, and KiB/MiB/GiB and lower-case suffixes too.
std::optional<uint64_t> parseTableBytes(std::string_view text);

} // namespace collc

#endif // COLLC_RUNTIME_TUNINGTABLE_H
