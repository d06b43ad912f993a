// Templates in which a rank's own threads rewrite what others of its threads wrote or read, in a
// later step that waits for it (only a barrier orders one thread after another of the same rank:
// they are barrier-only), and the planted bugs: the wait left out, the rewrite in the same step,
// the owner writing over a peer's put, '+' compiled for max, a rank expression past the kernel's
// int.
#include "tests/differential/GeneratorCore.h"

namespace collc::differential::detail {

// AllReduce whose output is first a copy of the input, then rewritten chunk by chunk by a reduce
// whose threads are not the copy's: the copy could land last unless the reduce waits for it.
void Generator::allreduceRewrite() {
  d_.pattern = "rewrite";
  smallRanks();
  d_.syncs = {"barrier"};
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  const std::string copy = rng_.oneOf({"copy", "prefill", "init"});
  const bool planted = planting("local-waw");
  // A copy before the puts is also ordered by the wait for them; the planted bug has it after.
  const bool copyFirst = !planted && rng_.chance(40);
  if (copyFirst) {
    d_.choose("copy-first");
    oneStatementStep(copy, d_.out + " = " + d_.in);
  }
  const bool chunkedPut = rng_.chance(30);
  const std::string c = chunkVar();
  openStep("push");
  forEachPeer(peerVar(), [&](const std::string&, const std::string& ref) {
    if (!chunkedPut) {
      d_.body.line("put " + d_.in + " -> " + ref + "." + slot + "[rank]");
      return;
    }
    d_.body.line("for " + c + " in ranks { put " + d_.in + ".chunk(" + c + ") -> " + ref + "." +
                 slot + "[rank].chunk(" + c + ") }");
  });
  d_.body.close();
  if (!copyFirst)
    oneStatementStep(copy, d_.out + " = " + d_.in);
  openStep("reduce");
  d_.body.line("wait push");
  if (!planted && (!copyFirst || rng_.chance(50)))
    d_.body.line("wait " + copy);
  const std::string mine = d_.in + ".chunk(" + c + ")", peers = slot + "[peers].chunk(" + c + ")";
  d_.body.open("for " + c + " in " + rng_.oneOf({"ranks", "0..nranks"}));
  const Spot rewrite =
      d_.body.lineAt(d_.out + ".chunk(" + c + ") = reduce(" +
                         (rng_.chance(50) ? mine + ", " + peers : peers + ", " + mine) + ")",
                     d_.out);
  d_.body.close();
  d_.body.close();
  if (planted) {
    d_.plant.rule = "which another thread of this rank wrote in step '" + copy + "'";
    d_.plant.at = rewrite;
  }
}

// AllReduce that stages its input in a scratch buffer and sends it from there, then rewrites the
// buffer (with the input again, or with the residual it adds at the end) on other threads than
// the ones that read it for the puts: `wait push` orders the rewrite after those reads, and
// orders nothing else.
void Generator::allreduceRestage() {
  d_.pattern = "restage";
  smallRanks();
  d_.syncs = {"barrier"};
  const std::string slot = slotName();
  const std::string staged = rng_.oneOf({"staged", "mine", "held"});
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  d_.scratch.push_back(staged + ": T[n]");
  const bool residual = rng_.chance(50);
  if (residual) {
    d_.aux.push_back("residual: T[n]");
    d_.choose("residual");
  }
  const bool war = planting("local-war"), inStep = planting("in-step-overwrite");
  oneStatementStep("stage", staged + " = " + d_.in);
  const std::string c = chunkVar();
  // The rewrite goes by chunks where the puts send the buffer whole, and whole where they send
  // it by chunks (the threads that send a chunk would rewrite it in program order); the planted
  // bugs send it whole.
  const bool chunkedPut = rng_.chance(30) && !war && !inStep;
  if (chunkedPut)
    d_.choose("chunked-put");
  const std::string fresh = residual ? "residual" : d_.in;
  auto rewrite = [&]() {
    if (chunkedPut) // whole, by other threads than the chunks' puts
      return d_.body.lineAt(staged + " = " + fresh, staged);
    d_.body.open("for " + c + " in ranks");
    const Spot spot =
        d_.body.lineAt(staged + ".chunk(" + c + ") = " + fresh + ".chunk(" + c + ")", staged);
    d_.body.close();
    return spot;
  };
  openStep("push");
  if (chunkedPut || inStep) // other threads wrote the chunks these threads read, or rewrite
    d_.body.line("wait stage");
  forEachPeer(peerVar(), [&](const std::string&, const std::string& ref) {
    if (!chunkedPut) {
      d_.body.line("put " + staged + " -> " + ref + "." + slot + "[rank]");
      return;
    }
    d_.body.line("for " + c + " in ranks { put " + staged + ".chunk(" + c + ") -> " + ref + "." +
                 slot + "[rank].chunk(" + c + ") }");
  });
  if (inStep) {
    // Other threads of this step still read it for the puts.
    d_.plant.at = rewrite();
    d_.plant.rule = "which another thread of this rank reads in the same step";
  }
  d_.body.close();
  if (!inStep) {
    openStep("restage");
    // The planted bug waits for the staging write only, not for the puts' reads.
    d_.body.line(war ? "wait stage" : "wait push");
    const Spot spot = rewrite();
    d_.body.close();
    if (war) {
      d_.plant.at = spot;
      d_.plant.rule = "which another thread of this rank read in step 'push'";
    }
  }
  openStep("reduce");
  d_.body.line("wait push");
  if (!inStep && !chunkedPut) // a whole rewrite is read whole below, by the same threads
    d_.body.line("wait restage");
  const std::string peers = slot + "[peers]";
  if (residual) {
    d_.body.line(d_.out + " = reduce(" +
                 (rng_.chance(50) ? d_.in + ", " + peers : peers + ", " + d_.in) + ") + " + staged);
  } else {
    d_.body.line(d_.out + " = reduce(" +
                 (rng_.chance(50) ? staged + ", " + peers : peers + ", " + staged) + ")");
  }
  d_.body.close();
}

// AllToAll whose output is first a copy of the input (its own block right, the others to be
// replaced), then rewritten block by block from the slots by other threads.
void Generator::alltoallRewrite() {
  d_.pattern = "rewrite";
  d_.kind = "alltoall";
  smallRanks();
  d_.syncs = {"barrier"};
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  const std::string own = rng_.oneOf({"own", "copy", "prefill"});
  const bool planted = planting("local-waw");
  const bool copyFirst = !planted && rng_.chance(40);
  if (copyFirst) {
    d_.choose("copy-first");
    oneStatementStep(own, d_.out + " = " + d_.in);
  }
  openStep("push");
  forEachPeer(peerVar(), [&](const std::string& idx, const std::string& ref) {
    d_.body.line("put " + d_.in + ".block(" + idx + ") -> " + ref + "." + slot + "[rank]");
  });
  d_.body.close();
  if (!copyFirst)
    oneStatementStep(own, d_.out + " = " + d_.in);
  openStep("gather");
  d_.body.line("wait push");
  if (!planted && (!copyFirst || rng_.chance(50)))
    d_.body.line("wait " + own);
  Spot rewrite;
  forEachPeer(gatherVar(), [&](const std::string& idx, const std::string&) {
    rewrite = d_.body.lineAt(d_.out + ".block(" + idx + ") = " + slot + "[" + idx + "]", d_.out);
  });
  d_.body.close();
  if (planted) {
    d_.plant.rule = "which another thread of this rank wrote in step '" + own + "'";
    d_.plant.at = rewrite;
  }
}

// Broadcast in which every rank first copies its input to its output (the root's result, the
// others' to be replaced), then the other ranks rewrite it chunk by chunk from the inbox.
void Generator::broadcastRewrite() {
  d_.pattern = "rewrite";
  d_.kind = "broadcast";
  smallRanks();
  d_.syncs = {"barrier"};
  d_.scratch.push_back("inbox: T[n]");
  const std::string prefill = rng_.oneOf({"prefill", "copy", "own"});
  const bool planted = planting("local-waw");
  const bool copyFirst = !planted && rng_.chance(40);
  if (copyFirst) {
    d_.choose("copy-first");
    oneStatementStep(prefill, d_.out + " = " + d_.in);
  }
  const bool chunkedPut = rng_.chance(30);
  const std::string c = chunkVar();
  openStep("push");
  d_.body.open("if rank == root");
  forEachPeer(peerVar(), [&](const std::string&, const std::string& ref) {
    if (!chunkedPut)
      d_.body.line("put " + d_.in + " -> " + ref + ".inbox");
    else
      d_.body.line("for " + c + " in ranks { put " + d_.in + ".chunk(" + c + ") -> " + ref +
                   ".inbox.chunk(" + c + ") }");
  });
  d_.body.close();
  d_.body.close();
  if (!copyFirst)
    oneStatementStep(prefill, d_.out + " = " + d_.in);
  openStep("receive");
  d_.body.line("wait push");
  if (!planted && (!copyFirst || rng_.chance(50)))
    d_.body.line("wait " + prefill);
  d_.body.open("if rank != root");
  d_.body.open("for " + c + " in ranks");
  const Spot rewrite =
      d_.body.lineAt(d_.out + ".chunk(" + c + ") = inbox.chunk(" + c + ")", d_.out);
  d_.body.close();
  d_.body.close();
  d_.body.close();
  if (planted) {
    d_.plant.rule = "which another thread of this rank wrote in step '" + prefill + "'";
    d_.plant.at = rewrite;
  }
}

// Planted only: a rank writes the slot of its inbox that a peer puts into, in a later step that
// does not wait for the put, which can then land before the write or after it.
void Generator::ownerOverPut() {
  d_.pattern = "owner-over-put";
  d_.kind = rng_.oneOf({"allreduce", "allgather"});
  smallRanks();
  d_.syncs = {"barrier"};
  const std::string slot = slotName();
  d_.scratch.push_back(slot + "[nranks]: T[n]");
  openStep("push");
  forEachPeer(peerVar(), [&](const std::string&, const std::string& ref) {
    d_.body.line("put " + d_.in + " -> " + ref + "." + slot + "[rank]");
  });
  d_.body.close();
  const std::string other = rng_.oneOf({"(rank + 1) % nranks", "(rank + nranks - 1) % nranks"});
  const std::string own = rng_.oneOf({"own", "mine", "keep"});
  openStep(own);
  d_.plant.at = d_.body.lineAt(slot + "[" + other + "] = " + d_.in, slot);
  d_.plant.rule = "wrote in step 'push', without waiting for it";
  d_.body.close();
  openStep("finish");
  d_.body.line("wait push");
  d_.body.line("wait " + own);
  if (d_.kind == "allreduce") {
    d_.body.line(d_.out + " = reduce(" + d_.in + ", " + slot + "[peers])");
  } else {
    forEachPeer(gatherVar(), [&](const std::string& idx, const std::string&) {
      d_.body.line(d_.out + ".block(" + idx + ") = " + slot + "[" + idx + "]");
    });
    d_.body.line(d_.out + ".block(rank) = " + d_.in);
  }
  d_.body.close();
}

void Generator::plantLocalWaw() {
  switch (rng_.pick(0, 2)) {
  case 0:
    allreduceRewrite();
    break;
  case 1:
    alltoallRewrite();
    break;
  default:
    broadcastRewrite();
  }
}

// A template that adds inputs with '+': right for sum, which it must compile for, refused for
// max and min at the first such statement.
void Generator::plantPlus() {
  forcePlus_ = true;
  switch (rng_.pick(0, 4)) {
  case 0:
    allreduceOneshot();
    break;
  case 1:
    allreduceRing();
    break;
  case 2:
    d_.kind = "reducescatter";
    reducescatterDirect();
    break;
  case 3:
    d_.kind = "reducescatter";
    reducescatterRing();
    break;
  default:
    d_.kind = "reduce";
    reduceChain();
  }
  d_.plant.at = d_.sumOnly;
  d_.plant.rule = "computes its result for op 'sum' only";
  d_.plant.underMaxMin = true;
}

// A peer `(rank + p + M * nranks) % nranks` with M an int literal past 2^30, so that M * nranks
// is past the int the kernel computes it in at every rank count, in the puts of a template that
// names the peer only there.
void Generator::plantIntWidth() {
  const bool gather = rng_.chance(50);
  overflow_ = " + " + std::to_string(rng_.pick(1073741825, 2147483647)) + " * nranks";
  if (gather) {
    d_.kind = "allgather";
    allgatherDirect();
  } else {
    allreduceOneshot();
  }
}

} // namespace collc::differential::detail
