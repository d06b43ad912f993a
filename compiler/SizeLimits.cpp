#include "compiler/SizeLimits.h"

#include "abi/SizeMath.h"
#include "compiler/ElementCounts.h"
#include "compiler/RowEpilogue.h"

#include <algorithm>

namespace collc {

bool checkSizesFit(const ir::Program& lowered, DType dtype, int nranks, int64_t rowLength,
                   Diagnostics& diags) {
  const uint64_t smallest = uint64_t(std::max<int64_t>(1, rowLength));
  const uint64_t copies = uint64_t(std::max(1, lowered.scratchCopies));
  bool fits = true;
  auto refuse = [&](llvm::SMLoc loc, const std::string& what) {
    diags.error(loc, what + " takes more than 2^63 - 1 bytes per rank for a call of n = " +
                         std::to_string(smallest) + " (" + std::string(name(dtype)) + ", " +
                         std::to_string(nranks) +
                         " ranks), and more for larger calls: collc refuses sizes that do not fit "
                         "in 63 bits");
    fits = false;
  };
  // Sema checked every size's form at row length 1; a size that uses the row length may lose it
  // at the variant's (round_up(n / hidden, hidden % 64) at 64 rounds up to zero).
  for (const ir::Buffer& buffer : lowered.buffers) {
    if (!buffer.slotElems)
      continue;
    ir::Env env;
    env.nranks = nranks;
    env.rowLength = rowLength;
    std::string why;
    if (!ir::sizeForm(buffer.slotElems, env, &why)) {
      diags.error(buffer.loc, "the size of '" + buffer.name + "' cannot be computed for this " +
                                  "variant (" + std::to_string(nranks) + " ranks, row length " +
                                  std::to_string(rowLength) + "): " + why);
      fits = false;
    }
  }
  if (!fits)
    return false;
  uint64_t total = 0;
  for (ir::BufferId id : lowered.scratchBuffers()) {
    const ir::Buffer& buffer = lowered.buffer(id);
    const uint64_t bytes =
        sizeMul(describeScratch(buffer, nranks, dtype, rowLength).bytes(smallest), copies);
    if (!fitsSize(bytes))
      refuse(buffer.loc, "scratch '" + buffer.name + "' (" + std::to_string(copies) + " copies)");
    total = sizeAdd(total, bytes);
  }
  if (fits && !fitsSize(total))
    refuse(lowered.loc, "the scratch of '" + lowered.name + "' (every buffer, " +
                            std::to_string(copies) + " copies)");
  const std::vector<AuxBuffer> aux = describeAuxBuffers(lowered, nranks, rowLength);
  for (const ir::Buffer& buffer : lowered.buffers)
    if (buffer.role == ir::BufferRole::Aux && size_t(buffer.auxIndex) < aux.size() &&
        !fitsSize(bytesOf(buffer.fixedType.value_or(elementTypeOf(dtype)),
                          aux[size_t(buffer.auxIndex)].elements(smallest))))
      refuse(buffer.loc, "buffer '" + buffer.name + "'");
  return fits;
}

} // namespace collc
