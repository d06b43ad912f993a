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

// Lines of statements with their indentation.
class Body {
public:
  void line(const std::string& text) {
    text_ += std::string(size_t(2 * depth_), ' ') + text + "\n";
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

  void choose(const std::string& what) { choices.push_back(what); }
};

// A peer as a region prefix: a plain variable as it is, an expression in parentheses.
inline std::string peerRef(const std::string& expr) {
  return expr.find_first_of(" +-*/%()") == std::string::npos ? expr : "(" + expr + ")";
}

class Generator {
public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  GeneratedSpec run(uint64_t seed);

private:
  Rng rng_;
  Draft d_;

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

  // One of the spellings of "for every other rank": `peers`, a rank offset, or every rank but
  // this one. `body` gets the peer as an index expression and as a region prefix. Returns
  // whether it spelled `peers`, the one form ll128_atomic recognises.
  bool forEachPeer(const std::string& var,
                   const std::function<void(const std::string&, const std::string&)>& body) {
    switch (rng_.pick(0, 3)) {
    case 0:
    case 1:
      d_.body.open("for " + var + " in peers");
      body(var, var);
      d_.body.close();
      return true;
    case 2: {
      d_.body.open("for " + var + " in 1..nranks");
      // Now and then plus a large multiple of nranks, which changes nothing: the kernel's int
      // holds rank + var + 268435454 * nranks at 8 ranks (2^31 - 2), and 4294967296 is a long.
      const std::string offset =
          rng_.chance(30) ? rng_.oneOf({" + 268435454 * nranks", " + 4294967296 * nranks"}) : "";
      const std::string peer = "(rank + " + var + offset + ") % nranks";
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

  std::string render(const std::string& name);
};

} // namespace collc::differential::detail
