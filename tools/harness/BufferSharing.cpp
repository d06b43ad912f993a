#include "tools/harness/BufferSharing.h"

namespace collc {

namespace {

/// "'allreduce_rmsnorm' compiled for sync ll (2 ranks, bf16 sum)": the variant a verdict is of.
std::string variantText(const CompiledCollective& compiled) {
  return "'" + compiled.specName + "' compiled for sync " + std::string(name(compiled.sync)) +
         " (" + std::to_string(compiled.nranks) + " ranks, " + std::string(name(compiled.dtype)) +
         " " + std::string(name(compiled.op)) + ")";
}

std::string checkHint(const CompiledCollective& compiled) {
  return "'collc check " + compiled.specName +
         "' says which strategies and rank counts allow which buffers to be one memory";
}

} // namespace

std::string describe(BufferSharing sharing) {
  if (sharing.inPlace && sharing.auxAliased)
    return "in place and aux aliased";
  if (sharing.inPlace)
    return "in place";
  if (sharing.auxAliased)
    return "aux aliased";
  return "distinct buffers";
}

Error checkBufferSharing(const CompiledCollective& compiled, BufferSharing sharing,
                         uint64_t count) {
  if (sharing.inPlace) {
    if (!compiled.inPlace)
      return makeError("in place (out is in's memory) is not allowed for " + variantText(compiled) +
                       ": the verifier did not prove the " + std::string(name(compiled.sync)) +
                       " variant's lowered program for it, so the runtime would refuse the "
                       "launch; " +
                       checkHint(compiled));
    if (compiled.inputCount(count) != compiled.outputCount(count))
      return makeError(
          "in place needs an input and an output of one size, but " + variantText(compiled) +
          " takes " + std::to_string(compiled.inputCount(count)) + " elements in and " +
          std::to_string(compiled.outputCount(count)) + " out for n = " + std::to_string(count));
  }
  if (sharing.auxAliased) {
    if (compiled.auxAliases.empty())
      return makeError(
          "aliased aux buffers were asked for, but " + variantText(compiled) +
          (compiled.aux.empty()
               ? " has no aux buffers"
               : " allows no pair of its aux buffers to be one memory; " + checkHint(compiled)));
    std::vector<int> seen(compiled.aux.size(), 0);
    for (const auto& [written, read] : compiled.auxAliases) {
      const int auxCount = int(compiled.aux.size());
      if (written < 0 || read < 0 || written >= auxCount || read >= auxCount || written == read)
        return makeError("the aux aliases of " + variantText(compiled) +
                         " name buffers it does not have");
      const AuxBuffer& w = compiled.aux[size_t(written)];
      const AuxBuffer& r = compiled.aux[size_t(read)];
      if (++seen[size_t(written)] > 1 || ++seen[size_t(read)] > 1)
        return makeError("aux buffer '" + (seen[size_t(written)] > 1 ? w.name : r.name) + "' of " +
                         variantText(compiled) +
                         " is in two pairs that may be one memory; aliasing both would make "
                         "a third pair nobody proved");
      if (w.elements(count) != r.elements(count))
        return makeError("aux buffers '" + w.name + "' and '" + r.name + "' of " +
                         variantText(compiled) + " hold " + std::to_string(w.elements(count)) +
                         " and " + std::to_string(r.elements(count)) +
                         " elements: they cannot be one memory");
    }
  }
  // The runtime's rule (BufferOverlap.h): two or more pairs at once only as the whole set proved
  // together.
  const size_t aliased =
      (sharing.inPlace ? 1 : 0) + (sharing.auxAliased ? compiled.auxAliases.size() : 0);
  const size_t allowed = compiled.auxAliases.size() + (compiled.inPlace ? 1 : 0);
  if (aliased > 1 && !compiled.aliasesTogether)
    return makeError(describe(sharing) + " makes " + std::to_string(aliased) +
                     " pairs of buffers one memory, but the lowered program of " +
                     variantText(compiled) +
                     " was proved for each pair alone, not several at once: ask for one");
  if (aliased > 1 && aliased != allowed)
    return makeError(describe(sharing) + " makes " + std::to_string(aliased) +
                     " pairs of buffers one memory, but the lowered program of " +
                     variantText(compiled) + " was proved for several at once only as all " +
                     std::to_string(allowed) + " together" +
                     (sharing.inPlace ? "" : ": ask for in place too"));
  return Error::success();
}

std::vector<int> auxMemoryOwners(const CompiledCollective& compiled, BufferSharing sharing) {
  std::vector<int> owners;
  for (size_t k = 0; k < compiled.aux.size(); ++k)
    owners.push_back(int(k));
  if (!sharing.auxAliased)
    return owners;
  for (const auto& [written, read] : compiled.auxAliases)
    if (written >= 0 && read >= 0 && size_t(written) < owners.size() &&
        size_t(read) < owners.size())
      owners[size_t(written)] = read;
  return owners;
}

} // namespace collc
