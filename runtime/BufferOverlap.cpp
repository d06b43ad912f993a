#include "runtime/BufferOverlap.h"

#include "abi/SizeMath.h"

#include <string>
#include <vector>

namespace collc {
namespace {

struct Extent {
  const char* name = ""; // "in", "out" or the spec's aux name (the compiled collective owns it)
  uintptr_t begin = 0, end = 0;
  int aux = -1; // index into CompiledCollective::aux; -1 for in and out
};

bool overlaps(const Extent& a, const Extent& b) {
  return a.begin < b.end && b.begin < a.end;
}

/// Whether the verifier proved `a` and `b` as one memory (they must then coincide exactly).
bool provedAsOne(const CompiledCollective& compiled, const Extent& a, const Extent& b) {
  if (a.begin != b.begin || a.end != b.end)
    return false;
  if (a.aux < 0 && b.aux < 0) // in and out
    return compiled.inPlace;
  if (a.aux < 0 || b.aux < 0)
    return false;
  for (const auto& [written, read] : compiled.auxAliases)
    if ((written == a.aux && read == b.aux) || (written == b.aux && read == a.aux))
      return true;
  return false;
}

} // namespace

Error checkBufferOverlap(const CompiledCollective& compiled, const void* in, const void* out,
                         Span<void* const> aux, uint64_t count) {
  if (count == 0)
    return Error::success();
  // Checked on every launch: one allocation, no copies of the names.
  std::vector<Extent> extents;
  extents.reserve(2 + aux.size());
  const char* tooLarge = nullptr;
  // Each buffer with its own element type's size (an fp8 output is a byte an element, an fp4 one
  // half a byte).
  auto add = [&](const char* name, const void* base, uint64_t elems, ElementType type,
                 int auxIndex) {
    if (!base || elems == 0)
      return;
    const uint64_t bytes = bytesOf(type, elems);
    const auto begin = reinterpret_cast<uintptr_t>(base);
    if (!fitsSize(bytes) || begin > UINTPTR_MAX - bytes) {
      if (!tooLarge)
        tooLarge = name;
      return;
    }
    extents.push_back({name, begin, begin + uintptr_t(bytes), auxIndex});
  };
  add("in", in, compiled.inputCount(count), elementTypeOf(compiled.dtype), -1);
  add("out", out, compiled.outputCount(count), compiled.outputType(), -1);
  for (size_t k = 0; k < aux.size() && k < compiled.aux.size(); ++k)
    add(compiled.aux[k].name.c_str(), aux[k], compiled.aux[k].elements(count), compiled.auxType(k),
        int(k));
  if (tooLarge)
    return makeError(std::string("buffer '") + tooLarge + "' of a call of " +
                     std::to_string(count) + " elements runs past the end of the address space");
  size_t aliased = 0; // pairs passed as one memory
  for (size_t i = 0; i < extents.size(); ++i)
    for (size_t j = i + 1; j < extents.size(); ++j) {
      const Extent& a = extents[i];
      const Extent& b = extents[j];
      if (!overlaps(a, b))
        continue;
      if (provedAsOne(compiled, a, b)) {
        ++aliased;
        continue;
      }
      const bool same = a.begin == b.begin && a.end == b.end;
      std::string message = std::string("buffers '") + a.name + "' and '" + b.name + "' ";
      message += same ? "are the same memory" : "overlap";
      message += " in a call of " + std::to_string(count) + " elements; ";
      if (same)
        message += "the verifier did not prove the spec for that (collc check lists the pairs "
                   "that may be one memory): pass distinct buffers";
      else
        message +=
            "buffers may only be distinct, or exactly one memory where collc check allows it";
      return makeError(message);
    }
  // Each pair was proved on its own; two or more at once only as the whole set, proved together.
  const size_t allowed = compiled.auxAliases.size() + (compiled.inPlace ? 1 : 0);
  if (aliased > 1 && !(compiled.aliasesTogether && aliased == allowed))
    return makeError(std::to_string(aliased) +
                     " pairs of buffers are the same memory in one call; "
                     "the verifier proved each pair alone" +
                     std::string(compiled.aliasesTogether
                                     ? ", and all " + std::to_string(allowed) + " at once only"
                                     : ", not several at once") +
                     " (collc check says which): pass distinct buffers for the others");
  return Error::success();
}

} // namespace collc
