#include "compiler/verify/CallRenaming.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <unordered_map>

namespace collc::calls {
namespace {

constexpr int kNoImage = -2; // a slot the renaming makes of one that the call does not name

/// Events that fix what the events after them in their rank's step know: barriers, and
/// statements that fill a register.
bool isAnchor(const Event& e) {
  return e.barrier || !e.keep.empty();
}

} // namespace

CallRenaming::CallRenaming(const std::vector<Event>& events, const std::vector<SlotKey>& slots,
                           const SlotIds& slotIds)
    : events_(events), slots_(slots), slotIds_(slotIds) {
  std::unordered_map<std::string, int> names{{"", 0}};
  auto nameId = [&](const std::string& name) {
    return names.emplace(name, int(names.size())).first->second;
  };
  shapes_.reserve(events.size());
  for (const Event& e : events) {
    steps_ = std::max(steps_, e.step + 1);
    shapes_.push_back(Shape{e.loc.getPointer(), (e.barrier ? 1 : 0) | (e.fullBarrier ? 2 : 0),
                            nameId(e.keep), e.writeSlot, reads_.size(), e.reads.size()});
    for (const ReadRef& read : e.reads)
      reads_.push_back(Read{int(read.load), nameId(read.reg), read.slot});
  }
}

std::vector<int> CallRenaming::slotImages(const std::vector<int>& to, bool renameFirst,
                                          const std::vector<int>& picked) const {
  const int64_t nranks = int64_t(to.size());
  auto image = [&](const SlotKey& x, bool renameIndex) {
    if (x.owner < 0 || x.owner >= nranks || (renameIndex && (x.slot < 0 || x.slot >= nranks)))
      return kNoImage;
    const SlotKey y{to[size_t(x.owner)], x.buffer, renameIndex ? to[size_t(x.slot)] : x.slot};
    auto it = slotIds_.find(y);
    return it == slotIds_.end() ? kNoImage : it->second;
  };
  // The slots the picked events name; their buffers' rules.
  std::vector<int> named;
  std::vector<int> images(slots_.size(), kNoImage);
  auto name = [&](int slot) {
    if (slot >= 0 && images[size_t(slot)] == kNoImage) {
      images[size_t(slot)] = 0;
      named.push_back(slot);
    }
  };
  for (int e : picked) {
    const Shape& s = shapes_[size_t(e)];
    name(s.writeSlot);
    for (size_t r = 0; r < s.reads; ++r)
      name(reads_[s.firstRead + r].slot);
  }
  // Each slot by `renameFirst`'s rule, then by the other where a slot of its buffer has no image.
  std::map<ir::BufferId, bool> firstFits;
  for (int slot : named) {
    const SlotKey& x = slots_[size_t(slot)];
    images[size_t(slot)] = image(x, renameFirst);
    auto [it, added] = firstFits.emplace(x.buffer, true);
    it->second = it->second && images[size_t(slot)] != kNoImage;
  }
  for (int slot : named) {
    const SlotKey& x = slots_[size_t(slot)];
    if (!firstFits[x.buffer])
      images[size_t(slot)] = image(x, !renameFirst);
  }
  return images;
}

namespace {

/// An event as the matching compares it: its shape, its slots moved, its reads sorted, and in
/// which classes it touches elements.
struct Key {
  const char* loc;
  int flags, keep, writeSlot;
  uint64_t nonEmpty;
  size_t firstRead, count; // its reads in the side's array of reads, sorted
};

} // namespace

std::vector<int> CallRenaming::matchEvents(const std::vector<int>& to, const std::vector<int>& base,
                                           const std::vector<Configuration>& baseClasses,
                                           const std::vector<int>& other,
                                           const std::vector<Configuration>& otherClasses,
                                           const std::vector<int>& images) const {
  if (base.size() != other.size() || baseClasses.size() != otherClasses.size() ||
      baseClasses.size() > 64)
    return {};
  auto slotOf = [&](int slot, bool moved) {
    return slot < 0 || !moved ? slot : images[size_t(slot)];
  };
  // Each picked event's key, and its reads (slots moved for `base`) sorted.
  std::vector<Read> baseReads, otherReads;
  auto keysOf = [&](const std::vector<int>& picked, const std::vector<Configuration>& classes,
                    bool moved, std::vector<Read>& reads) {
    std::vector<Key> keys;
    keys.reserve(picked.size());
    for (size_t i = 0; i < picked.size(); ++i) {
      const Shape& s = shapes_[size_t(picked[i])];
      uint64_t nonEmpty = 0;
      for (size_t c = 0; c < classes.size(); ++c)
        nonEmpty |= uint64_t(classes[c].nonEmpty[i]) << c;
      const size_t first = reads.size();
      for (size_t r = 0; r < s.reads; ++r) {
        Read read = reads_[s.firstRead + r];
        read.slot = slotOf(read.slot, moved);
        reads.push_back(read);
      }
      std::sort(reads.begin() + ptrdiff_t(first), reads.end());
      keys.push_back(
          Key{s.loc, s.flags, s.keep, slotOf(s.writeSlot, moved), nonEmpty, first, s.reads});
    }
    return keys;
  };
  const std::vector<Key> baseKeys = keysOf(base, baseClasses, true, baseReads);
  const std::vector<Key> otherKeys = keysOf(other, otherClasses, false, otherReads);
  auto readsOf = [&](const Key& k, const std::vector<Read>& reads) {
    return std::make_pair(reads.begin() + ptrdiff_t(k.firstRead),
                          reads.begin() + ptrdiff_t(k.firstRead + k.count));
  };
  // Orders keys of one side (`reads` theirs); equal keys of the two sides compare equal.
  auto less = [&](const Key& a, const std::vector<Read>& aReads, const Key& b,
                  const std::vector<Read>& bReads) {
    if (std::tie(a.loc, a.flags, a.keep, a.writeSlot, a.nonEmpty, a.count) !=
        std::tie(b.loc, b.flags, b.keep, b.writeSlot, b.nonEmpty, b.count))
      return std::tie(a.loc, a.flags, a.keep, a.writeSlot, a.nonEmpty, a.count) <
             std::tie(b.loc, b.flags, b.keep, b.writeSlot, b.nonEmpty, b.count);
    const auto [a0, a1] = readsOf(a, aReads);
    const auto [b0, b1] = readsOf(b, bReads);
    return std::lexicographical_compare(a0, a1, b0, b1);
  };
  auto equal = [&](const Key& a, const Key& b) {
    return !less(a, baseReads, b, otherReads) && !less(b, otherReads, a, baseReads);
  };
  // The (step, rank) groups of each side ([step * nranks + rank]: first, end), contiguous as the
  // call's events are.
  const size_t nranks = to.size();
  using Groups = std::vector<std::pair<size_t, size_t>>;
  auto groupsOf = [&](const std::vector<int>& picked, Groups& groups) {
    groups.assign(size_t(steps_) * nranks, {0, 0});
    size_t count = 0;
    for (size_t i = 0; i < picked.size(); ++i) {
      const Event& e = events_[size_t(picked[i])];
      auto& [first, end] = groups[size_t(e.step) * nranks + size_t(e.rank)];
      if (first == end) {
        first = i;
        ++count;
      } else if (end != i) {
        return size_t(0); // not contiguous
      }
      end = i + 1;
    }
    return count;
  };
  Groups baseGroups, otherGroups;
  const size_t baseCount = groupsOf(base, baseGroups);
  if (baseCount == 0 || baseCount != groupsOf(other, otherGroups))
    return {};
  std::vector<int> map(base.size(), -1);
  std::vector<size_t> mine, theirs;
  for (size_t g = 0; g < baseGroups.size(); ++g) {
    const auto range = baseGroups[g];
    const auto onto = otherGroups[g - g % nranks + size_t(to[g % nranks])];
    if (onto.second - onto.first != range.second - range.first)
      return {};
    if (range.first == range.second)
      continue;
    const size_t shift = onto.first - range.first;
    // Anchors in order; the events between two anchors as a multiset.
    for (size_t from = range.first; from < range.second;) {
      size_t end = from;
      while (end < range.second && !isAnchor(events_[size_t(base[end])]))
        ++end;
      mine.clear();
      theirs.clear();
      for (size_t i = from; i < end; ++i) {
        mine.push_back(i);
        theirs.push_back(i + shift);
      }
      // Most often in the same order already; else sorted.
      bool inOrder = true;
      for (size_t k = 0; inOrder && k < mine.size(); ++k)
        inOrder = equal(baseKeys[mine[k]], otherKeys[theirs[k]]);
      if (!inOrder) {
        std::sort(mine.begin(), mine.end(), [&](size_t a, size_t b) {
          return less(baseKeys[a], baseReads, baseKeys[b], baseReads);
        });
        std::sort(theirs.begin(), theirs.end(), [&](size_t a, size_t b) {
          return less(otherKeys[a], otherReads, otherKeys[b], otherReads);
        });
      }
      if (end < range.second) { // the anchor, last in both
        mine.push_back(end);
        theirs.push_back(end + shift);
      }
      for (size_t k = 0; k < mine.size(); ++k) {
        if (!equal(baseKeys[mine[k]], otherKeys[theirs[k]]))
          return {};
        map[mine[k]] = int(theirs[k]);
      }
      from = std::min(end + 1, range.second);
    }
  }
  return map;
}

bool CallRenaming::sameClasses(const std::vector<int>& base,
                               const std::vector<Configuration>& baseClasses,
                               const std::vector<int>& other,
                               const std::vector<Configuration>& otherClasses,
                               const std::vector<int>& map, const std::vector<int>& images) const {
  // Per event, its reads each with the writes it may take (sorted, in `sources`): a multiset of
  // entries to compare, sorted.
  struct Entry {
    Read read;
    size_t first, count;
  };
  std::vector<Entry> mine, theirs;
  std::vector<int> mineSources, theirSources;
  auto entries = [&](const Configuration& c, const std::vector<int>& picked, size_t i, bool moved,
                     std::vector<Entry>& out, std::vector<int>& sources) {
    out.clear();
    sources.clear();
    const Shape& s = shapes_[size_t(picked[i])];
    for (size_t r = 0; r < s.reads; ++r) {
      Read read = reads_[s.firstRead + r];
      const size_t first = sources.size();
      for (int j : c.sources[i][r])
        sources.push_back(moved ? map[size_t(j)] : j);
      std::sort(sources.begin() + ptrdiff_t(first), sources.end());
      if (moved && read.slot >= 0)
        read.slot = images[size_t(read.slot)];
      out.push_back(Entry{read, first, sources.size() - first});
    }
    std::sort(out.begin(), out.end(), [&](const Entry& x, const Entry& y) {
      if (!(x.read == y.read))
        return x.read < y.read;
      return std::lexicographical_compare(
          sources.begin() + ptrdiff_t(x.first), sources.begin() + ptrdiff_t(x.first + x.count),
          sources.begin() + ptrdiff_t(y.first), sources.begin() + ptrdiff_t(y.first + y.count));
    });
  };
  auto same = [&] {
    if (mine.size() != theirs.size())
      return false;
    for (size_t k = 0; k < mine.size(); ++k)
      if (!(mine[k].read == theirs[k].read) ||
          !std::equal(mineSources.begin() + ptrdiff_t(mine[k].first),
                      mineSources.begin() + ptrdiff_t(mine[k].first + mine[k].count),
                      theirSources.begin() + ptrdiff_t(theirs[k].first),
                      theirSources.begin() + ptrdiff_t(theirs[k].first + theirs[k].count)))
        return false;
    return true;
  };
  for (size_t c = 0; c < baseClasses.size(); ++c)
    for (size_t i = 0; i < base.size(); ++i) {
      const size_t j = size_t(map[i]);
      if (baseClasses[c].nonEmpty[i] != otherClasses[c].nonEmpty[j])
        return false;
      // Most statements read once, the writes of at most one statement: compared as they are.
      // (Matched events read alike: their reads, moved, are the same.)
      const std::vector<std::vector<int>>& baseReads = baseClasses[c].sources[i];
      const std::vector<std::vector<int>>& otherReads = otherClasses[c].sources[j];
      if (baseReads.size() == 1 && otherReads.size() == 1 && baseReads[0].size() <= 1 &&
          otherReads[0].size() <= 1) {
        if (baseReads[0].size() != otherReads[0].size() ||
            (!baseReads[0].empty() && map[size_t(baseReads[0][0])] != otherReads[0][0]))
          return false;
        continue;
      }
      entries(baseClasses[c], base, i, true, mine, mineSources);
      entries(otherClasses[c], other, j, false, theirs, theirSources);
      if (!same())
        return false;
    }
  return true;
}

bool CallRenaming::isRenaming(const std::vector<int>& to, const std::vector<int>& base,
                              const std::vector<Configuration>& baseClasses,
                              const std::vector<int>& other,
                              const std::vector<Configuration>& otherClasses) const {
  // Slots indexed by rank (a slot per sender) are renamed, the others kept; a buffer's rule is
  // tried both ways: renamed where it can be, else kept where it can be.
  for (bool renameFirst : {true, false}) {
    const std::vector<int> images = slotImages(to, renameFirst, base);
    const std::vector<int> map = matchEvents(to, base, baseClasses, other, otherClasses, images);
    if ((!map.empty() || base.empty()) &&
        sameClasses(base, baseClasses, other, otherClasses, map, images))
      return true;
  }
  return false;
}

} // namespace collc::calls
