#include "tests/differential/SpecGenerator.h"

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

namespace collc::differential {
namespace {

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
std::string peerRef(const std::string& expr) {
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
      const std::string peer = "(rank + " + var + ") % nranks";
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

// One-shot AllReduce: every rank puts its input into a slot of every peer and reduces locally.
void Generator::allreduceOneshot() {
  d_.pattern = "oneshot";
  smallRanks();
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  // 0-2: no epilogue, 3: + residual, 4: + residual + bias, 5-6: residual_out, maybe rmsnorm.
  const int epilogue = std::min(rng_.pick(0, 6), 5);
  const bool rms = epilogue == 5 && rng_.chance(60);
  const bool stage = !rms && rng_.chance(30);
  const bool chunkedPut = rng_.chance(30);
  const int form = epilogue > 2 ? rng_.pick(0, 1) : rng_.pick(0, 4);
  const bool viaAcc = !rms && epilogue != 5 && rng_.chance(25);
  d_.syncs = {"barrier", "ll", "sentinel"};
  if (form == 3)
    d_.syncs = {"barrier"}; // this rank writes its own slot, which peers also write
  if (form <= 1 && epilogue <= 3 && !stage && !viaAcc)
    d_.syncs.push_back("ll128_atomic");
  if (epilogue >= 3)
    d_.aux.push_back("residual: T[n]");
  if (epilogue == 4)
    d_.aux.push_back("bias: T[n]");
  if (epilogue == 5)
    d_.aux.push_back("residual_out: T[n]");
  if (rms) {
    d_.aux.push_back("weight: T[hidden]");
    d_.rows = "hidden = " + rng_.oneOf({"1024", "4096", "8192"});
    d_.syncs = {"barrier", "ll", "sentinel"};
  }
  d_.choose(std::string("epilogue=") + Strings{"none", "none", "none", "residual", "residual+bias",
                                               rms ? "rmsnorm" : "residual_out"}[size_t(epilogue)]);
  d_.choose(std::string("reduce=") +
            Strings{"in-first", "slots-first", "chunked", "own-slot", "accumulate"}[size_t(form)]);

  std::string src = d_.in;
  if (stage) {
    d_.choose("staged");
    d_.scratch.push_back("mine: T[n]");
    oneStatementStep("stage", "mine = " + d_.in);
    src = "mine";
  }
  const std::string c = chunkVar();
  // Pipelined: one repetition of the push step per chunk, none waiting for the one before.
  const bool pipelined = chunkedPut && form != 3 && rng_.chance(50);
  if (chunkedPut)
    d_.choose(pipelined ? "pipelined-put" : "chunked-put");
  openStep("push", pipelined ? c + " in 0..nranks" : "");
  if (stage && chunkedPut) {
    // Chunks of the staged copy were written by other threads: only a barrier orders that.
    d_.body.line("wait stage");
    d_.syncs = {"barrier"};
  }
  const bool plain = forEachPeer(peerVar(), [&](const std::string&, const std::string& ref) {
    if (!chunkedPut) {
      d_.body.line("put " + src + " -> " + ref + "." + slot + "[rank]");
      return;
    }
    if (!pipelined)
      d_.body.open("for " + c + " in ranks");
    d_.body.line("put " + src + ".chunk(" + c + ") -> " + ref + "." + slot + "[rank].chunk(" + c +
                 ")");
    if (!pipelined)
      d_.body.close();
  });
  if (form == 3)
    d_.body.line(slot + "[rank] = " + src);
  d_.body.close();
  if (!plain)
    dropAtomicLines();

  // The chunked reduce reads its operands chunk by chunk, which only `in` allows without a wait.
  const std::string own = stage && form != 2 && rng_.chance(50) ? "mine" : d_.in;
  std::string target = d_.out;
  if (viaAcc) {
    d_.choose("via-scratch");
    d_.scratch.push_back("acc: T[n]");
    target = "acc";
  }
  std::string addends;
  if (epilogue >= 3)
    addends += " + residual";
  if (epilogue == 4)
    addends += " + bias";
  if (epilogue == 5)
    target = "residual_out";
  openStep("reduce");
  d_.body.line("wait push");
  switch (form) {
  case 0:
    d_.body.line(target + " = reduce(" + own + ", " + slot + "[peers])" + addends);
    break;
  case 1:
    d_.body.line(target + " = reduce(" + slot + "[peers], " + own + ")" + addends);
    break;
  case 2:
    d_.body.open("for " + c + " in ranks");
    d_.body.line(target + ".chunk(" + c + ") = reduce(" + own + ".chunk(" + c + "), " + slot +
                 "[peers].chunk(" + c + "))");
    d_.body.close();
    break;
  case 3:
    d_.body.line(target + " = reduce(" + slot + "[ranks])");
    break;
  default: {
    const std::string k = rng_.oneOf({"k", "off"});
    d_.body.line(target + " = " + own);
    d_.body.open("for " + k + " in 1..nranks");
    d_.body.line(target + " = reduce(" + target + ", " + slot + "[(rank + " + k + ") % nranks])");
    d_.body.close();
  }
  }
  if (rms)
    d_.body.line(d_.out + " = rmsnorm(residual_out, weight)");
  else if (epilogue == 5)
    d_.body.line(d_.out + " = residual_out");
  d_.body.close();
  if (viaAcc && form == 2) {
    // Copied chunk by chunk, so that each element is read by the thread that reduced it.
    openStep("copy");
    d_.body.line("for " + c + " in ranks { " + d_.out + ".chunk(" + c + ") = acc.chunk(" + c +
                 ") }");
    d_.body.close();
  } else if (viaAcc) {
    oneStatementStep("copy", d_.out + " = acc");
  }
}

// Two-shot AllReduce: a reduce-scatter into per-sender slots, then an all-gather of the reduced
// chunks.
void Generator::allreduceTwoshot() {
  d_.pattern = "twoshot";
  smallRanks();
  const std::string inbox = slotName();
  d_.scratch.push_back(inbox + "[nranks]: T[chunk(n)]");
  d_.scratch.push_back("result: T[n]");
  const bool residual = rng_.chance(25);
  const bool viaAcc = residual || rng_.chance(30);
  const bool slotsFirst = rng_.chance(40);
  d_.syncs = {"barrier", "ll", "sentinel"};
  if (!residual && !viaAcc)
    d_.syncs.push_back("ll128_atomic");
  if (residual) {
    d_.aux.push_back("residual: T[n]");
    d_.choose("residual");
  }
  openStep("scatter");
  if (!forEachPeer(peerVar(), [&](const std::string& idx, const std::string& ref) {
        d_.body.line("put " + d_.in + ".chunk(" + idx + ") -> " + ref + "." + inbox + "[rank]");
      }))
    dropAtomicLines();
  d_.body.close();

  openStep("reduce");
  d_.body.line("wait scatter");
  const std::string mine = d_.in + ".chunk(rank)", slots = inbox + "[peers]";
  const std::string sum =
      "reduce(" + (slotsFirst ? slots + ", " + mine : mine + ", " + slots) + ")";
  std::string sent = d_.out + ".chunk(rank)";
  if (viaAcc) {
    d_.choose("via-scratch");
    d_.scratch.push_back("acc: T[n]");
    d_.body.line("acc.chunk(rank) = " + sum);
    d_.body.line(d_.out + ".chunk(rank) = acc.chunk(rank)" +
                 (residual ? " + residual.chunk(rank)" : ""));
    sent = "acc.chunk(rank)";
  } else {
    d_.body.line(d_.out + ".chunk(rank) = " + sum);
  }
  forEachPeer(peerVar(), [&](const std::string&, const std::string& ref) {
    d_.body.line("put " + sent + " -> " + ref + ".result.chunk(rank)");
  });
  d_.body.close();

  openStep("gather");
  d_.body.line("wait reduce");
  forEachPeer(gatherVar(), [&](const std::string& idx, const std::string&) {
    d_.body.line(d_.out + ".chunk(" + idx + ") = result.chunk(" + idx + ")" +
                 (residual ? " + residual.chunk(" + idx + ")" : ""));
  });
  d_.body.close();
}

// Ring AllReduce (the standard library's): a ring reduce-scatter, then a ring all-gather.
void Generator::allreduceRing() {
  d_.pattern = "ring";
  smallRanks();
  d_.syncs = {"barrier"};
  const std::string s = rng_.oneOf({"s", "round"});
  const std::string right = "((rank + 1) % nranks)";
  d_.scratch.push_back("inbox[nranks]: T[chunk(n)]");
  d_.scratch.push_back("partial: T[n]");
  d_.scratch.push_back("relay[nranks]: T[chunk(n)]");
  openStep("scatter", s + " in 0..nranks - 1");
  d_.body.line("wait scatter");
  d_.body.line("if " + s + " == 0 { put " + d_.in + ".chunk(rank) -> " + right + ".inbox[0] }");
  d_.body.open("if " + s + " != 0");
  const std::string k = "(rank + nranks - " + s + ") % nranks";
  d_.body.line("partial.chunk(" + k + ") = reduce(" + d_.in + ".chunk(" + k + "), inbox[" + s +
               " - 1])");
  d_.body.line("put partial.chunk(" + k + ") -> " + right + ".inbox[" + s + "]");
  d_.body.close();
  d_.body.close();
  openStep("gather", s + " in 0..nranks - 1");
  d_.body.line("wait scatter");
  d_.body.line("wait gather");
  d_.body.open("if " + s + " == 0");
  d_.body.line(d_.out + ".chunk((rank + 1) % nranks) = reduce(" + d_.in +
               ".chunk((rank + 1) % nranks), inbox[nranks - 2])");
  d_.body.line("put " + d_.out + ".chunk((rank + 1) % nranks) -> " + right +
               ".relay[(rank + 1) % nranks]");
  d_.body.close();
  d_.body.open("if " + s + " != 0");
  const std::string g = "(rank + nranks + 1 - " + s + ") % nranks";
  d_.body.line(d_.out + ".chunk(" + g + ") = relay[" + g + "]");
  d_.body.line("put " + d_.out + ".chunk(" + g + ") -> " + right + ".relay[" + g + "]");
  d_.body.close();
  d_.body.close();
  openStep("last");
  d_.body.line("wait gather");
  d_.body.line(d_.out + ".chunk((rank + 2) % nranks) = relay[(rank + 2) % nranks]");
  d_.body.close();
}

// Hub AllReduce, a two-level tree: every rank sends to one hub rank, which reduces and sends the
// result back to everyone.
void Generator::allreduceHub() {
  d_.pattern = "hub";
  smallRanks();
  // Every rank sends to the hub and hears back from it: mutual, so arrival can synchronize it.
  d_.syncs = {"barrier", "ll", "sentinel"};
  const std::string hub = rng_.oneOf({"0", "nranks - 1", "1"});
  d_.choose("hub=" + hub);
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  d_.scratch.push_back("result: T[n]");
  openStep("up");
  d_.body.line("if rank != " + hub + " { put " + d_.in + " -> (" + hub + ")." + slot + "[rank] }");
  d_.body.close();
  openStep("down");
  d_.body.line("wait up");
  d_.body.open("if rank == " + hub);
  d_.body.line(d_.out + " = reduce(" + d_.in + ", " + slot + "[peers])");
  forEachPeer(peerVar(), [&](const std::string&, const std::string& ref) {
    d_.body.line("put " + d_.out + " -> " + ref + ".result");
  });
  d_.body.close();
  d_.body.close();
  openStep("receive");
  d_.body.line("wait down");
  d_.body.line("if rank != " + hub + " { " + d_.out + " = result }");
  d_.body.close();
}

// AllReduce by remote atomic adds into the owner's chunk of an accumulator, then an all-gather.
void Generator::allreduceAtomic() {
  d_.pattern = "atomic";
  smallRanks();
  d_.syncs = {"barrier"};
  d_.scratch.push_back("acc: T[n]");
  d_.scratch.push_back("result: T[n]");
  oneStatementStep("init", "acc.chunk(rank) = " + d_.in + ".chunk(rank)");
  openStep("add");
  d_.body.line("wait init");
  forEachPeer(peerVar(), [&](const std::string& idx, const std::string& ref) {
    d_.body.line("atomic_add " + d_.in + ".chunk(" + idx + ") -> " + ref + ".acc.chunk(" + idx +
                 ")");
  });
  d_.body.close();
  openStep("share");
  d_.body.line("wait add");
  d_.body.line(d_.out + ".chunk(rank) = acc.chunk(rank)");
  forEachPeer(peerVar(), [&](const std::string&, const std::string& ref) {
    d_.body.line("put acc.chunk(rank) -> " + ref + ".result.chunk(rank)");
  });
  d_.body.close();
  openStep("gather");
  d_.body.line("wait share");
  forEachPeer(gatherVar(), [&](const std::string& idx, const std::string&) {
    d_.body.line(d_.out + ".chunk(" + idx + ") = result.chunk(" + idx + ")");
  });
  d_.body.close();
}

// Direct AllGather: every rank puts its input into a slot of every peer, then copies the slots
// into place.
void Generator::allgatherDirect() {
  d_.pattern = "direct";
  smallRanks();
  d_.syncs = {"barrier", "ll", "sentinel"};
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  const bool stage = rng_.chance(25);
  const bool chunkedPut = rng_.chance(30);
  const int ownCopy = rng_.pick(0, 2); // in the push step, in the gather step, in a step of its own
  const bool split = rng_.chance(30);  // the gather split into the near peer and the far ones
  // Or send from the output, after copying the own block there in a step before.
  const bool fromOutput = !stage && ownCopy == 2 && rng_.chance(50);
  std::string src = d_.in;
  if (stage) {
    d_.choose("staged");
    d_.scratch.push_back("mine: T[n]");
    oneStatementStep("stage", "mine = " + d_.in);
    src = "mine";
  }
  if (chunkedPut)
    d_.choose("chunked-put");
  d_.choose(std::string("own-copy=") + Strings{"push", "gather", "own-step"}[size_t(ownCopy)]);
  const std::string own = d_.out + ".block(rank) = " + src;
  if (fromOutput) {
    d_.choose("from-output");
    oneStatementStep("local", own);
    src = d_.out + ".block(rank)";
  }
  openStep("push");
  if (stage && chunkedPut) {
    // Chunks of the staged copy were written by other threads: only a barrier orders that.
    d_.body.line("wait stage");
    d_.syncs = {"barrier"};
  }
  const std::string c = chunkVar();
  forEachPeer(peerVar(), [&](const std::string&, const std::string& ref) {
    if (!chunkedPut) {
      d_.body.line("put " + src + " -> " + ref + "." + slot + "[rank]");
      return;
    }
    d_.body.open("for " + c + " in ranks");
    d_.body.line("put " + src + ".chunk(" + c + ") -> " + ref + "." + slot + "[rank].chunk(" + c +
                 ")");
    d_.body.close();
  });
  if (ownCopy == 0)
    d_.body.line(own);
  d_.body.close();
  if (ownCopy == 2 && !fromOutput)
    oneStatementStep("local", own);
  if (split) {
    d_.choose("near-far");
    openStep("near");
    d_.body.line("wait push");
    d_.body.line(d_.out + ".block((rank + 1) % nranks) = " + slot + "[(rank + 1) % nranks]");
    if (ownCopy == 1)
      d_.body.line(own);
    d_.body.close();
    openStep("far");
    d_.body.line("wait push");
    const std::string q = gatherVar();
    d_.body.line("for " + q + " in 2..nranks { " + d_.out + ".block((rank + " + q +
                 ") % nranks) = " + slot + "[(rank + " + q + ") % nranks] }");
    d_.body.close();
    return;
  }
  openStep("gather");
  d_.body.line("wait push");
  forEachPeer(gatherVar(), [&](const std::string& idx, const std::string&) {
    d_.body.line(d_.out + ".block(" + idx + ") = " + slot + "[" + idx + "]");
  });
  if (ownCopy == 1)
    d_.body.line(own);
  d_.body.close();
}

// Ring AllGather (the standard library's): each step passes one block to the right neighbour.
void Generator::allgatherRing() {
  d_.pattern = "ring";
  smallRanks();
  d_.syncs = {"barrier"};
  const std::string s = rng_.oneOf({"s", "hop"});
  const std::string right = "((rank + 1) % nranks)";
  d_.scratch.push_back("relay[nranks]: T[n]");
  const bool ownFirst = rng_.chance(50);
  if (ownFirst) {
    d_.choose("own-copy-first");
    oneStatementStep("own", d_.out + ".block(rank) = " + d_.in);
  }
  openStep("pass", s + " in 0..nranks - 1");
  d_.body.line("wait pass");
  d_.body.open("if " + s + " == 0");
  if (!ownFirst)
    d_.body.line(d_.out + ".block(rank) = " + d_.in);
  d_.body.line("put " + d_.in + " -> " + right + ".relay[rank]");
  d_.body.close();
  d_.body.open("if " + s + " != 0");
  const std::string b = "(rank + nranks - " + s + ") % nranks";
  d_.body.line(d_.out + ".block(" + b + ") = relay[" + b + "]");
  d_.body.line("put " + d_.out + ".block(" + b + ") -> " + right + ".relay[" + b + "]");
  d_.body.close();
  d_.body.close();
  openStep("last");
  d_.body.line("wait pass");
  d_.body.line(d_.out + ".block((rank + 1) % nranks) = relay[(rank + 1) % nranks]");
  d_.body.close();
}

// Direct ReduceScatter: block p of the input goes to a slot of peer p, which reduces.
void Generator::reducescatterDirect() {
  d_.pattern = "direct";
  smallRanks();
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  const int form = rng_.pick(0, 2); // this rank's block first, the slots first, accumulated
  const bool residual = rng_.chance(20);
  const bool viaAcc = rng_.chance(25);
  d_.syncs = {"barrier", "ll", "sentinel"};
  if (form != 2 && !residual && !viaAcc)
    d_.syncs.push_back("ll128_atomic");
  if (residual) {
    d_.aux.push_back("residual: T[n]");
    d_.choose("residual");
  }
  d_.choose(std::string("reduce=") +
            Strings{"own-first", "slots-first", "accumulate"}[size_t(form)]);
  openStep("push");
  if (!forEachPeer(peerVar(), [&](const std::string& idx, const std::string& ref) {
        d_.body.line("put " + d_.in + ".block(" + idx + ") -> " + ref + "." + slot + "[rank]");
      }))
    dropAtomicLines();
  d_.body.close();
  const std::string target = viaAcc ? "acc" : d_.out;
  if (viaAcc) {
    d_.choose("via-scratch");
    d_.scratch.push_back("acc: T[n]");
  }
  const std::string own = d_.in + ".block(rank)", add = residual ? " + residual" : "";
  openStep("reduce");
  d_.body.line("wait push");
  if (form == 0)
    d_.body.line(target + " = reduce(" + own + ", " + slot + "[peers])" + add);
  else if (form == 1)
    d_.body.line(target + " = reduce(" + slot + "[peers], " + own + ")" + add);
  else {
    d_.body.line(target + " = " + own);
    d_.body.open("for k in 1..nranks");
    d_.body.line(target + " = reduce(" + target + ", " + slot + "[(rank + k) % nranks])");
    d_.body.close();
    if (residual)
      d_.body.line(target + " = " + target + " + residual");
  }
  d_.body.close();
  if (viaAcc)
    oneStatementStep("copy", d_.out + " = acc");
}

// Ring ReduceScatter: partial sums travel right; each rank adds its block and passes it on.
void Generator::reducescatterRing() {
  d_.pattern = "ring";
  smallRanks();
  d_.syncs = {"barrier"};
  const std::string s = rng_.oneOf({"s", "step_i"});
  const std::string right = "((rank + 1) % nranks)";
  d_.scratch.push_back("inbox[nranks]: T[n]");
  d_.scratch.push_back("partial: T[n]");
  openStep("pass", s + " in 0..nranks - 1");
  d_.body.line("wait pass");
  d_.body.line("if " + s + " == 0 { put " + d_.in + ".block((rank + nranks - 1) % nranks) -> " +
               right + ".inbox[0] }");
  d_.body.open("if " + s + " != 0");
  d_.body.line("partial = reduce(" + d_.in + ".block((rank + nranks - 1 - " + s +
               ") % nranks), inbox[" + s + " - 1])");
  d_.body.line("put partial -> " + right + ".inbox[" + s + "]");
  d_.body.close();
  d_.body.close();
  openStep("last");
  d_.body.line("wait pass");
  d_.body.line(d_.out + " = reduce(" + d_.in + ".block(rank), inbox[nranks - 2])");
  d_.body.close();
}

// Direct Broadcast: the root puts its input into every peer's inbox.
void Generator::broadcastDirect() {
  d_.pattern = "direct";
  smallRanks();
  d_.syncs = {"barrier"};
  d_.scratch.push_back("inbox: T[n]");
  const bool chunkedPut = rng_.chance(30);
  const bool rootCopyLater = rng_.chance(40);
  if (chunkedPut)
    d_.choose("chunked-put");
  if (rootCopyLater)
    d_.choose("root-copies-later");
  const bool relative = rng_.chance(40);
  const std::string isRoot = relative ? "(rank + nranks - root) % nranks == 0" : "rank == root";
  const std::string notRoot = relative ? "root != rank" : "rank != root";
  if (relative)
    d_.choose("relative-root");
  openStep("push");
  d_.body.open("if " + isRoot);
  const std::string c = chunkVar();
  forEachPeer(peerVar(), [&](const std::string&, const std::string& ref) {
    if (!chunkedPut) {
      d_.body.line("put " + d_.in + " -> " + ref + ".inbox");
      return;
    }
    d_.body.open("for " + c + " in ranks");
    d_.body.line("put " + d_.in + ".chunk(" + c + ") -> " + ref + ".inbox.chunk(" + c + ")");
    d_.body.close();
  });
  if (!rootCopyLater)
    d_.body.line(d_.out + " = " + d_.in);
  d_.body.close();
  d_.body.close();
  openStep("receive");
  d_.body.line("wait push");
  d_.body.line("if " + notRoot + " { " + d_.out + " = inbox }");
  if (rootCopyLater)
    d_.body.line("if " + isRoot + " { " + d_.out + " = " + d_.in + " }");
  d_.body.close();
}

// Chain Broadcast: the data travels root, root + 1, ... one hop per repetition.
void Generator::broadcastChain() {
  d_.pattern = "chain";
  smallRanks();
  d_.syncs = {"barrier"};
  d_.scratch.push_back("inbox: T[n]");
  const std::string s = rng_.oneOf({"s", "hop"});
  const std::string right = "((rank + 1) % nranks)";
  openStep("pass", s + " in 0..nranks - 1");
  d_.body.line("wait pass");
  d_.body.open("if " + s + " == 0");
  d_.body.line("if rank == root { put " + d_.in + " -> " + right + ".inbox }");
  d_.body.line("if rank == root { " + d_.out + " = " + d_.in + " }");
  d_.body.close();
  d_.body.open("if " + s + " != 0");
  d_.body.open("if rank == (root + " + s + ") % nranks");
  d_.body.line("put inbox -> " + right + ".inbox");
  d_.body.line(d_.out + " = inbox");
  d_.body.close();
  d_.body.close();
  d_.body.close();
  openStep("last");
  d_.body.line("wait pass");
  d_.body.line("if rank == (root + nranks - 1) % nranks { " + d_.out + " = inbox }");
  d_.body.close();
}

// Scatter-then-all-gather Broadcast: the root sends chunk p to rank p (and its own chunk to
// everyone); each rank then passes its chunk to the other non-root ranks.
void Generator::broadcastScatterGather() {
  d_.pattern = "scatter-gather";
  smallRanks();
  d_.syncs = {"barrier"};
  d_.scratch.push_back("part: T[n]");
  openStep("scatter");
  d_.body.open("if rank == root");
  forEachPeer(peerVar(), [&](const std::string& idx, const std::string& ref) {
    d_.body.line("put " + d_.in + ".chunk(" + idx + ") -> " + ref + ".part.chunk(" + idx + ")");
    d_.body.line("put " + d_.in + ".chunk(root) -> " + ref + ".part.chunk(root)");
  });
  d_.body.line(d_.out + " = " + d_.in);
  d_.body.close();
  d_.body.close();
  openStep("share");
  d_.body.line("wait scatter");
  d_.body.open("if rank != root");
  d_.body.line(d_.out + ".chunk(rank) = part.chunk(rank)");
  d_.body.line(d_.out + ".chunk(root) = part.chunk(root)");
  forEachPeer(peerVar(), [&](const std::string& idx, const std::string& ref) {
    d_.body.line("if " + idx + " != root { put part.chunk(rank) -> " + ref + ".part.chunk(rank) }");
  });
  d_.body.close();
  d_.body.close();
  openStep("gather");
  d_.body.line("wait share");
  d_.body.open("if rank != root");
  forEachPeer(gatherVar(), [&](const std::string& idx, const std::string&) {
    d_.body.line("if " + idx + " != root { " + d_.out + ".chunk(" + idx + ") = part.chunk(" + idx +
                 ") }");
  });
  d_.body.close();
  d_.body.close();
}

// Direct Reduce: every other rank puts its input into a slot of the root, which reduces.
void Generator::reduceDirect() {
  d_.pattern = "direct";
  smallRanks();
  d_.syncs = {"barrier"};
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  const bool chunkedPut = rng_.chance(30);
  const bool slotsFirst = rng_.chance(40);
  if (chunkedPut)
    d_.choose("chunked-put");
  if (slotsFirst)
    d_.choose("slots-first");
  openStep("push");
  if (!chunkedPut) {
    d_.body.line("if rank != root { put " + d_.in + " -> root." + slot + "[rank] }");
  } else {
    d_.body.open("if rank != root");
    const std::string c = chunkVar();
    d_.body.line("for " + c + " in ranks { put " + d_.in + ".chunk(" + c + ") -> root." + slot +
                 "[rank].chunk(" + c + ") }");
    d_.body.close();
  }
  d_.body.close();
  openStep("reduce");
  d_.body.line("wait push");
  d_.body.line("if rank == root { " + d_.out + " = reduce(" +
               (slotsFirst ? slot + "[peers], " + d_.in : d_.in + ", " + slot + "[peers]") + ") }");
  d_.body.close();
}

// Chain Reduce: partial sums travel towards the root, root + nranks - 1 first.
void Generator::reduceChain() {
  d_.pattern = "chain";
  smallRanks();
  d_.syncs = {"barrier"};
  const std::string s = rng_.oneOf({"s", "hop"});
  const std::string left = "((rank + nranks - 1) % nranks)";
  d_.scratch.push_back("inbox[nranks]: T[n]");
  d_.scratch.push_back("partial: T[n]");
  openStep("pass", s + " in 0..nranks - 1");
  d_.body.line("wait pass");
  d_.body.open("if rank == (root + nranks - 1 - " + s + ") % nranks");
  d_.body.line("if " + s + " == 0 { put " + d_.in + " -> " + left + ".inbox[0] }");
  d_.body.open("if " + s + " != 0");
  d_.body.line("partial = reduce(" + d_.in + ", inbox[" + s + " - 1])");
  d_.body.line("put partial -> " + left + ".inbox[" + s + "]");
  d_.body.close();
  d_.body.close();
  d_.body.close();
  openStep("last");
  d_.body.line("wait pass");
  d_.body.line("if rank == root { " + d_.out + " = reduce(inbox[nranks - 2], " + d_.in + ") }");
  d_.body.close();
}

// Reduce as a reduce-scatter then a gather of the reduced chunks on the root.
void Generator::reduceScatterGather() {
  d_.pattern = "scatter-gather";
  smallRanks();
  d_.syncs = {"barrier"};
  const std::string inbox = slotName();
  d_.scratch.push_back(inbox + "[nranks]: T[chunk(n)]");
  d_.scratch.push_back("result: T[n]");
  openStep("scatter");
  forEachPeer(peerVar(), [&](const std::string& idx, const std::string& ref) {
    d_.body.line("put " + d_.in + ".chunk(" + idx + ") -> " + ref + "." + inbox + "[rank]");
  });
  d_.body.close();
  openStep("reduce");
  d_.body.line("wait scatter");
  d_.body.line(d_.out + ".chunk(rank) = reduce(" + d_.in + ".chunk(rank), " + inbox + "[peers])");
  d_.body.line("if rank != root { put " + d_.out + ".chunk(rank) -> root.result.chunk(rank) }");
  d_.body.close();
  openStep("gather");
  d_.body.line("wait reduce");
  d_.body.open("if rank == root");
  forEachPeer(gatherVar(), [&](const std::string& idx, const std::string&) {
    d_.body.line(d_.out + ".chunk(" + idx + ") = result.chunk(" + idx + ")");
  });
  d_.body.close();
  d_.body.close();
}

// Direct AllToAll: block p of the input goes to a slot of peer p.
void Generator::alltoallDirect() {
  d_.pattern = "direct";
  smallRanks();
  d_.syncs = {"barrier", "ll", "sentinel"};
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  const bool stage = rng_.chance(25);
  const bool ownLater = rng_.chance(40);
  std::string src = d_.in;
  if (stage) {
    d_.choose("staged");
    d_.scratch.push_back("stage: T[n * nranks]");
    oneStatementStep("copy_in", "stage = " + d_.in);
    src = "stage";
    // The puts read blocks other threads copied: only a wait (a barrier) orders that.
    d_.syncs = {"barrier"};
  }
  if (ownLater)
    d_.choose("own-block-later");
  const std::string own = d_.out + ".block(rank) = " + src + ".block(rank)";
  openStep("push");
  if (stage)
    d_.body.line("wait copy_in");
  forEachPeer(peerVar(), [&](const std::string& idx, const std::string& ref) {
    d_.body.line("put " + src + ".block(" + idx + ") -> " + ref + "." + slot + "[rank]");
  });
  if (!ownLater)
    d_.body.line(own);
  d_.body.close();
  openStep("gather");
  d_.body.line("wait push");
  forEachPeer(gatherVar(), [&](const std::string& idx, const std::string&) {
    d_.body.line(d_.out + ".block(" + idx + ") = " + slot + "[" + idx + "]");
  });
  if (ownLater)
    d_.body.line(own);
  d_.body.close();
}

// Pairwise AllToAll: in repetition s every rank sends to rank + s and keeps what rank - s + 1
// sent in the repetition before.
void Generator::alltoallPairwise() {
  d_.pattern = "pairwise";
  smallRanks();
  // Over the whole call every pair exchanges both ways, which is what ll and sentinel need.
  d_.syncs = {"barrier", "ll", "sentinel"};
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  const std::string s = rng_.oneOf({"s", "shift"});
  d_.body.line("step own: " + d_.out + ".block(rank) = " + d_.in + ".block(rank)");
  openStep("xchg", s + " in 1..nranks");
  d_.body.line("wait xchg");
  const std::string to = "(rank + " + s + ") % nranks";
  d_.body.line("put " + d_.in + ".block(" + to + ") -> (" + to + ")." + slot + "[rank]");
  const std::string from = "(rank + nranks + 1 - " + s + ") % nranks";
  d_.body.line("if " + s + " != 1 { " + d_.out + ".block(" + from + ") = " + slot + "[" + from +
               "] }");
  d_.body.close();
  openStep("last");
  d_.body.line("wait xchg");
  d_.body.line(d_.out + ".block((rank + 1) % nranks) = " + slot + "[(rank + 1) % nranks]");
  d_.body.close();
}

std::string Generator::render(const std::string& name) {
  std::string text = "# generated: " + d_.kind + " " + d_.pattern + "\n";
  text += "collective " + name + " kind " + d_.kind + "\n";
  if (d_.lo != 2 || d_.hi != 8 || rng_.chance(50))
    text += "  ranks " + std::to_string(d_.lo) + ".." + std::to_string(d_.hi) + "\n";
  if (!d_.rows.empty())
    text += "  rows " + d_.rows + "\n";
  const bool blocked = d_.kind == "allgather" || d_.kind == "alltoall";
  const bool scattered = d_.kind == "reducescatter" || d_.kind == "alltoall";
  text += "  buffers " + d_.in + ": T[" + (scattered ? "n * nranks" : "n") + "], " + d_.out +
          ": T[" + (blocked ? "n * nranks" : "n") + "]";
  for (const auto& aux : d_.aux)
    text += ", " + aux;
  text += "\n";
  for (const auto& scratch : d_.scratch)
    text += "  scratch " + scratch + "\n";
  const std::string sync = rng_.oneOf(d_.syncs);
  d_.choose("sync=" + sync);
  if (sync != "barrier" || rng_.chance(70))
    text += "  sync " + sync + "\n";
  if (rng_.chance(60)) {
    std::string launch;
    if (rng_.chance(70))
      launch += " blocks=" + rng_.oneOf({"1", "2", "4", "8", "16", "32", "132"});
    if (rng_.chance(60))
      launch += " threads=" + rng_.oneOf({"32", "64", "128", "256", "512", "1024"});
    if (rng_.chance(60))
      launch += " vector=" + rng_.oneOf({"2", "4", "8", "16"});
    if (rng_.chance(30))
      launch += " unroll=" + std::to_string(rng_.pick(1, 8));
    if (rng_.chance(20))
      launch += " whole_stores=" + std::to_string(rng_.pick(0, 1));
    if (!launch.empty()) {
      text += "  launch" + launch + "\n";
      d_.choose("launch");
    }
  }
  text += "{\n" + d_.body.text() + "}\n";
  return text;
}

GeneratedSpec Generator::run(uint64_t seed) {
  struct Pattern {
    const char* kind;
    void (Generator::*make)();
  };
  // Every kind about equally often, then one of its patterns.
  static const std::vector<std::vector<Pattern>> kinds = {
      {{"allreduce", &Generator::allreduceOneshot},
       {"allreduce", &Generator::allreduceOneshot},
       {"allreduce", &Generator::allreduceOneshot},
       {"allreduce", &Generator::allreduceTwoshot},
       {"allreduce", &Generator::allreduceTwoshot},
       {"allreduce", &Generator::allreduceRing},
       {"allreduce", &Generator::allreduceHub},
       {"allreduce", &Generator::allreduceAtomic}},
      {{"allgather", &Generator::allgatherDirect},
       {"allgather", &Generator::allgatherDirect},
       {"allgather", &Generator::allgatherRing}},
      {{"reducescatter", &Generator::reducescatterDirect},
       {"reducescatter", &Generator::reducescatterDirect},
       {"reducescatter", &Generator::reducescatterRing}},
      {{"broadcast", &Generator::broadcastDirect},
       {"broadcast", &Generator::broadcastChain},
       {"broadcast", &Generator::broadcastScatterGather}},
      {{"reduce", &Generator::reduceDirect},
       {"reduce", &Generator::reduceChain},
       {"reduce", &Generator::reduceScatterGather}},
      {{"alltoall", &Generator::alltoallDirect},
       {"alltoall", &Generator::alltoallDirect},
       {"alltoall", &Generator::alltoallPairwise}},
  };
  // Allreduce, with the most patterns, twice as often as the others.
  const int draw = rng_.pick(0, int(kinds.size()));
  const auto& patterns = kinds[size_t(draw == int(kinds.size()) ? 0 : draw)];
  const Pattern& pattern = patterns[size_t(rng_.pick(0, int(patterns.size()) - 1))];
  d_.kind = pattern.kind;
  if (rng_.chance(15)) {
    // Other names for the user's buffers now and then.
    d_.in = rng_.oneOf({"src", "input", "x"});
    d_.out = rng_.oneOf({"dst", "output", "y"});
  }
  (this->*pattern.make)();

  GeneratedSpec spec;
  spec.name = "gen" + std::to_string(seed) + "_" + d_.kind;
  spec.text = render(spec.name);
  spec.shape =
      d_.kind + " " + d_.pattern + " ranks " + std::to_string(d_.lo) + ".." + std::to_string(d_.hi);
  for (const auto& choice : d_.choices)
    spec.shape += " " + choice;
  return spec;
}

} // namespace

GeneratedSpec generateSpec(uint64_t seed) {
  return Generator(seed).run(seed);
}

} // namespace collc::differential
