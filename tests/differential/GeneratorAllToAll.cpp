// The AllToAll templates: direct and pairwise.
#include "tests/differential/GeneratorCore.h"

namespace collc::differential::detail {

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

} // namespace collc::differential::detail
