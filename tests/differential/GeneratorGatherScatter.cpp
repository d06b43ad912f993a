// The AllGather and ReduceScatter templates: direct and ring.
#include "tests/differential/GeneratorCore.h"

namespace collc::differential::detail {

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
  // (A block's chunk is no region, so not with chunked puts.)
  const bool fromOutput = !stage && !chunkedPut && ownCopy == 2 && rng_.chance(50);
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
  // This rank's block first, the slots first, accumulated (with '+' under forcePlus_).
  const int form = forcePlus_ ? 2 : rng_.pick(0, 2);
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
    const std::string next = slot + "[" + ahead("k") + "]";
    if (forcePlus_ || rng_.chance(30)) {
      // '+' of the running sum and a peer's block: right for sum only.
      d_.choose("plus");
      d_.sumOnlyAt(d_.body.lineAt(target + " = " + target + " + " + next, target));
    } else {
      d_.body.line(target + " = reduce(" + target + ", " + next + ")");
    }
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
  const std::string mine = d_.in + ".block((rank + nranks - 1 - " + s + ") % nranks)";
  const bool plus = forcePlus_ || rng_.chance(25); // right for sum only
  if (plus) {
    d_.choose("plus");
    d_.sumOnlyAt(d_.body.lineAt("partial = " + mine + " + inbox[" + s + " - 1]", "partial"));
  } else {
    d_.body.line("partial = reduce(" + mine + ", inbox[" + s + " - 1])");
  }
  d_.body.line("put partial -> " + right + ".inbox[" + s + "]");
  d_.body.close();
  d_.body.close();
  openStep("last");
  d_.body.line("wait pass");
  d_.body.line(d_.out + " = reduce(" + d_.in + ".block(rank), inbox[nranks - 2])");
  d_.body.close();
}

} // namespace collc::differential::detail
