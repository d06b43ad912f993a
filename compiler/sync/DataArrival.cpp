#include "compiler/sync/DataArrival.h"

#include "compiler/ir/Visitor.h"

namespace collc {

bool checkDataArrivalApplies(const ir::Program& program, const VerifyResult& proof,
                             const char* strategy, Diagnostics& diags) {
  const llvm::SMLoc loc = program.syncLoc.isValid() ? program.syncLoc : program.loc;
  const std::string prefix =
      std::string("sync strategy '") + strategy + "' cannot synchronize '" + program.name + "': ";
  unsigned before = diags.errorCount();
  if (proof.usesAtomics)
    diags.error(loc, prefix + "atomic_add gives a reader no per-element sign that the additions "
                              "are complete; use 'barrier' (or 'll128_atomic' for a two-shot sum)");
  if (!proof.localAligned)
    diags.error(loc, prefix +
                         "a step reads or overwrites data that another thread of the same rank "
                         "accessed in an earlier step, which only a barrier orders; use "
                         "'barrier'");
  if (proof.remoteWriteOrdering)
    diags.error(loc, prefix + "a rank overwrites memory a peer used in an earlier step, and only "
                              "a barrier tells it the peer is done; use 'barrier'");
  if (!proof.exchangesAreMutual)
    diags.error(loc, prefix + "some rank sends data to a peer that sends it nothing back in the "
                              "same call, so it could run two calls ahead and overwrite data the "
                              "peer has not read yet; use 'barrier'");
  for (int index : proof.remotelyWritten)
    if (proof.locallyWritten.count(index))
      diags.error(program.buffers[index].loc,
                  prefix + "scratch '" + program.buffers[index].name +
                      "' is written both by peers and by its own rank; readers could not tell "
                      "which write arrived");
  return diags.errorCount() == before;
}

namespace {

/// Sets the load and store kinds of every access to the polled buffers.
class PollRewrite : public ir::Mutator {
public:
  PollRewrite(const std::set<int>& buffers, ir::LoadKind load, ir::StoreKind store)
      : buffers_(buffers), load_(load), store_(store) {}

private:
  bool polled(const ir::Region& region) const { return buffers_.count(region.buffer) != 0; }
  ir::StoreKind storeInto(const ir::Region& target, ir::StoreKind current) const {
    return polled(target) ? store_ : current;
  }
  ir::Operand mutateOperand(const ir::Operand& operand) override {
    ir::Operand o = operand;
    if (polled(o.region) && o.load == ir::LoadKind::Plain)
      o.load = load_;
    return o;
  }
  ir::Stmt mutatePut(const ir::Put& s) override {
    return std::make_shared<ir::Put>(s.loc, mutateOperand(s.source), s.target,
                                     storeInto(s.target, s.store));
  }
  ir::Stmt mutateAssign(const ir::Assign& s) override {
    return std::make_shared<ir::Assign>(s.loc, s.target, s.reduce, mutateOperands(s.operands),
                                        mutateOperands(s.addends), storeInto(s.target, s.store),
                                        s.keep);
  }
  ir::Stmt mutateRow(const ir::RowStmt& s) override {
    return std::make_shared<ir::RowStmt>(s.loc, s.op, s.target, mutateOperand(s.rows),
                                         mutateOperands(s.params), storeInto(s.target, s.store));
  }
  const std::set<int>& buffers_;
  ir::LoadKind load_;
  ir::StoreKind store_;
};

class LoopShapes : public ir::Mutator {
public:
  explicit LoopShapes(ir::LoopShape shape) : shape_(shape) {}

private:
  ir::Stmt mutateElementLoop(const ir::ElementLoop& s) override {
    const ir::LoopShape shape = s.shape == ir::LoopShape::Vectors ? shape_ : s.shape;
    return std::make_shared<ir::ElementLoop>(s.loc, s.bound, shape, s.vectorElems, s.unroll,
                                             s.body);
  }
  ir::LoopShape shape_;
};

} // namespace

ir::Program pollBuffers(const ir::Program& program, const std::set<int>& buffers,
                        ir::Storage storage, ir::LoadKind load, ir::StoreKind store) {
  PollRewrite rewrite(buffers, load, store);
  ir::Program result = ir::mutateSteps(program, rewrite);
  for (int index : buffers) {
    result.buffers[size_t(index)].storage = storage;
    result.buffers[size_t(index)].polled = true;
  }
  result.barriers = 0;
  return result;
}

ir::Program shapeLoops(const ir::Program& program, ir::LoopShape shape) {
  LoopShapes shapes(shape);
  return ir::mutateSteps(program, shapes);
}

} // namespace collc
