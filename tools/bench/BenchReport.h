// The writers of `collc bench`: the table in the spirit of nccl-tests, the best collc variant per
// size, the problems found, the compile times, and the same figures as CSV and JSON for scripts
// (scripts/plot-bench.py reads the JSON). Pure formatting over tools/bench/BenchResults.h: no GPU.
#ifndef COLLC_TOOLS_BENCH_BENCHREPORT_H
#define COLLC_TOOLS_BENCH_BENCHREPORT_H

#include "runtime/NcclCollective.h"
#include "tools/bench/BenchResults.h"

#include <llvm/Support/raw_ostream.h>
#include <string>
#include <vector>

namespace collc {

/// Lines starting with "# " that say what was measured, where, with what, and how the columns
/// are defined.
void writeHeader(llvm::raw_ostream& out, const BenchHeader& header);

/// The table, one line per row: [variant] bytes count us/op algbw busbw nccl_us nccl_sym_us
/// vs_best (NCCL's figures of the row's own kind and size), then no_wd_us and wd_cost when the
/// watchdog's cost is measured; a blank line between variants. A time that is not reported reads
/// WRONG, FAILED or "-". Written a row at a time, so that a long benchmark shows each row as soon
/// as it is measured (and a run cut short keeps what it had): NCCL's figures and the header must be
/// in `results` first; `variants` (every name the table will hold) sets the width of the variant
/// column.
class TableWriter {
public:
  /// `variantColumn` false: without the first column (`collc run`, one row).
  TableWriter(llvm::raw_ostream& out, const BenchResults& results,
              const std::vector<std::string>& variants, bool variantColumn = true);
  void heading();
  void row(const BenchRow& row);

private:
  void line(const std::string& variant, const std::vector<std::string>& cells);
  llvm::raw_ostream& out_;
  const BenchResults& results_;
  size_t width_ = 7; // "variant"
  bool variantColumn_;
  std::string previous_; // the last row's variant
};

/// The whole table of `results` at once (see TableWriter).
void writeTable(llvm::raw_ostream& out, const BenchResults& results, bool variantColumn = true);

/// Per kind of the rows, per size, the fastest correct collc variant of that kind against the
/// better time of NCCL's same collective, and a count of the sizes where collc is faster.
void writeBestPerSize(llvm::raw_ostream& out, const BenchResults& results);

/// With the watchdog's cost measured: per variant, the cost at its smallest size (where the
/// bound's share of the time is largest) against the goal, `goal` as a fraction (issue 4: 2% at
/// 1 KiB).
void writeWatchdogCost(llvm::raw_ostream& out, const BenchResults& results, double goal = 0.02);

/// Every wrong or failed measurement with its first lines of explanation, a failed variant's
/// identical errors once. Nothing when there is none.
void writeProblems(llvm::raw_ostream& out, const BenchResults& results);

/// The compile times and the goals they are held to (PASS / MISS).
void writeCompileTimes(llvm::raw_ostream& out, const CompileTimes& times);

/// The header and compile times as "# key: value" lines, then one line per row with its kind and
/// the NCCL collective it is compared with (nccl_collective, empty where NCCL has no figure) and
/// NCCL's figures of its kind and size (RFC 4180 quoting; a note's line breaks become " | ").
void writeCsv(llvm::raw_ostream& out, const BenchResults& results);

/// {"header", "rows", "nccl", "best", "compile_times", "notes"}; a time not reported is null.
/// Rows carry their kind and nccl_collective as in the CSV; NCCL's points and the best entries
/// their kind (and the points their collective).
void writeJson(llvm::raw_ostream& out, const BenchResults& results);

/// The header's note on the NCCL columns of a sweep compared with `collectives` (one per kind):
/// which NCCL call each kind was measured with and how. `oneProcess`: NcclBaseline, plain
/// buffers and symmetric windows; else the process-per-GPU world's communicator, plain only.
std::string ncclNote(const std::vector<NcclCollective>& collectives, bool oneProcess);

} // namespace collc

#endif // COLLC_TOOLS_BENCH_BENCHREPORT_H
