// The rooted templates, Broadcast and Reduce: direct, chain, scatter then gather.
#include "tests/differential/GeneratorCore.h"

namespace collc::differential::detail {

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
  const bool plus = forcePlus_ || rng_.chance(25); // right for sum only
  if (plus) {
    d_.choose("plus");
    d_.sumOnlyAt(d_.body.lineAt("partial = " + d_.in + " + inbox[" + s + " - 1]", "partial"));
  } else {
    d_.body.line("partial = reduce(" + d_.in + ", inbox[" + s + " - 1])");
  }
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

} // namespace collc::differential::detail
