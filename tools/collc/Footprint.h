// `collc check SPEC --footprint`: the symmetric heap per rank each sync strategy's variant of a
// spec takes for calls of up to a given size, at every rank count the spec declares. The figures
// are runtime/HeapSize.h's, the bytes CollectiveInstance carves out of the heap (scratch copies and
// flags, page-aligned), so they are what a world must hold.
#ifndef COLLC_TOOLS_COLLC_FOOTPRINT_H
#define COLLC_TOOLS_COLLC_FOOTPRINT_H

#include "abi/Types.h"
#include "compiler/Compile.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collc::driver {

/// One strategy at one rank count: its heap bytes per rank, or why the spec refuses it, or why
/// calls of the count cannot be made (a size past 63 bits).
struct FootprintCell {
  SyncKind sync;
  std::optional<uint64_t> bytes;
  std::string refused;  // the first line of the compiler's refusal
  std::string tooLarge; // runtime/HeapSize.h's sizesProblem for the count
};

struct FootprintRow {
  int nranks = 2;
  std::vector<FootprintCell> cells;
};

/// The footprint of `spec` for calls of up to `count` elements of `dtype`, at each of `rankCounts`
/// (counts the spec declares) and every strategy collc compiles by default.
std::vector<FootprintRow> footprint(const SpecSource& spec, const std::vector<int>& rankCounts,
                                    uint64_t count, DType dtype);

/// "16,32,72": rank counts for --footprint, each within minRanks..maxRanks, or why not.
Expected<std::vector<int>> parseFootprintRanks(const std::string& text, int minRanks, int maxRanks);

/// "1.5 MiB" style, exact bytes below 1 KiB.
std::string formatBytes(uint64_t bytes);

} // namespace collc::driver

#endif // COLLC_TOOLS_COLLC_FOOTPRINT_H
