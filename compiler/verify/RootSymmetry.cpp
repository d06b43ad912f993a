#include "compiler/verify/RootSymmetry.h"

#include <algorithm>
#include <set>
#include <utility>

namespace collc::calls {
namespace {

/// How a buffer's slot index follows a renaming of ranks: kept (one slot, or slots not indexed by
/// rank), or renamed like the ranks (a slot per sender, `slot[rank]`). Decided at the first slot
/// of the buffer compared, then held to.
enum class SlotRule { Unknown, Kept, Renamed };

class RotationCheck {
public:
  RotationCheck(int nranks, const std::vector<SlotKey>& slots) : nranks_(nranks), slots_(slots) {}

  /// The event of `rotated` that is event i of `base` renamed by `by`, for every i; empty where
  /// the two are no renaming of each other.
  std::vector<int> matchEvents(const std::vector<Event>& base, const std::vector<Event>& rotated,
                               int by) {
    if (base.size() != rotated.size())
      return {};
    // Events come step after step, rank after rank: a (step, rank) group is contiguous.
    const auto groups = [&](const std::vector<Event>& events) {
      std::map<std::pair<int, int>, std::vector<int>> byGroup;
      for (size_t i = 0; i < events.size(); ++i)
        byGroup[{events[i].step, events[i].rank}].push_back(int(i));
      return byGroup;
    };
    const auto baseGroups = groups(base);
    const auto rotatedGroups = groups(rotated);
    if (baseGroups.size() != rotatedGroups.size())
      return {};
    std::vector<int> map(base.size(), -1);
    for (const auto& [key, indices] : baseGroups) {
      auto it = rotatedGroups.find({key.first, (key.second + by) % nranks_});
      if (it == rotatedGroups.end() || it->second.size() != indices.size())
        return {};
      for (size_t k = 0; k < indices.size(); ++k) {
        const int from = indices[k], to = it->second[k];
        if (!sameEvent(base[size_t(from)], rotated[size_t(to)], by))
          return {};
        map[size_t(from)] = to;
      }
    }
    return map;
  }

private:
  bool sameEvent(const Event& a, const Event& b, int by) {
    if (a.loc.getPointer() != b.loc.getPointer() || a.barrier != b.barrier ||
        a.fullBarrier != b.fullBarrier || a.keep != b.keep || a.reads.size() != b.reads.size() ||
        !sameSlot(a.writeSlot, b.writeSlot, by))
      return false;
    for (size_t k = 0; k < a.reads.size(); ++k) {
      const ReadRef &x = a.reads[k], &y = b.reads[k];
      if (x.load != y.load || x.reg != y.reg || !sameSlot(x.slot, y.slot, by))
        return false;
    }
    return true;
  }

  /// Whether slot `b` is slot `a` with its owner (and, by the buffer's rule, its index) renamed.
  bool sameSlot(int a, int b, int by) {
    if (a < 0 || b < 0)
      return a == b;
    const SlotKey &x = slots_[size_t(a)], &y = slots_[size_t(b)];
    if (x.buffer != y.buffer || y.owner != (x.owner + by) % nranks_)
      return false;
    SlotRule& rule = rules_[x.buffer];
    const bool kept = y.slot == x.slot;
    const bool renamed = x.slot < nranks_ && y.slot == (x.slot + by) % nranks_;
    if (rule == SlotRule::Unknown)
      rule = kept ? SlotRule::Kept : renamed ? SlotRule::Renamed : SlotRule::Unknown;
    // One rule a buffer for every root: the renaming by one root composed with another's is
    // then a third's, as the renaming of a whole sequence needs.
    return rule == SlotRule::Kept ? kept : renamed;
  }

  const int nranks_;
  const std::vector<SlotKey>& slots_;
  std::map<ir::BufferId, SlotRule> rules_;
};

using ClassKey = std::pair<std::vector<bool>, Sources>;

/// Root 0's class renamed onto the events of another root (`map`: base event -> its event).
ClassKey renamed(const Configuration& c, const std::vector<int>& map) {
  ClassKey key;
  key.first.assign(c.nonEmpty.size(), false);
  key.second.assign(c.sources.size(), {});
  for (size_t i = 0; i < c.nonEmpty.size(); ++i) {
    const size_t to = size_t(map[i]);
    key.first[to] = c.nonEmpty[i];
    auto& reads = key.second[to];
    for (const std::vector<int>& sources : c.sources[i]) {
      std::vector<int> moved;
      for (int j : sources)
        moved.push_back(map[size_t(j)]);
      std::sort(moved.begin(), moved.end());
      reads.push_back(std::move(moved));
    }
  }
  return key;
}

} // namespace

bool rootsAreRotations(int nranks, const std::vector<std::vector<Event>>& skeletons,
                       const std::vector<Configuration>& configurations,
                       const std::vector<SlotKey>& slots) {
  if (int(skeletons.size()) != nranks)
    return false;
  RotationCheck check(nranks, slots);
  for (int root = 1; root < nranks; ++root) {
    const std::vector<int> map = check.matchEvents(skeletons[0], skeletons[size_t(root)], root);
    if (map.empty() && !skeletons[0].empty())
      return false;
    std::set<ClassKey> fromBase, own;
    for (const Configuration& c : configurations) {
      if (c.root == 0)
        fromBase.insert(renamed(c, map));
      else if (c.root == root)
        own.insert(ClassKey{c.nonEmpty, c.sources});
    }
    if (fromBase != own)
      return false;
  }
  return true;
}

} // namespace collc::calls
