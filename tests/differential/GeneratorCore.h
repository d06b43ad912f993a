// The spec generator's internals (SpecGenerator.h is the interface): random choices, the draft
// of a spec under construction, and the Generator whose templates the Generator*.cpp files hold,
// one file per family of collectives.
#pragma once

#include "tests/differential/SpecGenerator.h"

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace collc::differential::detail {

using Strings = std::vector<std::string>;

// Random choices. std::mt19937_64's output is fixed by the standard, the distributions are not,
// so the generator draws its integers itself.
class Rng {
public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  int pick(int lo, int hi) {
    const uint64_t span = uint64_t(int64_t(hi) - int64_t(lo)) + 1;
    return lo + int(engine_() % span);
  }
  bool chance(int percent) { return pick(0, 99) < percent; }
  const std::string& oneOf(const Strings& options) {
    return options[size_t(pick(0, int(options.size()) - 1))];
  }

private:
  std::mt19937_64 engine_;
};

// A place in the body: its line (0 the body's first) and 1-based column.
struct Spot {
  int line = -1, column = 0;
  bool valid() const { return line >= 0; }
};

// Lines of statements with their indentation.
class Body {
public:
  void line(const std::string& text) {
    text_ += std::string(size_t(2 * depth_), ' ') + text + "\n";
    ++lines_;
  }
  // A line, and where `part` of it (its first occurrence) is: what a diagnostic points at.
  Spot lineAt(const std::string& text, const std::string& part) {
    const size_t at = text.find(part);
    const Spot spot{lines_, 2 * depth_ + int(at == std::string::npos ? 0 : at) + 1};
    line(text);
    return spot;
  }
  void open(const std::string& head) {
    line(head + " {");
    ++depth_;
  }
  void close() {
    --depth_;
    line("}");
  }
  const std::string& text() const { return text_; }

private:
  std::string text_;
  int depth_ = 1;
  int lines_ = 0;
};

// A bug a template planted on purpose, and what the compiler must say of it.
struct Plant {
  std::string rule;   // words of the diagnostic
  Spot at;            // where it must point
  std::string marker; // or: the first line with this text, where it starts
  bool underMaxMin = false;
};

// A spec under construction: the header's parts, the steps, and the choices for `shape`.
struct Draft {
  std::string kind, pattern;
  Strings choices;
  int lo = 2, hi = 8;
  std::string in = "in", out = "out";
  Strings aux;      // user buffers after the output: "residual: T[n]"
  std::string rows; // "hidden = 4096"
  Strings scratch;  // "slot[nranks]: T[n]"
  Strings syncs;    // strategies the pattern can use; one becomes the default
  Body body;
  Spot sumOnly; // the first statement that makes the spec hold for op 'sum' only
  Plant plant;  // in a planted-bug draft: the bug

  void choose(const std::string& what) { choices.push_back(what); }
  void sumOnlyAt(Spot spot) {
    if (!sumOnly.valid())
      sumOnly = spot;
  }
};

// A peer as a region prefix: a plain variable as it is, an expression in parentheses.
inline std::string peerRef(const std::string& expr) {
  return expr.find_first_of(" +-*/%()") == std::string::npos ? expr : "(" + expr + ")";
}

class Generator {
public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  GeneratedSpec run(uint64_t seed);
  PlantedBug plantBug(uint64_t seed);

private:
  Rng rng_;
  Draft d_;
  int headerLines_ = 0;    // lines of the rendered spec before its body
  std::string planting_;   // the family of the bug to plant, or empty
  bool forcePlus_ = false; // combine with '+' where a template can
  // The term that takes the next peer expression past the kernel's int (int-width), until used.
  std::string overflow_;

  bool planting(const char* family) const { return planting_ == family; }

  // Loop variables are drawn from small pools so that names vary without clashing.
  std::string peerVar() { return rng_.oneOf({"p", "peer", "to", "q2"}); }
  std::string gatherVar() { return rng_.oneOf({"q", "j", "sender"}); }
  std::string chunkVar() { return rng_.oneOf({"c", "part", "k2"}); }
  std::string slotName() { return rng_.oneOf({"slot", "inbox", "landing", "mail"}); }

  void ranks(const std::vector<std::pair<int, int>>& ranges) {
    const auto& range = ranges[size_t(rng_.pick(0, int(ranges.size()) - 1))];
    d_.lo = range.first;
    d_.hi = range.second;
  }
  void smallRanks(int minLo = 2) {
    // Mostly small ranges keep the proof fast; the full range now and then.
    if (rng_.chance(8)) {
      ranks({{minLo, 8}});
      return;
    }
    std::vector<std::pair<int, int>> ranges;
    for (auto r : std::vector<std::pair<int, int>>{{2, 3}, {2, 4}, {3, 5}, {2, 5}, {4, 6}, {3, 4}})
      if (r.first >= minLo)
        ranges.push_back(r);
    if (ranges.empty())
      ranges.push_back({minLo, minLo + 1});
    ranks(ranges);
  }

  // A term that adds a large multiple of nranks to rank + (a variable below nranks), now and then:
  // `(rank + k + 2147483520) % nranks` is `(rank + k) % nranks`, and the kernel computes it
  // exactly when every value fits the type it is computed in (int, or long for a literal past
  // int's range).
  std::string largeMultiple() {
    if (!rng_.chance(25))
      return "";
    d_.choose("large-constant");
    switch (rng_.pick(0, 3)) {
    case 0:
      return " + 2147483520"; // 840 * 2556528: a multiple of 2..8, with rank + k <= 14 an int
    case 1: // up to the largest multiplier whose product stays an int at every rank count
      return " + " + std::to_string((2147483647 - 2 * d_.hi) / d_.hi - rng_.pick(0, 999)) +
             " * nranks";
    case 2:
      return " + 268435454 * nranks"; // at 8 ranks, rank + k + this is at most 2^31 - 2
    default:
      return " + 4294967296 * nranks"; // a long literal: computed in 64 bits
    }
  }
  // (rank + var) % nranks, the rank `var` places ahead, with a large constant now and then.
  std::string ahead(const std::string& var) {
    return "(rank + " + var + largeMultiple() + ") % nranks";
  }

  // One of the spellings of "for every other rank": `peers`, a rank offset, or every rank but
  // this one. `body` gets the peer as an index expression and as a region prefix. Returns
  // whether it spelled `peers`, the one form ll128_atomic recognises. A planted int-width bug
  // takes the rank offset, with a term that leaves the kernel's int.
  bool forEachPeer(const std::string& var,
                   const std::function<void(const std::string&, const std::string&)>& body) {
    const int form = rng_.pick(0, 3);
    if (!overflow_.empty()) {
      d_.body.open("for " + var + " in 1..nranks");
      const std::string peer = "(rank + " + var + overflow_ + ") % nranks";
      overflow_.clear();
      d_.plant.rule = "does not hold";
      d_.plant.marker = peerRef(peer);
      body(peer, peerRef(peer));
      d_.body.close();
      return false;
    }
    switch (form) {
    case 0:
    case 1:
      d_.body.open("for " + var + " in peers");
      body(var, var);
      d_.body.close();
      return true;
    case 2: {
      d_.body.open("for " + var + " in 1..nranks");
      const std::string peer = ahead(var);
      body(peer, peerRef(peer));
      d_.body.close();
      break;
    }
    default:
      d_.body.open("for " + var + " in ranks");
      d_.body.open("if " + var + " != rank");
      body(var, var);
      d_.body.close();
      d_.body.close();
    }
    return false;
  }
  void dropAtomicLines() {
    d_.syncs.erase(std::remove(d_.syncs.begin(), d_.syncs.end(), "ll128_atomic"), d_.syncs.end());
  }

  // A step head, `step NAME for V in ...` when `repeat` is given.
  void openStep(const std::string& name, const std::string& repeat = "") {
    d_.body.open("step " + name + (repeat.empty() ? "" : " for " + repeat));
  }
  // A step of one statement, in the `step NAME: ...` form now and then.
  void oneStatementStep(const std::string& name, const std::string& statement) {
    if (rng_.chance(40)) {
      d_.body.line("step " + name + ": " + statement);
      return;
    }
    openStep(name);
    d_.body.line(statement);
    d_.body.close();
  }

  void allreduceOneshot();
  void allreduceTwoshot();
  void allreduceRing();
  void allreduceHub();
  void allreduceAtomic();
  void allgatherDirect();
  void allgatherRing();
  void reducescatterDirect();
  void reducescatterRing();
  void broadcastDirect();
  void broadcastChain();
  void broadcastScatterGather();
  void reduceDirect();
  void reduceChain();
  void reduceScatterGather();
  void alltoallDirect();
  void alltoallPairwise();
  // A rank's own threads ordered by waits (GeneratorOrdering.cpp), each with its planted bugs.
  void allreduceRewrite();
  void allreduceRestage();
  void alltoallRewrite();
  void broadcastRewrite();
  void ownerOverPut();
  // Planted bugs of the other templates.
  void plantLocalWaw();
  void plantPlus();
  void plantIntWidth();

  std::string render(const std::string& name);
  GeneratedSpec finish(uint64_t seed);
  std::string where(Spot spot) const;
};

} // namespace collc::differential::detail
