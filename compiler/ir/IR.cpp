#include "compiler/ir/IR.h"

#include "compiler/ir/RowOps.h"
#include "compiler/ir/Visitor.h"

#include <llvm/Support/raw_ostream.h>

namespace collc::ir {

BufferId Program::find(const std::string& name) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].name == name)
      return BufferId(i);
  return -1;
}

BufferId Program::input() const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].role == BufferRole::Input)
      return BufferId(i);
  return -1;
}

BufferId Program::output() const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].role == BufferRole::Output)
      return BufferId(i);
  return -1;
}

std::vector<BufferId> Program::scratchBuffers() const {
  std::vector<BufferId> result;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].role == BufferRole::Scratch)
      result.push_back(BufferId(i));
  std::sort(result.begin(), result.end(), [&](BufferId a, BufferId b) {
    return buffers[size_t(a)].scratchIndex < buffers[size_t(b)].scratchIndex;
  });
  return result;
}

std::string_view helperFile(LoadKind load) {
  switch (load) {
  case LoadKind::PollPacket:
    return "ll.cuh";
  case LoadKind::PollSentinel:
    return "sentinel.cuh";
  case LoadKind::TakeLine:
    return "atomic_lines.cuh";
  case LoadKind::PollLine:
    return "ll128.cuh";
  case LoadKind::Plain:
  case LoadKind::Register:
    break;
  }
  return {};
}

std::string_view helperFile(StoreKind store) {
  switch (store) {
  case StoreKind::FlaggedPacket:
    return "ll.cuh";
  case StoreKind::Sentinel:
    return "sentinel.cuh";
  case StoreKind::LineAdd:
    return "atomic_lines.cuh";
  case StoreKind::FlaggedLine:
    return "ll128.cuh";
  case StoreKind::Plain:
    break;
  }
  return {};
}

bool Program::uses(Storage storage) const {
  for (const Buffer& buffer : buffers)
    if (buffer.storage == storage)
      return true;
  return false;
}

namespace {

const char* roleName(BufferRole role) {
  switch (role) {
  case BufferRole::Input:
    return "input";
  case BufferRole::Output:
    return "output";
  case BufferRole::Aux:
    return "aux";
  case BufferRole::Scratch:
    return "scratch";
  }
  return "?";
}

const char* storageName(Storage storage) {
  switch (storage) {
  case Storage::Elements:
    return "elements";
  case Storage::Packets:
    return "ll-packets";
  case Storage::AtomicLines:
    return "atomic-lines";
  case Storage::LineHeads:
    return "line-heads";
  case Storage::LL128Lines:
    return "ll128-lines";
  case Storage::LL128LinesPerChunk:
    return "ll128-lines per-chunk";
  }
  return "?";
}

const char* loadName(LoadKind load) {
  switch (load) {
  case LoadKind::Plain:
    return "load";
  case LoadKind::PollPacket:
    return "poll_packets";
  case LoadKind::PollSentinel:
    return "poll_sentinel";
  case LoadKind::TakeLine:
    return "take_lines";
  case LoadKind::PollLine:
    return "poll_ll128_line";
  case LoadKind::Register:
    return "register";
  }
  return "?";
}

const char* storeName(StoreKind store) {
  switch (store) {
  case StoreKind::Plain:
    return "store";
  case StoreKind::FlaggedPacket:
    return "store_flagged_packets";
  case StoreKind::Sentinel:
    return "store_sentinel";
  case StoreKind::LineAdd:
    return "add_lines";
  case StoreKind::FlaggedLine:
    return "store_flagged_ll128_line";
  }
  return "?";
}

const char* rangeName(LoopRange range) {
  switch (range) {
  case LoopRange::Peers:
    return "peers";
  case LoopRange::Ranks:
    return "ranks";
  case LoopRange::Interval:
    return "interval";
  }
  return "?";
}

const char* shapeName(LoopShape shape) {
  switch (shape) {
  case LoopShape::Vectors:
    return "vectors";
  case LoopShape::WholeLines:
    return "vectors to whole 128-byte lines";
  case LoopShape::LL128Lines:
    return "ll128 lines, 8 threads each";
  case LoopShape::RowVectors:
    return "the row's vectors";
  }
  return "?";
}

class StmtPrinter : public Visitor {
public:
  StmtPrinter(const Program& program, llvm::raw_ostream& out, unsigned indent, const LineOf& lineOf,
              bool vectorWidths = true)
      : program_(program), out_(out), indent_(indent), lineOf_(lineOf),
        vectorWidths_(vectorWidths) {}

private:
  void begin() { out_.indent(indent_); }
  void end(llvm::SMLoc loc) {
    if (lineOf_ && loc.isValid())
      out_ << "  @" << lineOf_(loc);
    out_ << "\n";
  }
  void nested(const std::vector<Stmt>& body) {
    indent_ += 2;
    visitAll(body);
    indent_ -= 2;
  }
  void region(const Region& r) {
    if (r.owner) {
      out_ << "rank(";
      print(r.owner, out_);
      out_ << ").";
    }
    out_ << program_.buffer(r).name << "[slot ";
    print(r.slot, out_);
    out_ << ", +";
    print(r.offset, out_);
    out_ << ", len ";
    print(r.length, out_);
    out_ << "]";
  }
  void operand(const Operand& o) {
    if (o.set)
      out_ << "for " << o.setVar << " in " << rangeName(*o.set) << ": ";
    out_ << loadName(o.load) << " ";
    if (o.load == LoadKind::Register)
      out_ << o.reg << " = ";
    region(o.region);
  }

