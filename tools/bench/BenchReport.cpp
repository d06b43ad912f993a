#include "tools/bench/BenchReport.h"

#include <algorithm>
#include <fmt/format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>

namespace collc {

namespace {

// Lines of a note kept in the problems list: the first mismatches or the error's first lines
// say what went wrong; the full note is in the CSV and JSON.
constexpr size_t kProblemLines = 4;

std::string timeCell(const BenchTiming& timing) {
  switch (timing.status) {
  case BenchTiming::Status::Ok:
    return fmt::format("{:.2f}", timing.us);
  case BenchTiming::Status::Wrong:
    return "WRONG";
  case BenchTiming::Status::Failed:
    return "FAILED";
  case BenchTiming::Status::NotRun:
    break;
  }
  return "-";
}

std::string numberCell(std::optional<double> value, const char* format = "{:.2f}") {
  return value ? fmt::format(fmt::runtime(format), *value) : "-";
}

/// The NCCL call a row was compared with: its point's kind's, or "" without a point.
std::string ncclCollectiveOf(const NcclPoint* point) {
  return point ? std::string(ncclCallName(point->kind)) : std::string();
}

std::optional<double> timeOf(const BenchTiming& timing) {
  return timing.ok() ? std::optional<double>(timing.us) : std::nullopt;
}

std::optional<double> algbwOf(const BenchRow& row) {
  return row.collc.ok() ? std::optional<double>(algbwGBps(row.bytes, row.collc.us)) : std::nullopt;
}

/// NCCL's bus bandwidth at a point, with the factor of its kind (the same as collc's rows').
std::optional<double> busbwOf(const NcclPoint& point, const BenchTiming& timing, int nranks) {
  return timing.ok() ? std::optional<double>(busbwGBps(point.bytes, timing.us, nranks, point.kind))
                     : std::nullopt;
}

std::optional<double> busbwOf(const BenchRow& row, int nranks) {
  return row.collc.ok()
             ? std::optional<double>(busbwGBps(row.bytes, row.collc.us, nranks, row.kind))
             : std::nullopt;
}

/// NCCL's timings at a size, NotRun where it was not measured.
const BenchTiming& ncclPlain(const NcclPoint* point) {
  static const BenchTiming none;
  return point ? point->plain : none;
}
const BenchTiming& ncclSymmetric(const NcclPoint* point) {
  static const BenchTiming none;
  return point ? point->symmetric : none;
}

size_t variantWidth(const BenchResults& results) {
  size_t width = 7; // "variant"
  for (const BenchRow& row : results.rows)
    width = std::max(width, row.variant().size());
  return width;
}

/// The first `lines` lines of `text`, each after `indent`.
std::string firstLines(const std::string& text, size_t lines, const std::string& indent) {
  std::string out;
  size_t begin = 0;
  for (size_t n = 0; n < lines && begin < text.size(); ++n) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos)
      end = text.size();
    out += indent + text.substr(begin, end - begin) + "\n";
    begin = end + 1;
  }
  if (begin < text.size())
    out += indent + "...\n";
  return out;
}

std::string csvField(const std::string& text) {
  std::string flat;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n')
      flat += i + 1 < text.size() ? " | " : "";
    else
      flat += text[i];
  }
  if (flat.find_first_of(",\"") == std::string::npos)
    return flat;
  std::string quoted = "\"";
  for (char c : flat)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csvNumber(std::optional<double> value) {
  return value ? fmt::format("{:.6g}", *value) : "";
}

llvm::json::Value jsonNumber(std::optional<double> value) {
  if (!value)
    return nullptr;
  return *value;
}

using Fields = std::vector<std::pair<std::string, llvm::json::Value>>;

/// The header as ordered fields: the CSV keeps this order, the JSON sorts them.
Fields headerFields(const BenchHeader& header) {
  return {{"collc_version", header.collcVersion},
          {"git_commit", header.gitCommit},
          {"date", header.date},
          {"gpu", header.gpu},
          {"processes", header.processes},
          {"kind", header.kind},
          {"dtype", header.dtype},
          {"op", header.op},
          {"nranks", header.nranks},
          {"element_bytes", header.elementBytes},
          {"nvrtc_version", header.nvrtcVersion},
          {"nccl_version", header.ncclVersion},
          {"nccl_note", header.ncclNote},
          {"graph_ops", header.graphOps},
          {"replays", header.replays}};
}

