#include "runtime/TuningTable.h"

#include "runtime/ReadFile.h"
#include "runtime/TextParsing.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <tuple>

namespace collc {

namespace {

const char* const kColumns[] = {"gpu",     "ranks",  "topology", "collective",   "dtype", "op",
                                "from",    "to",     "bytes",    "spec",         "sync",  "blocks",
                                "threads", "vector", "unroll",   "whole_stores", "us",    "best"};
constexpr size_t kColumnCount = sizeof(kColumns) / sizeof(kColumns[0]);
/// Tables written before the whole_stores column have one column fewer: their rows leave it unset
/// (the spec's own).
constexpr size_t kWholeStoresColumn = 15;
static_assert(kWholeStoresColumn + 3 == kColumnCount, "whole_stores is before us and best");
constexpr size_t kColumnCountBeforeWholeStores = kColumnCount - 1;

std::string optionalInt(const std::optional<int>& value) {
  return value ? std::to_string(*value) : "-";
}

/// Collects the columns of one line and turns a bad one into "PATH:LINE: error: ...".
class LineParser {
public:
  LineParser(const std::string& path, int line) : path_(path), line_(line) {}

  Error error(const std::string& message) const {
    return makeError(path_ + ":" + std::to_string(line_) + ": error: " + message);
  }
  Error badColumn(const char* column, std::string_view value, std::string_view expected) const {
    return error(fmt::format("column '{}' is '{}'; expected {}", column, value, expected));
  }

private:
  const std::string& path_;
  int line_;
};

template <typename T, typename Parse>
Error parseWildcard(const LineParser& at, const char* column, std::string_view text, Parse parse,
                    const std::string& expected, std::optional<T>& out) {
  if (text == "*") {
    out.reset();
    return Error::success();
  }
  auto value = parse(text);
  if (!value)
    return at.badColumn(column, text, expected);
  out = *value;
  return Error::success();
}

/// The values a launch knob's column takes besides "-", and how an error names them.
struct KnobRange {
  unsigned least = 1, most = 1000000;
  const char* expected = "a positive integer, or - for the spec's own";
};

/// A launch knob: an integer in `range`, or "-" for the spec's own.
Error parseKnob(const LineParser& at, const char* column, std::string_view text,
                std::optional<int>& out, const KnobRange& range = {}) {
  if (text == "-") {
    out.reset();
    return Error::success();
  }
  std::optional<unsigned> value = parseDecimal<unsigned>(text);
  if (!value || *value < range.least || *value > range.most)
    return at.badColumn(column, text, range.expected);
  out = int(*value);
  return Error::success();
}

Expected<TuningRow> parseRow(const LineParser& at, std::string_view content) {
  TuningRow row;
  // A trailing "# ..." is the row's note.
  size_t hash = content.find('#');
  if (hash != std::string_view::npos) {
    row.note = std::string(trim(content.substr(hash + 1)));
    content = content.substr(0, hash);
  }
  std::vector<std::string_view> columns;
  for (std::string_view field : splitText(content, ' ', /*keepEmpty=*/false))
    for (std::string_view part : splitText(field, '\t', /*keepEmpty=*/false))
      columns.push_back(part);
  if (columns.size() == kColumnCountBeforeWholeStores)
    columns.insert(columns.begin() + kWholeStoresColumn, "-");
  if (columns.size() != kColumnCount)
    return at.error(fmt::format("expected {} columns ({}), found {}", kColumnCount,
                                fmt::join(std::begin(kColumns), std::end(kColumns), " "),
                                columns.size()));
  row.key.gpu = std::string(columns[0]);
  if (columns[1] != "*") {
    std::optional<unsigned> ranks = parseDecimal<unsigned>(columns[1]);
    if (!ranks || *ranks < 1 || *ranks > 1024)
      return at.badColumn("ranks", columns[1], "a rank count or *");
    row.key.nranks = int(*ranks);
  }
  row.key.topology = std::string(columns[2]);
  auto kind = parseCollectiveKind(columns[3]);
  if (!kind)
    return at.badColumn("collective", columns[3], nameList<CollectiveKind>());
  row.key.collective = *kind;
  if (Error err = parseWildcard<DType>(
          at, "dtype", columns[4], [](std::string_view t) { return parseDType(t); },
          nameList<DType>(", ") + " or *", row.key.dtype))
    return err;
  if (Error err = parseWildcard<ReduceOp>(
          at, "op", columns[5], [](std::string_view t) { return parseReduceOp(t); },
          nameList<ReduceOp>(", ") + " or *", row.key.op))
    return err;
  auto from = parseTableBytes(columns[6]);
  if (!from || *from == kNoUpperBound)
    return at.badColumn("from", columns[6], "a size in bytes (K, M, G suffixes allowed)");
  auto to = parseTableBytes(columns[7]);
  if (!to)
    return at.badColumn("to", columns[7], "a size in bytes (K, M, G suffixes allowed) or inf");
  if (*from >= *to)
    return at.error(fmt::format("the range from {} to {} is empty: 'from' must be below 'to' "
                                "(the row speaks for from <= bytes < to)",
                                std::string(columns[6]), std::string(columns[7])));
  row.fromBytes = *from;
  row.toBytes = *to;
  auto bytes = parseTableBytes(columns[8]);
  if (!bytes || *bytes == kNoUpperBound)
    return at.badColumn("bytes", columns[8], "the size in bytes the row was measured at");
  row.bytes = *bytes;
  row.variant.spec = std::string(columns[9]);
  if (columns[10] != "-") {
    auto sync = parseSyncKind(columns[10]);
    if (!sync)
      return at.badColumn("sync", columns[10],
                          nameList<SyncKind>(", ") + ", or - for the spec's own");
    row.variant.sync = *sync;
  }
  if (Error err = parseKnob(at, "blocks", columns[11], row.variant.blocks))
    return err;
  if (Error err = parseKnob(at, "threads", columns[12], row.variant.threads))
    return err;
  if (Error err = parseKnob(at, "vector", columns[13], row.variant.vectorBytes))
    return err;
  if (Error err = parseKnob(at, "unroll", columns[14], row.variant.unroll))
    return err;
  if (Error err = parseKnob(at, "whole_stores", columns[kWholeStoresColumn],
                            row.variant.wholeStores, {0, 1, "0, 1, or - for the spec's own"}))
    return err;
  if (columns[16] == "inf") {
    row.us = std::numeric_limits<double>::infinity();
  } else {
    std::string text = std::string(columns[16]);
    char* end = nullptr;
    double us = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !(us > 0) || !std::isfinite(us))
      return at.badColumn("us", columns[16], "a positive time in microseconds, or inf");
    row.us = us;
  }
  if (columns[17] == "*")
    row.best = true;
  else if (columns[17] != "-")
    return at.badColumn("best", columns[17], "* for the winner of its range, or -");
  if (row.best && !std::isfinite(row.us))
    return at.error("a row whose time is inf cannot be the winner (best = *)");
  return row;
}

/// The rules that involve several rows: within one key, ranges either coincide or are
/// disjoint, and a range has at most one winner.
Error checkRows(const TuningTable& table) {
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const TuningRow& later = table.rows[i];
    for (size_t j = 0; j < i; ++j) {
      const TuningRow& earlier = table.rows[j];
      if (!later.key.sameAs(earlier.key))
        continue;
      LineParser at(table.path, later.line);
      if (later.sameRange(earlier)) {
        if (later.best && earlier.best)
          return at.error(fmt::format("a second winner (*) for the range {} to {}; line {} is "
                                      "the first",
                                      formatTableBytes(later.fromBytes),
                                      formatTableBytes(later.toBytes), earlier.line));
        continue;
      }
      if (later.fromBytes < earlier.toBytes && earlier.fromBytes < later.toBytes)
        return at.error(fmt::format(
            "the range {} to {} overlaps the range {} to {} of line {} "
            "with the same key: ranges of one key coincide or are "
            "disjoint",
            formatTableBytes(later.fromBytes), formatTableBytes(later.toBytes),
            formatTableBytes(earlier.fromBytes), formatTableBytes(earlier.toBytes), earlier.line));
    }
  }
  return Error::success();
}

