// Whether the events and classes of one part of a call are those of another part with the ranks
// renamed by a permutation. The proof across calls treats ranks and slots alike but through the
// events, so the sequences of such a part's classes pass exactly where the other's do: the pairs
// of chunks of a program whose chunks are alike (a two-shot) are decided by the first pair
// (dsl/README.md, "Across calls").
#ifndef COLLC_COMPILER_VERIFY_CALLRENAMING_H
#define COLLC_COMPILER_VERIFY_CALLRENAMING_H

#include "compiler/verify/CallTrace.h"

#include <map>
#include <tuple>
#include <vector>

namespace collc::calls {

/// The events of one call, in the form the comparisons take: register names as numbers, each
/// slot able to find the slot that a renaming makes of it.
class CallRenaming {
public:
  CallRenaming(const std::vector<Event>& events, const std::vector<SlotKey>& slots,
               const SlotIds& slotIds);

  /// Whether the events `other` picks from the call (in the call's order), with their classes
  /// (event i of a class is the i-th picked), are the events `base` picks with each rank x
  /// renamed to[x] (`to` a permutation of the ranks):
  /// - the events of each step and rank x of `base` are those of the step and rank to[x] of
  ///   `other`, with every slot's owner renamed and its index kept or renamed alike (one rule a
  ///   buffer); barriers and statements that fill a register in the same order, between two of
  ///   them the others in any order (each reads what the same earlier events left), a
  ///   statement's reads in any order (what they carry is joined);
  /// - class c of `other` is class c of `base` moved by that matching: which statements touch
  ///   elements, and each read with the writes it may take.
  /// Where it holds, each call of a sequence of `other`'s classes knows, writes and logs what the
  /// same call of `base`'s does with the ranks renamed.
  bool isRenaming(const std::vector<int>& to, const std::vector<int>& base,
                  const std::vector<Configuration>& baseClasses, const std::vector<int>& other,
                  const std::vector<Configuration>& otherClasses) const;

private:
  struct Read {
    int load, reg, slot;
    bool operator<(const Read& o) const {
      return std::tie(load, reg, slot) < std::tie(o.load, o.reg, o.slot);
    }
    bool operator==(const Read& o) const {
      return load == o.load && reg == o.reg && slot == o.slot;
    }
  };
  struct Shape {
    const char* loc;
    int flags, keep, writeSlot;
    size_t firstRead, reads; // in reads_
  };
  /// Where each slot the `picked` events name goes under `to`: its owner renamed, its index kept
  /// or (where `renameFirst` and every such slot of the buffer can be) renamed; -2 where the call
  /// has no such slot, and for the slots they do not name.
  std::vector<int> slotImages(const std::vector<int>& to, bool renameFirst,
                              const std::vector<int>& picked) const;
  std::vector<int> matchEvents(const std::vector<int>& to, const std::vector<int>& base,
                               const std::vector<Configuration>& baseClasses,
                               const std::vector<int>& other,
                               const std::vector<Configuration>& otherClasses,
                               const std::vector<int>& images) const;
  bool sameClasses(const std::vector<int>& base, const std::vector<Configuration>& baseClasses,
                   const std::vector<int>& other, const std::vector<Configuration>& otherClasses,
                   const std::vector<int>& map, const std::vector<int>& images) const;

  const std::vector<Event>& events_;
  const std::vector<SlotKey>& slots_;
  const SlotIds& slotIds_;
  std::vector<Shape> shapes_; // by event
  std::vector<Read> reads_;
  int steps_ = 0; // the events' steps: 0 .. steps_ - 1
};

} // namespace collc::calls

#endif // COLLC_COMPILER_VERIFY_CALLRENAMING_H