Fields compileTimeFields(const CompileTimes& times) {
  return {{"variant", times.variant},
          {"front_end_ms", times.frontEndMs},
          {"cold_ms", times.coldMs},
          {"cold_again_ms", times.coldAgainMs},
          {"warm_ms", times.warmMs},
          {"cold_was_miss", times.coldWasMiss},
          {"warm_was_hit", times.warmWasHit},
          {"cold_goal_ms", times.coldGoalMs},
          {"warm_goal_ms", times.warmGoalMs},
          {"cold_meets_goal", times.coldMeetsGoal()},
          {"warm_meets_goal", times.warmMeetsGoal()}};
}

llvm::json::Object toObject(Fields fields) {
  llvm::json::Object object;
  for (auto& [key, value] : fields)
    object[key] = std::move(value);
  return object;
}

/// A field's value as CSV metadata shows it: strings bare, numbers to 6 digits, the rest as JSON
/// writes them.
std::string plainText(const llvm::json::Value& value) {
  if (auto text = value.getAsString())
    return text->str();
  if (value.kind() == llvm::json::Value::Number && !value.getAsInteger())
    return fmt::format("{:.6g}", *value.getAsNumber());
  std::string out;
  llvm::raw_string_ostream stream(out);
  stream << value;
  return stream.str();
}

} // namespace

void writeHeader(llvm::raw_ostream& out, const BenchHeader& header) {
  out << fmt::format("# collc bench: {} {} {}, {} ranks on {} ({})\n", header.kind, header.dtype,
                     header.op, header.nranks, header.gpu, header.processes);
  out << fmt::format("# collc {} (commit {}), NVRTC {}, NCCL {}; {}\n", header.collcVersion,
                     header.gitCommit, header.nvrtcVersion, header.ncclVersion, header.date);
  out << fmt::format("# us/op: one CUDA graph of {} back-to-back ops per rank, median of {} "
                     "replays of the slowest rank / {}; every size checked against a float64 "
                     "reference on fresh data first\n",
                     header.graphOps, header.replays, header.graphOps);
  out << "# algbw = bytes / time, busbw = algbw * the bus factor of nccl-tests (GB/s; allreduce "
         "2(n-1)/n; allgather, reducescatter, alltoall n-1, as bytes is one rank's count; "
         "broadcast, reduce 1); vs_best = the better time of NCCL's same collective / collc's "
         "(above 1: collc is faster)\n";
  if (!header.ncclNote.empty())
    out << "# NCCL: " << header.ncclNote << "\n";
}

TableWriter::TableWriter(llvm::raw_ostream& out, const BenchResults& results,
                         const std::vector<std::string>& variants, bool variantColumn)
    : out_(out), results_(results), variantColumn_(variantColumn) {
  for (const std::string& variant : variants)
    width_ = std::max(width_, variant.size());
}

void TableWriter::line(const std::string& variant, const std::vector<std::string>& cells) {
  std::string text = variantColumn_ ? fmt::format("{:<{}} ", variant, width_) : "";
  text += fmt::format("{:>12} {:>12} {:>10} {:>9} {:>9} {:>10} {:>11} {:>8}", cells[0], cells[1],
                      cells[2], cells[3], cells[4], cells[5], cells[6], cells[7]);
  if (results_.watchdogCost)
    text += fmt::format(" {:>10} {:>8}", cells[8], cells[9]);
  out_ << text << "\n";
}

void TableWriter::heading() {
  line("variant", {"bytes", "count", "us/op", "algbw", "busbw", "nccl_us", "nccl_sym_us", "vs_best",
                   "no_wd_us", "wd_cost"});
}