std::string envOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

} // namespace

int TuningKey::specificity() const {
  return (gpu != "*") + nranks.has_value() + (topology != "*") + dtype.has_value() + op.has_value();
}

bool TuningKey::sameAs(const TuningKey& other) const {
  return gpu == other.gpu && nranks == other.nranks && topology == other.topology &&
         collective == other.collective && dtype == other.dtype && op == other.op;
}

bool matches(const TuningKey& key, const TuningQuery& query) {
  return (key.gpu == "*" || key.gpu == query.gpu) && (!key.nranks || *key.nranks == query.nranks) &&
         (key.topology == "*" || key.topology == query.topology) &&
         key.collective == query.collective && (!key.dtype || *key.dtype == query.dtype) &&
         (!key.op || *key.op == query.op);
}

std::string TunedVariant::text() const {
  // Whole stores are named only where on, so that the names of variants without them stay as
  // they were (in tables, logs and results).
  return fmt::format("{}/{} {}x{} v{} u{}{}", spec, sync ? std::string(name(*sync)) : "-",
                     optionalInt(blocks), optionalInt(threads), optionalInt(vectorBytes),
                     optionalInt(unroll), wholeStores.value_or(0) == 1 ? " w1" : "");
}

bool TunedVariant::operator==(const TunedVariant& other) const {
  return spec == other.spec && sync == other.sync && blocks == other.blocks &&
         threads == other.threads && vectorBytes == other.vectorBytes && unroll == other.unroll &&
         wholeStores == other.wholeStores;
}

bool TunedVariant::operator<(const TunedVariant& other) const {
  return std::tie(spec, sync, blocks, threads, vectorBytes, unroll, wholeStores) <
         std::tie(other.spec, other.sync, other.blocks, other.threads, other.vectorBytes,
                  other.unroll, other.wholeStores);
}

