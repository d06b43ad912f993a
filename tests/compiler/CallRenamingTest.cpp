// The proof across calls takes pair k of chunks as decided by pair 1 where pair k is pair 1 with
// ranks 1 and k swapped (compiler/verify/CallRenaming.h). Here on a call built by hand, a two-shot
// at 4 ranks: the pairs of its chunks are renamings of each other, the order of a step's
// statements between two anchors does not matter, and anything else that differs (a slot, the
// order of anchors, the writes a read may take, which statements touch elements) does.
#include "compiler/verify/CallRenaming.h"

#include <gtest/gtest.h>
#include <string>

namespace collc::calls {
namespace {

constexpr int kRanks = 4;
// Places in a source the events point at: what tells statements apart.
const char kSource[] = "put reduce send gather";
const char* const kPut = kSource;
const char* const kReduce = kSource + 4;
const char* const kSend = kSource + 11;
const char* const kGather = kSource + 16;

constexpr ir::BufferId kIn = 0, kInbox = 1, kResult = 2, kOut = 3;

/// One call of a two-shot: rank r puts chunk p to p's inbox[r]; rank p reduces its chunk (a
/// register) and sends it to every peer's result; every rank gathers each peer's chunk. The chunk
/// of each event, and the writes each read may take.
struct Call {
  std::vector<Event> events;
  std::vector<int> chunkOf;
  Sources sources;
  std::vector<SlotKey> slots;
  SlotIds slotIds;

