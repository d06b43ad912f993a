// The AllReduce templates: one-shot, two-shot, ring, hub and atomic accumulation.
#include "tests/differential/GeneratorCore.h"

namespace collc::differential::detail {

// One-shot AllReduce: every rank puts its input into a slot of every peer and reduces locally.
void Generator::allreduceOneshot() {
  d_.pattern = "oneshot";
  smallRanks();
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  // 0-2: no epilogue, 3: + residual, 4: + residual + bias, 5-6: residual_out, maybe rmsnorm.
  // Accumulating with '+' (forcePlus_) takes form 4, which has no epilogue.
  const int epilogue = forcePlus_ ? rng_.pick(0, 2) : std::min(rng_.pick(0, 6), 5);
  const bool rms = epilogue == 5 && rng_.chance(60);
  const bool stage = !rms && rng_.chance(30);
  const bool chunkedPut = rng_.chance(30);
  const int form = forcePlus_ ? 4 : epilogue > 2 ? rng_.pick(0, 1) : rng_.pick(0, 4);
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
  if (pipelined)
    dropAtomicLines(); // ll128_atomic needs the puts in one step
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
    const std::string next = slot + "[" + ahead(k) + "]";
    if (forcePlus_ || rng_.chance(30)) {
      // '+' of the running sum and a peer's input: right for sum only.
      d_.choose("plus");
      d_.sumOnlyAt(d_.body.lineAt(target + " = " + target + " + " + next, target));
    } else {
      d_.body.line(target + " = reduce(" + target + ", " + next + ")");
    }
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
  // Partial sums with '+' now and then: right for sum only.
  const bool plus = forcePlus_ || rng_.chance(25);
  const bool plusFirst = plus && (forcePlus_ || rng_.chance(70));
  if (plus)
    d_.choose("plus");
  const std::string mine = d_.in + ".chunk(" + k + ")", before = "inbox[" + s + " - 1]";
  if (plusFirst)
    d_.sumOnlyAt(d_.body.lineAt("partial.chunk(" + k + ") = " + mine + " + " + before, "partial"));
  else
    d_.body.line("partial.chunk(" + k + ") = reduce(" + mine + ", " + before + ")");
  d_.body.line("put partial.chunk(" + k + ") -> " + right + ".inbox[" + s + "]");
  d_.body.close();
  d_.body.close();
  openStep("gather", s + " in 0..nranks - 1");
  d_.body.line("wait scatter");
  d_.body.line("wait gather");
  d_.body.open("if " + s + " == 0");
  const std::string last = d_.in + ".chunk((rank + 1) % nranks)";
  if (plus && !plusFirst)
    d_.sumOnlyAt(d_.body.lineAt(
        d_.out + ".chunk((rank + 1) % nranks) = " + last + " + inbox[nranks - 2]", d_.out));
  else
    d_.body.line(d_.out + ".chunk((rank + 1) % nranks) = reduce(" + last + ", inbox[nranks - 2])");
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
    // Atomic adds are sums whatever the operator.
    d_.sumOnlyAt(d_.body.lineAt("atomic_add " + d_.in + ".chunk(" + idx + ") -> " + ref +
                                    ".acc.chunk(" + idx + ")",
                                "atomic_add"));
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

} // namespace collc::differential::detail