void TableWriter::row(const BenchRow& row) {
  if (variantColumn_ && !previous_.empty() && row.variant() != previous_)
    out_ << "\n";
  previous_ = row.variant();
  const NcclPoint* nccl = results_.ncclFor(row);
  std::optional<double> cost = watchdogCost(row);
  line(row.variant(),
       {std::to_string(row.bytes), std::to_string(row.count), timeCell(row.collc),
        numberCell(algbwOf(row)), numberCell(busbwOf(row, results_.header.nranks)),
        timeCell(ncclPlain(nccl)), timeCell(ncclSymmetric(nccl)),
        numberCell(vsBest(row.collc, nccl)), timeCell(row.unbounded),
        numberCell(cost ? std::optional<double>(*cost * 100) : std::nullopt, "{:+.1f}%")});
}

void writeTable(llvm::raw_ostream& out, const BenchResults& results, bool variantColumn) {
  std::vector<std::string> variants;
  for (const BenchRow& row : results.rows)
    variants.push_back(row.variant());
  TableWriter table(out, results, variants, variantColumn);
  table.heading();
  for (const BenchRow& row : results.rows)
    table.row(row);
}

void writeBestPerSize(llvm::raw_ostream& out, const BenchResults& results) {
  const size_t width = variantWidth(results);
  std::vector<CollectiveKind> kinds = results.kinds();
  if (kinds.empty())
    kinds.push_back(CollectiveKind::AllReduce);
  for (size_t k = 0; k < kinds.size(); ++k) {
    const CollectiveKind kind = kinds[k];
    const std::string call(ncclCallName(kind));
    if (k > 0)
      out << "\n";
    // One kind: the title names no kind; several: each its own table.
    out << fmt::format("best collc {}variant per size (vs_best above 1: collc is faster than the "
                       "better time of NCCL's {})\n",
                       kinds.size() > 1 ? std::string(name(kind)) + " " : "", call);
    out << fmt::format("{:>12}  {:<{}} {:>10} {:>10} {:>11} {:>8}\n", "bytes", "variant", width,
                       "us/op", "nccl_us", "nccl_sym_us", "vs_best");
    int compared = 0, faster = 0;
    for (const auto& [bytes, row] : bestPerSize(results, kind)) {
      const NcclPoint* nccl = results.ncclAt(kind, bytes);
      std::optional<double> ratio = row ? vsBest(row->collc, nccl) : std::nullopt;
      if (ratio) {
        ++compared;
        faster += *ratio > 1;
      }
      out << fmt::format("{:>12}  {:<{}} {:>10} {:>10} {:>11} {:>8}\n", bytes,
                         row ? row->variant() : "(none correct)", width,
                         row ? timeCell(row->collc) : "-", timeCell(ncclPlain(nccl)),
                         timeCell(ncclSymmetric(nccl)), numberCell(ratio));
    }
    if (compared > 0)
      out << fmt::format("collc's best is faster than the better time of {} at {} of {} sizes\n",
                         call, faster, compared);
  }
}

void writeWatchdogCost(llvm::raw_ostream& out, const BenchResults& results, double goal) {
  if (!results.watchdogCost)
    return;
  const size_t width = variantWidth(results);
  out << fmt::format("watchdog cost at each variant's smallest size ((us/op - no_wd_us) / "
                     "no_wd_us; goal <= {:g}%)\n",
                     goal * 100);
  std::string previous;
  for (const BenchRow& row : results.rows) {
    if (row.variant() == previous)
      continue; // rows come sizes ascending: the first of a variant is its smallest
    previous = row.variant();
    std::optional<double> cost = watchdogCost(row);
    out << fmt::format("  {:<{}} {:>10} {:>8}  {}\n", row.variant(), width, formatBytes(row.bytes),
                       cost ? fmt::format("{:+.1f}%", *cost * 100) : std::string("-"),
                       !cost           ? "not measured"
                       : *cost <= goal ? "PASS"
                                       : "MISS");
  }
}

