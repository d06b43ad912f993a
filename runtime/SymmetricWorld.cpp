#include "runtime/SymmetricWorld.h"

#include <algorithm>
#include <fmt/format.h>

namespace collc {

SymmetricWorld::~SymmetricWorld() = default;

int SymmetricWorld::localIndex(int rank) const {
  const std::vector<int>& local = localRanks();
  auto it = std::find(local.begin(), local.end(), rank);
  return it == local.end() ? -1 : static_cast<int>(it - local.begin());
}

Expected<uint64_t> SymmetricWorld::allocate(uint64_t bytes, uint64_t align) {
  auto error = [](const std::string& message) { return makeError(message); };
  if (align == 0 || (align & (align - 1)) != 0)
    return error("symmetric heap: allocation alignment " + std::to_string(align) +
                 " is not a power of two");
  uint64_t offset = (used_ + align - 1) & ~(align - 1);
  if (offset < used_ || offset > heapBytes_ || bytes > heapBytes_ - offset)
    return error("symmetric heap exhausted: " + std::to_string(bytes) +
                 " bytes asked for at offset " + std::to_string(offset) + ", the heap holds " +
                 std::to_string(heapBytes_) + " bytes per rank (" + std::to_string(used_) +
                 " in use)");
  used_ = offset + bytes;
  return offset;
}

void SymmetricWorld::releaseTo(uint64_t mark) {
  if (mark < used_)
    used_ = mark;
}

Error SymmetricWorld::allGatherRanks(std::string_view, Span<uint64_t> table, unsigned width) {
  if (table.size() != size_t(nranks()) * width)
    return makeError(fmt::format("allGatherRanks: a table of {} values for {} ranks x {}",
                                 table.size(), nranks(), width));
  return Error::success();
}

} // namespace collc