Expected<TuningTable> parseTuningTable(std::string_view text, const std::string& path) {
  TuningTable table;
  table.path = path;
  const std::vector<std::string_view> lines = splitText(text, '\n');
  bool seenRow = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = trimRight(lines[i], "\r");
    std::string_view content = trim(line);
    if (content.empty())
      continue;
    if (content.front() == '#') {
      // Comments above the first row are the table's header (minus the column names, which the
      // writer puts back), kept when the tuner rewrites the file.
      std::string_view comment = trimLeft(content.substr(1));
      if (!seenRow && comment.substr(0, std::string_view(kColumns[0]).size()) != kColumns[0])
        table.header.push_back(std::string(comment));
      continue;
    }
    seenRow = true;
    LineParser at(path, int(i + 1));
    Expected<TuningRow> row = parseRow(at, content);
    if (!row)
      return row.takeError();
    row->line = int(i + 1);
    table.rows.push_back(std::move(*row));
  }
  if (Error err = checkRows(table))
    return err;
  return table;
}

Expected<TuningTable> readTuningTable(const std::string& path) {
  std::error_code error;
  std::optional<std::string> text = readWholeFile(path, &error);
  if (!text)
    return makeError("cannot read the tuning table " + path + ": " + error.message());
  return parseTuningTable(*text, path);
}

std::string tuningTableText(const TuningTable& table) {
  std::string out;
  for (const std::string& comment : table.header)
    out += (comment.empty() ? "#" : "# " + comment) + "\n";
  std::vector<std::vector<std::string>> cells;
  cells.emplace_back(std::begin(kColumns), std::end(kColumns));
  cells[0][0] = "# " + cells[0][0]; // the column names are a comment line
  for (const TuningRow& row : table.rows) {
    const TuningKey& key = row.key;
    const TunedVariant& v = row.variant;
    cells.push_back(
        {key.gpu, key.nranks ? std::to_string(*key.nranks) : "*", key.topology,
         std::string(name(key.collective)), key.dtype ? std::string(name(*key.dtype)) : "*",
         key.op ? std::string(name(*key.op)) : "*", formatTableBytes(row.fromBytes),
         formatTableBytes(row.toBytes), formatTableBytes(row.bytes), v.spec,
         v.sync ? std::string(name(*v.sync)) : "-", optionalInt(v.blocks), optionalInt(v.threads),
         optionalInt(v.vectorBytes), optionalInt(v.unroll), optionalInt(v.wholeStores),
         std::isfinite(row.us) ? fmt::format("{:.3f}", row.us) : "inf", row.best ? "*" : "-"});
  }
  std::vector<size_t> widths(kColumnCount, 0);
  for (const auto& line : cells)
    for (size_t c = 0; c < kColumnCount; ++c)
      widths[c] = std::max(widths[c], line[c].size());
  for (size_t r = 0; r < cells.size(); ++r) {
    std::string line;
    for (size_t c = 0; c < kColumnCount; ++c) {
      std::string cell = cells[r][c];
      if (c + 1 < kColumnCount)
        cell.resize(widths[c] + 2, ' ');
      line += cell;
    }
    if (r > 0 && !table.rows[r - 1].note.empty()) {
      // A note is one line and holds no '#', which would start another comment.
      std::string note = table.rows[r - 1].note;
      std::replace(note.begin(), note.end(), '\n', ' ');
      std::replace(note.begin(), note.end(), '#', ' ');
      line += "  # " + note;
    }
    out += line + "\n";
  }
  return out;
}

std::string defaultTuningTablePath() {
  std::string explicitPath = envOrEmpty("COLLC_TUNING_TABLE");
  if (!explicitPath.empty())
    return explicitPath;
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  std::string xdg = envOrEmpty("XDG_CONFIG_HOME");
  if (!xdg.empty() && xdg[0] == '/')
    return xdg + "/collc/tuning.tsv";
  std::string home = envOrEmpty("HOME");
  if (home.empty())
    return "";
  return home + "/.config/collc/tuning.tsv";
}

std::string gpuModelKey(const std::string& gpuName) {
  std::string key(trim(gpuName));
  for (char& c : key)
    if (c == ' ' || c == '\t' || c == '#')
      c = '_';
  return key.empty() ? "unknown" : key;
}

std::string formatTableBytes(uint64_t bytes) {
  if (bytes == kNoUpperBound)
    return "inf";
  static const char* const kSuffixes[] = {"", "K", "M", "G"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + kSuffixes[unit];
}

std::optional<uint64_t> parseTableBytes(std::string_view text) {
  if (text == "inf")
    return kNoUpperBound;
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
    ++digits;
  if (digits == 0 || digits > 15)
    return std::nullopt;
  std::optional<uint64_t> number = parseDecimal<uint64_t>(text.substr(0, digits));
  if (!number)
    return std::nullopt;
  uint64_t value = *number;
  std::string suffix(text.substr(digits));
  for (char& c : suffix)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  int shift = 0;
  if (suffix.empty() || suffix == "b")
    shift = 0;
  else if (suffix == "k" || suffix == "kib")
    shift = 10;
  else if (suffix == "m" || suffix == "mib")
    shift = 20;
  else if (suffix == "g" || suffix == "gib")
    shift = 30;
  else
    return std::nullopt;
  return value << shift;
}

} // namespace collc
