// `collc emit --emit=ast`: the tree as parsed, one node per line, with line:col of each statement.
#include "dsl/AST.h"

#include <llvm/Support/raw_ostream.h>

namespace collc::ast {
namespace {

void printRegion(const RegionRef& region, llvm::raw_ostream& out) {
  if (region.peer) {
    out << "(";
    print(*region.peer, out);
    out << ").";
  }
  out << region.name;
  if (region.slot) {
    out << "[";
    print(*region.slot, out);
    out << "]";
  } else if (region.slotSet) {
    out << "[" << *region.slotSet << "]";
  }
  if (region.block) {
    out << ".block(";
    print(*region.block, out);
    out << ")";
  }
  if (region.chunk) {
    out << ".chunk(";
    print(*region.chunk, out);
    out << ")";
  }
}

void printAddends(const Stmt& stmt, llvm::raw_ostream& out) {
  for (const auto& addend : stmt.addends) {
    out << " + ";
    printRegion(addend, out);
  }
}

void printStmt(const Stmt& stmt, unsigned indent, llvm::raw_ostream& out) {
  out.indent(indent);
  switch (stmt.kind) {
  case Stmt::Kind::Wait:
    out << "Wait " << stmt.waitFor << "\n";
    return;
  case Stmt::Kind::For:
    out << "For " << stmt.var << " in ";
    if (!stmt.rangeSet.empty()) {
      out << stmt.rangeSet;
    } else {
      print(*stmt.lo, out);
      out << "..";
      print(*stmt.hi, out);
    }
    out << "\n";
    for (const auto& inner : stmt.body)
      printStmt(*inner, indent + 2, out);
    return;
  case Stmt::Kind::If:
    out << "If ";
    print(*stmt.lo, out);
    out << (stmt.compare == '=' ? " == " : " != ");
    print(*stmt.hi, out);
    out << "\n";
    for (const auto& inner : stmt.body)
      printStmt(*inner, indent + 2, out);
    return;
  case Stmt::Kind::Put:
  case Stmt::Kind::AtomicAdd:
    out << (stmt.kind == Stmt::Kind::Put ? "Put " : "AtomicAdd ");
    printRegion(stmt.sources[0], out);
    out << " -> ";
    printRegion(stmt.target, out);
    out << "\n";
    return;
  case Stmt::Kind::Copy:
    out << "Copy ";
    printRegion(stmt.target, out);
    out << " = ";
    printRegion(stmt.sources[0], out);
    printAddends(stmt, out);
    out << "\n";
    return;
  case Stmt::Kind::RowNorm:
    out << "RowNorm ";
    printRegion(stmt.target, out);
    out << (stmt.quantize.empty() ? " = " : " = quantize(") << "rmsnorm(";
    printRegion(stmt.sources[0], out);
    out << ", ";
    printRegion(stmt.sources[1], out);
    out << ")";
    for (size_t k = 0; k < stmt.quantize.size(); ++k) {
      out << ", " << stmt.quantize[k].keyword << "=";
      printRegion(stmt.sources[2 + k], out);
    }
    if (!stmt.quantize.empty())
      out << ")";
    out << "\n";
    return;
  case Stmt::Kind::Reduce:
    out << "Reduce ";
    printRegion(stmt.target, out);
    out << " = reduce(";
    for (size_t i = 0; i < stmt.sources.size(); ++i) {
      if (i)
        out << ", ";
      printRegion(stmt.sources[i], out);
    }
    out << ")";
    printAddends(stmt, out);
    out << "\n";
    return;
  }
}

} // namespace

void print(const Expr& expr, llvm::raw_ostream& out) {
  switch (expr.kind) {
  case Expr::Kind::Integer:
    out << expr.value;
    return;
  case Expr::Kind::Name:
    out << expr.name;
    return;
  case Expr::Kind::Binary:
    out << "(";
    print(*expr.operands[0], out);
    out << " " << expr.op << " ";
    print(*expr.operands[1], out);
    out << ")";
    return;
  case Expr::Kind::Call:
    out << expr.name << "(";
    for (size_t i = 0; i < expr.operands.size(); ++i) {
      if (i)
        out << ", ";
      print(*expr.operands[i], out);
    }
    out << ")";
    return;
  }
}

void print(const Spec& spec, llvm::raw_ostream& out) {
  out << "Collective " << spec.name << " kind " << spec.kindName << " ranks " << spec.minRanks
      << ".." << spec.maxRanks << "\n";
  for (const auto& buffer : spec.buffers) {
    out << "  " << (buffer.scratch ? "Scratch " : "Buffer ") << buffer.name;
    if (buffer.slots) {
      out << "[";
      print(*buffer.slots, out);
      out << "]";
    }
    out << ": " << buffer.elementType << "[";
    print(*buffer.size, out);
    out << "]\n";
  }
  if (!spec.rowLengthName.empty())
    out << "  Rows " << spec.rowLengthName << " = " << spec.defaultRowLength << "\n";
  if (!spec.syncName.empty())
    out << "  Sync " << spec.syncName << "\n";
  for (const auto& knob : spec.launch)
    out << "  Launch " << knob.name << " = " << knob.value << "\n";
  for (const auto& step : spec.steps) {
    out << "  Step " << step.name;
    if (!step.repeatVar.empty()) {
      out << " for " << step.repeatVar << " in ";
      print(*step.repeatLo, out);
      out << "..";
      print(*step.repeatHi, out);
    }
    out << "\n";
    for (const auto& stmt : step.body)
      printStmt(*stmt, 4, out);
  }
}

} // namespace collc::ast