void writeProblems(llvm::raw_ostream& out, const BenchResults& results) {
  // (what, status, note) of every bad timing in order; runs of one variant with the same status
  // and note (a variant that could not be set up) become one entry with a size range.
  struct Problem {
    std::string what;
    uint64_t firstBytes, lastBytes;
    BenchTiming::Status status;
    std::string note;
  };
  std::vector<Problem> problems;
  auto add = [&](const std::string& what, uint64_t bytes, const BenchTiming& timing) {
    if (timing.status != BenchTiming::Status::Wrong && timing.status != BenchTiming::Status::Failed)
      return;
    if (!problems.empty() && problems.back().what == what &&
        problems.back().status == timing.status && problems.back().note == timing.note) {
      problems.back().lastBytes = bytes;
      return;
    }
    problems.push_back({what, bytes, bytes, timing.status, timing.note});
  };
  for (const BenchRow& row : results.rows) {
    add(row.variant(), row.bytes, row.collc);
    add(row.variant() + " (no watchdog)", row.bytes, row.unbounded);
  }
  for (const NcclPoint& point : results.nccl) {
    const std::string call(ncclCallName(point.kind));
    add("NCCL " + call + " plain", point.bytes, point.plain);
    add("NCCL " + call + " symmetric", point.bytes, point.symmetric);
  }
  if (problems.empty())
    return;
  out << "problems (no time is reported for these):\n";
  for (const Problem& p : problems) {
    std::string sizes = formatBytes(p.firstBytes);
    if (p.lastBytes != p.firstBytes)
      sizes += " .. " + formatBytes(p.lastBytes);
    out << fmt::format("  {} at {}: {}\n", p.what, sizes, statusName(p.status))
        << firstLines(p.note, kProblemLines, "    ");
  }
}

void writeCompileTimes(llvm::raw_ostream& out, const CompileTimes& times) {
  auto verdict = [](bool pass) { return pass ? "PASS" : "MISS"; };
  out << "compile times of " << times.variant << ":\n";
  out << fmt::format("  {:<44} {:>9.2f} ms\n", "collc front end (spec -> CUDA source)",
                     times.frontEndMs);
  out << fmt::format("  {:<44} {:>9.2f} ms   goal <= {:g} ms: {}{}\n",
                     "NVRTC cold (first compile, empty cache)", times.coldMs, times.coldGoalMs,
                     verdict(times.coldMeetsGoal()),
                     times.coldWasMiss ? "" : " (but it was a cache hit)");
  out << fmt::format("  {:<44} {:>9.2f} ms\n", "NVRTC again (library loaded, cache off)",
                     times.coldAgainMs);
  out << fmt::format("  {:<44} {:>9.2f} ms   goal <= {:g} ms: {}{}\n",
                     "warm (the same compile: a disk-cache hit)", times.warmMs, times.warmGoalMs,
                     verdict(times.warmMeetsGoal()),
                     times.warmWasHit ? "" : " (it missed the cache)");
}

void writeCsv(llvm::raw_ostream& out, const BenchResults& results) {
  const BenchHeader& h = results.header;
  for (const auto& [key, value] : headerFields(h))
    out << "# " << key << ": " << plainText(value) << "\n";
  if (results.compileTimes) {
    out << "# compile_times:";
    for (const auto& [key, value] : compileTimeFields(*results.compileTimes))
      out << " " << key << "=" << csvField(plainText(value));
    out << "\n";
  }
  for (const std::string& note : results.notes)
    out << "# note: " << note << "\n";
  out << "variant,spec,sync,launch,kind,bytes,count,status,us_per_op,algbw_gbps,busbw_gbps,"
         "nccl_collective,nccl_us,nccl_sym_us,vs_best,no_watchdog_us,watchdog_cost,note\n";
  for (const BenchRow& row : results.rows) {
    const NcclPoint* nccl = results.ncclFor(row);
    std::string note = row.collc.note;
    if (!row.unbounded.note.empty())
      note += (note.empty() ? "" : " | ") + std::string("no watchdog: ") + row.unbounded.note;
    out << fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csvField(row.variant()),
        csvField(row.spec), csvField(row.sync), csvField(row.launch), name(row.kind), row.bytes,
        row.count, statusName(row.collc.status), csvNumber(timeOf(row.collc)),
        csvNumber(algbwOf(row)), csvNumber(busbwOf(row, h.nranks)),
        csvField(ncclCollectiveOf(nccl)), csvNumber(timeOf(ncclPlain(nccl))),
        csvNumber(timeOf(ncclSymmetric(nccl))), csvNumber(vsBest(row.collc, nccl)),
        csvNumber(timeOf(row.unbounded)), csvNumber(watchdogCost(row)), csvField(note));
  }
}

