#include "runtime/TuningTable.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/MemoryBuffer.h>
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

  llvm::Error error(const llvm::Twine& message) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), path_ + ":" +
                                                                       std::to_string(line_) +
                                                                       ": error: " + message.str());
  }
  llvm::Error badColumn(const char* column, llvm::StringRef value, const char* expected) const {
    return error(fmt::format("column '{}' is '{}'; expected {}", column, value.str(), expected));
  }

private:
  const std::string& path_;
  int line_;
};

template <typename T, typename Parse>
llvm::Error parseWildcard(const LineParser& at, const char* column, llvm::StringRef text,
                          Parse parse, const char* expected, std::optional<T>& out) {
  if (text == "*") {
    out.reset();
    return llvm::Error::success();
  }
  auto value = parse(text);
  if (!value)
    return at.badColumn(column, text, expected);
  out = *value;
  return llvm::Error::success();
}

/// The values a launch knob's column takes besides "-", and how an error names them.
struct KnobRange {
  unsigned least = 1, most = 1000000;
  const char* expected = "a positive integer, or - for the spec's own";
};

/// A launch knob: an integer in `range`, or "-" for the spec's own.
llvm::Error parseKnob(const LineParser& at, const char* column, llvm::StringRef text,
                      std::optional<int>& out, const KnobRange& range = {}) {
  if (text == "-") {
    out.reset();
    return llvm::Error::success();
  }
  unsigned value = 0;
  if (text.getAsInteger(10, value) || value < range.least || value > range.most)
    return at.badColumn(column, text, range.expected);
  out = int(value);
  return llvm::Error::success();
}

llvm::Expected<TuningRow> parseRow(const LineParser& at, llvm::StringRef content) {
  TuningRow row;
  // A trailing "# ..." is the row's note.
  size_t hash = content.find('#');
  if (hash != llvm::StringRef::npos) {
    row.note = content.substr(hash + 1).trim().str();
    content = content.substr(0, hash);
  }
  llvm::SmallVector<llvm::StringRef, 20> fields;
  content.split(fields, ' ', -1, /*KeepEmpty=*/false);
  llvm::SmallVector<llvm::StringRef, 20> columns;
  for (llvm::StringRef field : fields) {
    llvm::SmallVector<llvm::StringRef, 4> parts;
    field.split(parts, '\t', -1, false);
    columns.append(parts.begin(), parts.end());
  }
  if (columns.size() == kColumnCountBeforeWholeStores)
    columns.insert(columns.begin() + kWholeStoresColumn, "-");
  if (columns.size() != kColumnCount)
    return at.error(fmt::format("expected {} columns ({}), found {}", kColumnCount,
                                fmt::join(std::begin(kColumns), std::end(kColumns), " "),
                                columns.size()));
  row.key.gpu = columns[0].str();
  if (columns[1] != "*") {
    unsigned ranks = 0;
    if (columns[1].getAsInteger(10, ranks) || ranks < 1 || ranks > 1024)
      return at.badColumn("ranks", columns[1], "a rank count or *");
    row.key.nranks = int(ranks);
  }
  row.key.topology = columns[2].str();
  auto kind = parseCollectiveKind(columns[3]);
  if (!kind)
    return at.badColumn("collective", columns[3],
                        "allreduce, allgather, reducescatter, broadcast, reduce or alltoall");
  row.key.collective = *kind;
  if (llvm::Error err = parseWildcard<DType>(
          at, "dtype", columns[4], [](llvm::StringRef t) { return parseDType(t); },
          "f32, f16, bf16 or *", row.key.dtype))
    return err;
  if (llvm::Error err = parseWildcard<ReduceOp>(
          at, "op", columns[5], [](llvm::StringRef t) { return parseReduceOp(t); },
          "sum, max, min or *", row.key.op))
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
                                columns[6].str(), columns[7].str()));
  row.fromBytes = *from;
  row.toBytes = *to;
  auto bytes = parseTableBytes(columns[8]);
  if (!bytes || *bytes == kNoUpperBound)
    return at.badColumn("bytes", columns[8], "the size in bytes the row was measured at");
  row.bytes = *bytes;
  row.variant.spec = columns[9].str();
  if (columns[10] != "-") {
    auto sync = parseSyncKind(columns[10]);
    if (!sync)
      return at.badColumn("sync", columns[10],
                          "barrier, sentinel, ll, ll128, ll128_atomic, or - for the spec's own");
    row.variant.sync = *sync;
  }
  if (llvm::Error err = parseKnob(at, "blocks", columns[11], row.variant.blocks))
    return err;
  if (llvm::Error err = parseKnob(at, "threads", columns[12], row.variant.threads))
    return err;
  if (llvm::Error err = parseKnob(at, "vector", columns[13], row.variant.vectorBytes))
    return err;
  if (llvm::Error err = parseKnob(at, "unroll", columns[14], row.variant.unroll))
    return err;
  if (llvm::Error err = parseKnob(at, "whole_stores", columns[kWholeStoresColumn],
                                  row.variant.wholeStores, {0, 1, "0, 1, or - for the spec's own"}))
    return err;
  if (columns[16] == "inf") {
    row.us = std::numeric_limits<double>::infinity();
  } else {
    std::string text = columns[16].str();
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
llvm::Error checkRows(const TuningTable& table) {
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
  return llvm::Error::success();
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

llvm::Expected<TuningTable> parseTuningTable(llvm::StringRef text, const std::string& path) {
  TuningTable table;
  table.path = path;
  llvm::SmallVector<llvm::StringRef, 64> lines;
  text.split(lines, '\n');
  bool seenRow = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i].rtrim("\r");
    llvm::StringRef content = line.trim();
    if (content.empty())
      continue;
    if (content.startswith("#")) {
      // Comments above the first row are the table's header (minus the column names, which the
      // writer puts back), kept when the tuner rewrites the file.
      llvm::StringRef comment = content.drop_front().ltrim();
      if (!seenRow && !comment.startswith(kColumns[0]))
        table.header.push_back(comment.str());
      continue;
    }
    seenRow = true;
    LineParser at(path, int(i + 1));
    llvm::Expected<TuningRow> row = parseRow(at, content);
    if (!row)
      return row.takeError();
    row->line = int(i + 1);
    table.rows.push_back(std::move(*row));
  }
  if (llvm::Error err = checkRows(table))
    return err;
  return table;
}

llvm::Expected<TuningTable> readTuningTable(const std::string& path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot read the tuning table " +
                                                                       path + ": " +
                                                                       buffer.getError().message());
  return parseTuningTable((*buffer)->getBuffer(), path);
}

void writeTuningTable(llvm::raw_ostream& out, const TuningTable& table) {
  for (const std::string& comment : table.header)
    out << (comment.empty() ? "#" : "# " + comment) << "\n";
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
    out << line << "\n";
  }
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
  std::string key = llvm::StringRef(gpuName).trim().str();
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

std::optional<uint64_t> parseTableBytes(llvm::StringRef text) {
  if (text == "inf")
    return kNoUpperBound;
  size_t digits = 0;
  while (digits < text.size() && llvm::isDigit(text[digits]))
    ++digits;
  if (digits == 0 || digits > 15)
    return std::nullopt;
  uint64_t value = 0;
  if (text.substr(0, digits).getAsInteger(10, value))
    return std::nullopt;
  std::string suffix = text.substr(digits).lower();
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
