#include "abi/CollectiveShapes.h"

#include "abi/SizeMath.h"

namespace collc {

bool hasRoot(CollectiveKind kind) {
  return kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce;
}

bool reduces(CollectiveKind kind) {
  return kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter ||
         kind == CollectiveKind::Reduce;
}

bool inputIsPerRankBlocks(CollectiveKind kind) {
  return kind == CollectiveKind::ReduceScatter || kind == CollectiveKind::AllToAll;
}

bool outputIsPerRankBlocks(CollectiveKind kind) {
  return kind == CollectiveKind::AllGather || kind == CollectiveKind::AllToAll;
}

uint64_t inputElems(CollectiveKind kind, uint64_t count, int nranks) {
  return inputIsPerRankBlocks(kind) ? sizeMul(count, uint64_t(nranks)) : asSize(count);
}

uint64_t outputElems(CollectiveKind kind, uint64_t count, int nranks) {
  return outputIsPerRankBlocks(kind) ? sizeMul(count, uint64_t(nranks)) : asSize(count);
}

uint64_t chunkSize(uint64_t length, int nranks) {
  return sizeAlignUp(sizeDivCeil(length, uint64_t(nranks)), kChunkAlignElems);
}

} // namespace collc