  int slot(int owner, ir::BufferId buffer, int64_t index) {
    const SlotKey key{owner, buffer, index};
    auto [it, added] = slotIds.emplace(key, int(slots.size()));
    if (added)
      slots.push_back(key);
    return it->second;
  }
  int add(int step, int rank, const char* at, int chunk, std::vector<ReadRef> reads, int write,
          std::string keep = "") {
    Event e;
    e.step = step;
    e.rank = rank;
    e.loc = llvm::SMLoc::getFromPointer(at);
    e.reads = std::move(reads);
    e.writeSlot = write;
    e.keep = std::move(keep);
    events.push_back(std::move(e));
    chunkOf.push_back(chunk);
    sources.emplace_back(events.back().reads.size());
    return int(events.size()) - 1;
  }
};

ReadRef slotRead(int slot) {
  return ReadRef{slot, ir::LoadKind::Plain, ""};
}
ReadRef registerRead(const std::string& name) {
  return ReadRef{-1, ir::LoadKind::Plain, name};
}

Call twoShot() {
  Call c;
  std::map<std::pair<int, int>, int> put;  // (sender, chunk) -> event
  std::map<int, int> sent;                 // (chunk) -> the event that sends it to rank 0 .. n
  std::map<std::pair<int, int>, int> send; // (owner, to) -> event
  for (int r = 0; r < kRanks; ++r)
    for (int i = 1; i < kRanks; ++i) { // peers from r + 1 on, as `for p in peers` goes
      const int p = (r + i) % kRanks;
      put[{r, p}] = c.add(0, r, kPut, p, {slotRead(c.slot(r, kIn, 0))}, c.slot(p, kInbox, r));
    }
  for (int p = 0; p < kRanks; ++p) {
    std::vector<ReadRef> reads = {slotRead(c.slot(p, kIn, 0))};
    std::vector<int> from = {-1};
    for (int i = 1; i < kRanks; ++i) {
      const int q = (p + i) % kRanks;
      reads.push_back(slotRead(c.slot(p, kInbox, q)));
      from.push_back(put[{q, p}]);
    }
    const int reduce = c.add(1, p, kReduce, p, reads, c.slot(p, kOut, 0), "sum");
    for (size_t k = 1; k < from.size(); ++k)
      c.sources[size_t(reduce)][k] = {from[k]};
    for (int i = 1; i < kRanks; ++i) {
      const int q = (p + i) % kRanks;
      send[{p, q}] = c.add(1, p, kSend, p, {registerRead("sum")}, c.slot(q, kResult, 0));
    }
  }
  for (int r = 0; r < kRanks; ++r)
    for (int i = 1; i < kRanks; ++i) {
      const int q = (r + i) % kRanks;
      const int gather =
          c.add(2, r, kGather, q, {slotRead(c.slot(r, kResult, 0))}, c.slot(r, kOut, 0));
      c.sources[size_t(gather)][0] = {send[{q, r}]};
    }
  return c;
}

/// Pair k as the proof makes it: the events of chunks 0 and k, both holding elements or chunk 0
/// alone.
struct Pair {
  std::vector<int> kept;
  std::vector<Configuration> classes;
};

Pair pairOf(const Call& c, int k) {
  Pair pair;
  std::vector<int> indexOf(c.events.size(), -1);
  for (size_t e = 0; e < c.events.size(); ++e)
    if (c.chunkOf[e] == 0 || c.chunkOf[e] == k) {
      indexOf[e] = int(pair.kept.size());
      pair.kept.push_back(int(e));
    }
  Configuration both{0, 0, std::vector<bool>(pair.kept.size(), true), {}};
  for (int e : pair.kept) {
    both.sources.emplace_back();
    for (const std::vector<int>& writes : c.sources[size_t(e)]) {
      both.sources.back().emplace_back();
      for (int w : writes)
        both.sources.back().back().push_back(indexOf[size_t(w)]);
    }
  }
  Configuration zero = both;
  for (size_t i = 0; i < pair.kept.size(); ++i)
    if (c.chunkOf[size_t(pair.kept[i])] == k) {
      zero.nonEmpty[i] = false;
      for (auto& writes : zero.sources[i])
        writes.clear();
    }
  pair.classes = {both, zero};
  return pair;
}

std::vector<int> swapping(int k) {
  std::vector<int> to(kRanks);
  for (int x = 0; x < kRanks; ++x)
    to[size_t(x)] = x == 1 ? k : x == k ? 1 : x;
  return to;
}

bool renames(const Call& c, const Pair& first, const Pair& other, int k) {
  const CallRenaming renaming(c.events, c.slots, c.slotIds);
  return renaming.isRenaming(swapping(k), first.kept, first.classes, other.kept, other.classes);
}

TEST(CallRenaming, EveryPairOfATwoShotIsPairOneRenamed) {
  const Call c = twoShot();
  const Pair first = pairOf(c, 1);
  for (int k = 2; k < kRanks; ++k)
    EXPECT_TRUE(renames(c, first, pairOf(c, k), k)) << k;
  // Swapping 1 and 2 does not make pair 1 of pair 1, nor pair 3 of pair 1.
  EXPECT_FALSE(renames(c, first, first, 2));
  EXPECT_FALSE(renames(c, first, pairOf(c, 3), 2));
}

TEST(CallRenaming, StatementsBetweenAnchorsMayComeInAnyOrder) {
  // Rank 3 sends its chunk to its peers in the opposite order: nothing a statement knows
  // changes, since each reads what the reduce before them left.
  Call c = twoShot();
  const Pair first = pairOf(c, 1);
  std::vector<size_t> sends;
  for (size_t e = 0; e < c.events.size(); ++e)
    if (c.events[e].rank == 3 && c.events[e].loc.getPointer() == kSend)
      sends.push_back(e);
  ASSERT_EQ(sends.size(), 3u);
  std::swap(c.events[sends[0]], c.events[sends[2]]);
  // The gathers that read those sends follow them.
  for (auto& reads : c.sources)
    for (auto& writes : reads)
      for (int& w : writes)
        w = w == int(sends[0]) ? int(sends[2]) : w == int(sends[2]) ? int(sends[0]) : w;
  EXPECT_TRUE(renames(c, first, pairOf(c, 3), 3));
}

TEST(CallRenaming, WhatDiffersIsSeen) {
  const Call base = twoShot();
  const Pair first = pairOf(base, 1);
  ASSERT_TRUE(renames(base, first, pairOf(base, 2), 2));
  auto eventOf = [](const Call& c, int rank, const char* at, int chunk) {
    for (size_t e = 0; e < c.events.size(); ++e)
      if (c.events[e].rank == rank && c.events[e].loc.getPointer() == at && c.chunkOf[e] == chunk)
        return e;
    ADD_FAILURE() << "no such event";
    return size_t(0);
  };
  {
    // Rank 3 puts chunk 2 into the wrong sender's slot of rank 2's inbox.
    Call c = base;
    c.events[eventOf(c, 3, kPut, 2)].writeSlot = c.slot(2, kInbox, 0);
    EXPECT_FALSE(renames(c, pairOf(c, 1), pairOf(c, 2), 2));
  }
  {
    // Rank 2 sends before it reduces: an anchor moved.
    Call c = base;
    const size_t reduce = eventOf(c, 2, kReduce, 2);
    std::swap(c.events[reduce], c.events[reduce + 1]);
    std::swap(c.chunkOf[reduce], c.chunkOf[reduce + 1]);
    std::swap(c.sources[reduce], c.sources[reduce + 1]);
    for (auto& reads : c.sources)
      for (auto& writes : reads)
        for (int& w : writes)
          w = w == int(reduce) ? int(reduce) + 1 : w == int(reduce) + 1 ? int(reduce) : w;
    EXPECT_FALSE(renames(c, pairOf(c, 1), pairOf(c, 2), 2));
  }
  {
    // Rank 2's reduce may not take rank 3's put.
    Call c = base;
    for (auto& writes : c.sources[eventOf(c, 2, kReduce, 2)])
      if (!writes.empty() && c.events[size_t(writes[0])].rank == 3)
        writes.clear();
    EXPECT_FALSE(renames(c, pairOf(c, 1), pairOf(c, 2), 2));
  }
  {
    // A class in which one of pair 2's statements touches no element.
    Pair second = pairOf(base, 2);
    second.classes[0].nonEmpty[0] = false;
    EXPECT_FALSE(renames(base, first, second, 2));
  }
  {
    // A register read under another name.
    Call c = base;
    c.events[eventOf(c, 2, kSend, 2)].reads[0].reg = "other";
    EXPECT_FALSE(renames(c, pairOf(c, 1), pairOf(c, 2), 2));
  }
}

} // namespace
} // namespace collc::calls