  void visitFor(const For& s) override {
    begin();
    out_ << "for " << s.var << " = ";
    print(s.value, out_);
    out_ << " for " << s.index << " in [";
    print(s.begin, out_);
    out_ << ", ";
    print(s.end, out_);
    out_ << ") " << rangeName(s.range);
    end(s.loc);
    nested(s.body);
  }
  void visitIf(const If& s) override {
    begin();
    out_ << "if ";
    print(s.condition, out_);
    end(s.loc);
    nested(s.body);
  }
  void visitPut(const Put& s) override {
    begin();
    out_ << "put " << storeName(s.store) << " ";
    region(s.target);
    out_ << " <- ";
    operand(s.source);
    end(s.loc);
  }
  void visitAtomicAdd(const AtomicAdd& s) override {
    begin();
    out_ << "atomic_add ";
    region(s.target);
    out_ << " <- ";
    operand(s.source);
    end(s.loc);
  }
  void visitAssign(const Assign& s) override {
    begin();
    out_ << (s.reduce ? "reduce " : "copy ") << storeName(s.store) << " ";
    region(s.target);
    if (!s.keep.empty())
      out_ << " keep " << s.keep;
    out_ << " <- ";
    if (s.reduce)
      out_ << "op(";
    for (size_t i = 0; i < s.operands.size(); ++i) {
      out_ << (i ? ", " : "");
      operand(s.operands[i]);
    }
    if (s.reduce)
      out_ << ")";
    for (const Operand& addend : s.addends) {
      out_ << " + ";
      operand(addend);
    }
    end(s.loc);
  }
  void visitRow(const RowStmt& s) override {
    const RowOpInfo& info = rowOpInfo(s.op);
    begin();
    out_ << info.displayName << " " << storeName(s.store) << " ";
    region(s.target);
    out_ << " <- rows of ";
    operand(s.rows);
    for (size_t k = 0; k < s.params.size() && k < info.params.size(); ++k) {
      out_ << " " << info.params[k].name << " ";
      operand(s.params[k]);
    }
    end(s.loc);
  }
  void visitElementLoop(const ElementLoop& s) override {
    begin();
    out_ << "element loop i < ";
    print(s.bound, out_);
    out_ << " over " << shapeName(s.shape);
    if (vectorWidths_)
      out_ << ", vector " << s.vectorElems << " unroll " << s.unroll;
    end(s.loc);
    nested(s.body);
  }
  void visitRowLoop(const RowLoop& s) override {
    begin();
    out_ << "row loop: block b takes rows b, b + blocks, ...";
    if (s.cachedVectors)
      out_ << "; a thread keeps its " << s.cachedVectors << " vector(s) of the row in registers";
    end(s.loc);
    nested(s.body);
  }
  void visitBarrier(const Barrier& s) override {
    begin();
    out_ << "barrier " << s.index << " "
         << (s.scope == BarrierScope::Matched ? "matched (block b waits for block b)"
                                              : "full (every block waits for every block)")
         << " after";
    for (int step : s.orders)
      out_ << " " << program_.steps[size_t(step)].name;
    end(s.loc);
  }
  void visitLet(const Let& s) override {
    begin();
    out_ << "let " << s.reg << " = ";
    operand(s.value);
    end(s.loc);
  }

  const Program& program_;
  llvm::raw_ostream& out_;
  unsigned indent_;
  const LineOf& lineOf_;
  bool vectorWidths_;
};

} // namespace

void print(const Stmt& stmt, const Program& program, llvm::raw_ostream& out, unsigned indent,
           const LineOf& lineOf) {
  StmtPrinter printer(program, out, indent, lineOf);
  printer.visit(stmt);
}

namespace {

void printProgram(const Program& p, llvm::raw_ostream& out, const LineOf& lineOf,
                  bool vectorWidths) {
  out << "program " << p.name << " kind " << name(p.kind) << " ranks " << p.minRanks << ".."
      << p.maxRanks << " sync " << name(p.sync) << " barriers " << p.barriers << " copies "
      << p.scratchCopies << "\n";
  for (const Buffer& b : p.buffers) {
    out << "  buffer " << b.name << " " << roleName(b.role) << " " << storageName(b.storage)
        << (b.polled ? " polled" : "") << " slots ";
    print(b.slots, out);
    out << " x ";
    print(b.slotElems, out);
    if (b.side >= 0)
      out << " heads in " << p.buffer(b.side).name;
    out << "\n";
  }
  for (const Step& step : p.steps) {
    out << "  step " << step.index << " " << step.name;
    if (!step.repeatVar.empty()) { // before step expansion (compiler/ExpandSteps.h)
      out << " for " << step.repeatVar << " in ";
      print(step.repeatBegin, out);
      out << "..";
      print(step.repeatEnd, out);
    }
    for (const Wait& w : step.waits)
      out << " wait " << p.steps[size_t(w.step)].name;
    if (lineOf && step.loc.isValid())
      out << "  @" << lineOf(step.loc);
    out << "\n";
    StmtPrinter printer(p, out, 4, lineOf, vectorWidths);
    printer.visitAll(step.body);
  }
}

} // namespace

void print(const Program& p, llvm::raw_ostream& out, const LineOf& lineOf) {
  printProgram(p, out, lineOf, /*vectorWidths=*/true);
}

void printForProof(const Program& p, llvm::raw_ostream& out, const LineOf& lineOf) {
  printProgram(p, out, lineOf, /*vectorWidths=*/false);
}

} // namespace collc::ir
