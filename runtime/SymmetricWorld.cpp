#include "runtime/SymmetricWorld.h"

#include <algorithm>

namespace collc {

SymmetricWorld::~SymmetricWorld() = default;

int SymmetricWorld::localIndex(int rank) const {
  const std::vector<int>& local = localRanks();
  auto it = std::find(local.begin(), local.end(), rank);
  return it == local.end() ? -1 : static_cast<int>(it - local.begin());
}

llvm::Expected<uint64_t> SymmetricWorld::allocate(uint64_t bytes, uint64_t align) {
  auto error = [](const llvm::Twine& message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (align == 0 || (align & (align - 1)) != 0)
    return error("symmetric heap: allocation alignment " + llvm::Twine(align) +
                 " is not a power of two");
  uint64_t offset = (used_ + align - 1) & ~(align - 1);
  if (offset < used_ || offset > heapBytes_ || bytes > heapBytes_ - offset)
    return error("symmetric heap exhausted: " + llvm::Twine(bytes) + " bytes asked for at offset " +
                 llvm::Twine(offset) + ", the heap holds " + llvm::Twine(heapBytes_) +
                 " bytes per rank (" + llvm::Twine(used_) + " in use)");
  used_ = offset + bytes;
  return offset;
}

void SymmetricWorld::releaseTo(uint64_t mark) {
  if (mark < used_)
    used_ = mark;
}

llvm::Error SymmetricWorld::allGatherRanks(llvm::StringRef, llvm::MutableArrayRef<uint64_t> table,
                                           unsigned width) {
  if (table.size() != size_t(nranks()) * width)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "allGatherRanks: a table of %zu values for %d ranks x %u",
                                   table.size(), nranks(), width);
  return llvm::Error::success();
}

} // namespace collc
