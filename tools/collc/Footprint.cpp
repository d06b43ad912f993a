#include "tools/collc/Footprint.h"

#include "compiler/DiagnosticText.h"
#include "runtime/HeapSize.h"

#include <algorithm>
#include <cstdio>
#include <llvm/Support/raw_ostream.h>

namespace collc::driver {

namespace {

std::string firstErrorLine(const std::string& diagnostics) {
  const size_t at = diagnostics.find("error: ");
  if (at == std::string::npos)
    return "refused";
  const size_t end = diagnostics.find('\n', at);
  return diagnostics.substr(at + 7, end == std::string::npos ? std::string::npos : end - at - 7);
}

} // namespace

Expected<std::vector<int>> parseFootprintRanks(const std::string& text, int minRanks,
                                               int maxRanks) {
  std::vector<int> counts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const bool digits = !item.empty() && item.size() <= 4 &&
                        item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(item) < minRanks || std::stoi(item) > maxRanks)
      return makeError("--ranks=" + text + ": '" + item +
                       "' is not a rank count the spec declares (" + std::to_string(minRanks) +
                       ".." + std::to_string(maxRanks) + ")");
    counts.push_back(std::stoi(item));
    start = comma + 1;
  }
  return counts;
}

std::vector<FootprintRow> footprint(const SpecSource& spec, const std::vector<int>& rankCounts,
                                    uint64_t count, DType dtype) {
  std::vector<FootprintRow> rows;
  for (int nranks : rankCounts) {
    FootprintRow row;
    row.nranks = nranks;
    for (const RegisteredSync& strategy : kSyncRegistry) {
      if (strategy.experimental)
        continue; // refused unless asked for
      const SyncKind sync = strategy.value;
      CompileOptions options;
      options.nranks = nranks;
      options.sync = sync;
      options.dtype = dtype;
      options.formatSource = false;
      std::string diagnostics;
      DiagnosticText sink(diagnostics);
      FootprintCell cell{sync, std::nullopt, "", ""};
      Expected<CompiledCollective> compiled = compileCollective(spec, options, sink);
      if (compiled) {
        // A size past 63 bits is refused as the runtime refuses it, never printed wrapped.
        cell.tooLarge = sizesProblem(*compiled, count);
        if (cell.tooLarge.empty())
          cell.bytes = heapBytesFor(*compiled, count);
      } else {
        consumeError(compiled.takeError());
        cell.refused = firstErrorLine(sink.str());
      }
      row.cells.push_back(std::move(cell));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string formatBytes(uint64_t bytes) {
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text,
                value < 10    ? "%.2f %s"
                : value < 100 ? "%.1f %s"
                              : "%.0f %s",
                value, units[unit]);
  return text;
}

} // namespace collc::driver