void writeJson(llvm::raw_ostream& out, const BenchResults& results) {
  const int nranks = results.header.nranks;
  llvm::json::Array rows;
  for (const BenchRow& row : results.rows) {
    const NcclPoint* nccl = results.ncclFor(row);
    rows.push_back(llvm::json::Object{{"variant", row.variant()},
                                      {"spec", row.spec},
                                      {"sync", row.sync},
                                      {"launch", row.launch},
                                      {"kind", std::string(name(row.kind))},
                                      {"bytes", int64_t(row.bytes)},
                                      {"count", int64_t(row.count)},
                                      {"status", statusName(row.collc.status)},
                                      {"us_per_op", jsonNumber(timeOf(row.collc))},
                                      {"algbw_gbps", jsonNumber(algbwOf(row))},
                                      {"busbw_gbps", jsonNumber(busbwOf(row, nranks))},
                                      {"nccl_collective", ncclCollectiveOf(nccl)},
                                      {"nccl_us", jsonNumber(timeOf(ncclPlain(nccl)))},
                                      {"nccl_sym_us", jsonNumber(timeOf(ncclSymmetric(nccl)))},
                                      {"vs_best", jsonNumber(vsBest(row.collc, nccl))},
                                      {"no_watchdog_status", statusName(row.unbounded.status)},
                                      {"no_watchdog_us", jsonNumber(timeOf(row.unbounded))},
                                      {"watchdog_cost", jsonNumber(watchdogCost(row))},
                                      {"note", row.collc.note},
                                      {"no_watchdog_note", row.unbounded.note}});
  }
  llvm::json::Array nccl;
  for (const NcclPoint& point : results.nccl)
    nccl.push_back(llvm::json::Object{
        {"kind", std::string(name(point.kind))},
        {"collective", std::string(ncclCallName(point.kind))},
        {"bytes", int64_t(point.bytes)},
        {"plain_status", statusName(point.plain.status)},
        {"plain_us", jsonNumber(timeOf(point.plain))},
        {"plain_busbw_gbps", jsonNumber(busbwOf(point, point.plain, nranks))},
        {"plain_note", point.plain.note},
        {"symmetric_status", statusName(point.symmetric.status)},
        {"symmetric_us", jsonNumber(timeOf(point.symmetric))},
        {"symmetric_busbw_gbps", jsonNumber(busbwOf(point, point.symmetric, nranks))},
        {"symmetric_note", point.symmetric.note}});
  llvm::json::Array best;
  for (CollectiveKind kind : results.kinds())
    for (const auto& [bytes, row] : bestPerSize(results, kind)) {
      const NcclPoint* point = results.ncclAt(kind, bytes);
      best.push_back(llvm::json::Object{
          {"kind", std::string(name(kind))},
          {"bytes", int64_t(bytes)},
          {"variant", row ? llvm::json::Value(row->variant()) : llvm::json::Value(nullptr)},
          {"us_per_op", jsonNumber(row ? timeOf(row->collc) : std::nullopt)},
          {"vs_best", jsonNumber(row ? vsBest(row->collc, point) : std::nullopt)}});
    }
  llvm::json::Array notes;
  for (const std::string& note : results.notes)
    notes.push_back(note);
  llvm::json::Object root{
      {"header", toObject(headerFields(results.header))},
      {"watchdog_cost_measured", results.watchdogCost},
      {"rows", std::move(rows)},
      {"nccl", std::move(nccl)},
      {"best", std::move(best)},
      {"compile_times", results.compileTimes
                            ? llvm::json::Value(toObject(compileTimeFields(*results.compileTimes)))
                            : llvm::json::Value(nullptr)},
      {"notes", std::move(notes)}};
  out << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}

std::string ncclNote(const std::vector<NcclCollective>& collectives, bool oneProcess) {
  const std::string calls = describeNcclCalls(collectives);
  if (oneProcess)
    return calls + " with cudaMalloc buffers (nccl_us) and with symmetric windows, ncclMemAlloc + "
                   "ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC) (nccl_sym_us); one "
                   "communicator per GPU, measured before collc's kernels";
  return calls + " with cudaMalloc buffers on the world's communicator, timed by collc's harness "
                 "(nccl_us); symmetric windows are measured in one-process mode only (collc bench "
                 "without --procs)";
}

} // namespace collc
