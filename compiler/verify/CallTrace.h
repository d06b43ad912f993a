// What the proof across calls knows of one call of a lowered program: the events each rank runs
// (AcrossCalls.cpp's Tracer records them) and the classes a call falls in over every count. Shared
// by the proof and by the check that lets it start from root 0 alone (RootSymmetry.h).
#ifndef COLLC_COMPILER_VERIFY_CALLTRACE_H
#define COLLC_COMPILER_VERIFY_CALLTRACE_H

#include "compiler/ir/IR.h"

#include <cstdint>
#include <llvm/Support/SMLoc.h>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace collc::calls {

/// A slot of one rank's buffer, numbered (by the proof) in the order a walk first meets it.
struct SlotKey {
  int owner;
  ir::BufferId buffer;
  int64_t slot;
  bool operator<(const SlotKey& o) const {
    return std::tie(owner, buffer, slot) < std::tie(o.owner, o.buffer, o.slot);
  }
  bool operator==(const SlotKey& o) const {
    return owner == o.owner && buffer == o.buffer && slot == o.slot;
  }
};

/// Hashes a slot for SlotIds: the proof looks one up for every access it traces.
struct SlotKeyHash {
  size_t operator()(const SlotKey& k) const {
    uint64_t h = uint64_t(uint32_t(k.owner)) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t(uint32_t(k.buffer)) + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    h ^= uint64_t(k.slot) * 0x165667B19E3779F9ull;
    return size_t(h ^ (h >> 31));
  }
};

/// Each slot's number: its place in the proof's list of slots.
using SlotIds = std::unordered_map<SlotKey, int, SlotKeyHash>;

struct ReadRef {
  int slot = -1; // slot id (of scratch or a user buffer); -1: a register
  ir::LoadKind load = ir::LoadKind::Plain;
  std::string reg; // a register's name
};

/// One thing a rank does in one call: a barrier, or a statement with what it reads and writes.
/// Whether a statement touches any element depends on the count (Configuration::nonEmpty). A
/// call's events come step after step, within a step rank after rank, as the walker runs them.
struct Event {
  int step = 0, rank = 0;
  llvm::SMLoc loc;
  bool barrier = false, fullBarrier = false;
  std::vector<ReadRef> reads;
  int writeSlot = -1;
  std::string keep; // the register the statement fills (Let, Assign::keep)
};

/// Sources of a read: [event][read] -> the earlier events of the call whose writes overlap what
/// the read reads (the data it may take), in event order.
using Sources = std::vector<std::vector<std::vector<int>>>;

/// One call's class: its root and which of its statements touch elements, with a count of it.
struct Configuration {
  int root = 0;
  int64_t count = 1;
  std::vector<bool> nonEmpty;
  Sources sources;
};

} // namespace collc::calls

#endif // COLLC_COMPILER_VERIFY_CALLTRACE_H
