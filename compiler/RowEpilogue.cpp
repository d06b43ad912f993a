#include "compiler/RowEpilogue.h"

#include "compiler/ElementCounts.h"
#include "compiler/ir/RowOps.h"
#include "compiler/ir/Visitor.h"
#include "compiler/sync/Strategy.h"

#include <algorithm>

namespace collc {
namespace {

/// The strategies a step split by rows can use, for a message: "barrier, sentinel or ll".
std::string rowStrategies() {
  std::vector<std::string_view> names;
  for (const RegisteredSync& entry : kSyncRegistry)
    if (!entry.experimental && !syncStrategy(entry.value).walksWholeLines())
      names.push_back(entry.name);
  return joinNames(names.data(), names.size(), " or ");
}

bool isWholeRowsBuffer(const ir::Program& program, const ir::Region& region) {
  return program.buffer(region).role != ir::BufferRole::Scratch || !region.owner
             ? ir::structurallyEqual(region.length, ir::ExprNode::count()) &&
                   ir::structurallyEqual(region.offset, ir::ExprNode::constant(0))
             : false;
}

/// A buffer with the element type the spec fixes ("fp8e4m3") or the variant's ("T").
std::string typeText(std::optional<ElementType> type) {
  return type ? std::string(name(*type)) : "T";
}

/// The name of the (first) row statement of a step split by rows, for messages.
std::string rowOpName(const ir::Step& step) {
  for (const auto& stmt : step.body) {
    if (stmt->kind == ir::StmtKind::Row)
      return std::string(ir::rowOpInfo(stmt->as<ir::RowStmt>().op).displayName);
    if (stmt->kind == ir::StmtKind::RowLoop)
      for (const auto& inner : stmt->as<ir::RowLoop>().body)
        if (inner->kind == ir::StmtKind::Row)
          return std::string(ir::rowOpInfo(inner->as<ir::RowStmt>().op).displayName);
  }
  return "a row statement";
}

void requireWholeRows(const ir::Program& program, const ir::Region& region, const char* role,
                      const std::string& opName, Diagnostics& diags) {
  if (!isWholeRowsBuffer(program, region))
    diags.error(region.loc, std::string(role) + " '" + region.text +
                                "' must be a whole buffer of n elements (n / row length rows): "
                                "a step with '" +
                                opName + "' is split by rows, not by chunks");
}

/// A parameter the statement writes is a second output of its own: a user buffer that the
/// target, the rows and the other parameters are not (so never in place with any of them).
void checkWrittenParam(const ir::Program& program, const ir::RowStmt& stmt, size_t k,
                       Diagnostics& diags) {
  const ir::Region& param = stmt.params[k].region;
  const std::string what =
      "the " + std::string(ir::rowOpInfo(stmt.op).params[k].name) + " '" + param.text + "'";
  const ir::Buffer& buffer = program.buffer(param);
  if (buffer.role != ir::BufferRole::Aux) {
    diags.error(param.loc, what + " is written by '" +
                               std::string(ir::rowOpInfo(stmt.op).displayName) +
                               "': it must be a buffer of its own in 'buffers', not " +
                               (buffer.role == ir::BufferRole::Scratch ? "scratch"
                                : buffer.role == ir::BufferRole::Input ? "the input"
                                                                       : "the output"));
    return;
  }
  auto same = [&](const ir::Region& other) { return other.buffer == param.buffer; };
  bool shared = same(stmt.target) || same(stmt.rows.region);
  for (size_t j = 0; j < stmt.params.size(); ++j)
    shared |= j != k && same(stmt.params[j].region);
  if (shared)
    diags.error(param.loc, what + " is written by the statement, so it cannot also be its "
                                  "target, its rows or another parameter (never in place)");
}

/// Every region a statement (or those nested in it) names, with the statement naming it.
class NamedRegions : public ir::Visitor {
public:
  struct Named {
    const ir::Region* region;
    const void* stmt;
  };
  std::vector<Named> regions;

private:
  void add(const ir::Region& region, const void* stmt) { regions.push_back({&region, stmt}); }
  void visitPut(const ir::Put& s) override {
    add(s.source.region, &s);
    add(s.target, &s);
  }
  void visitAtomicAdd(const ir::AtomicAdd& s) override {
    add(s.source.region, &s);
    add(s.target, &s);
  }
  void visitAssign(const ir::Assign& s) override {
    add(s.target, &s);
    for (const auto& o : s.operands)
      add(o.region, &s);
    for (const auto& o : s.addends)
      add(o.region, &s);
  }
  void visitRow(const ir::RowStmt& s) override {
    add(s.target, &s);
    add(s.rows.region, &s);
    for (const auto& o : s.params)
      add(o.region, &s);
  }
  void visitLet(const ir::Let& s) override { add(s.value.region, &s); }
};

/// A buffer a row statement writes as a parameter (a per-token scale) is named by no other
/// statement: none reads it (its elements are written row by row, by other blocks) or writes it,
/// which is what lets the verifier take the write as the row's own. (Within the statement itself,
/// checkWrittenParam refuses it in place.)
void checkWrittenParamsAlone(const ir::Program& program, Diagnostics& diags) {
  NamedRegions named;
  for (const auto& step : program.steps)
    named.visitAll(step.body);
  for (const auto& step : program.steps)
    for (const auto& stmt : step.body) {
      if (stmt->kind != ir::StmtKind::Row)
        continue;
      const auto& row = stmt->as<ir::RowStmt>();
      const ir::RowOpInfo& info = ir::rowOpInfo(row.op);
      for (size_t k = 0; k < row.params.size() && k < info.params.size(); ++k) {
        if (info.params[k].access != ir::RowParamAccess::Written)
          continue;
        const ir::Region& written = row.params[k].region;
        for (const NamedRegions::Named& other : named.regions)
          if (other.stmt != &row && other.region->buffer == written.buffer)
            diags.error(other.region->loc, "'" + program.buffer(written).name +
                                               "' is written by '" + std::string(info.displayName) +
                                               "' (" + written.text +
                                               "); no other statement may read or write it");
      }
    }
}

void checkRowStmt(const ir::Program& program, const ir::RowStmt& stmt, Diagnostics& diags) {
  const ir::RowOpInfo& info = ir::rowOpInfo(stmt.op);
  const std::string opName(info.displayName);
  if (program.rowLengthName.empty()) {
    diags.error(stmt.loc, "'" + opName +
                              "' works row by row: declare the row length in the header, "
                              "e.g. 'rows hidden', and give it with --hidden");
    return;
  }
  requireWholeRows(program, stmt.target, "the target", opName, diags);
  requireWholeRows(program, stmt.rows.region, "the rows", opName, diags);
  for (size_t k = 0; k < stmt.params.size() && k < info.params.size(); ++k) {
    const ir::Region& param = stmt.params[k].region;
    if (info.params[k].access == ir::RowParamAccess::Written)
      checkWrittenParam(program, stmt, k, diags);
    switch (info.params[k].shape) {
    case ir::RowParamShape::OneRow:
      if (!ir::structurallyEqual(param.length, ir::ExprNode::rowLength()) ||
          !ir::structurallyEqual(param.offset, ir::ExprNode::constant(0)))
        diags.error(param.loc, "the " + std::string(info.params[k].name) + " '" + param.text +
                                   "' must hold one row: declare it as '" +
                                   program.buffer(param).name + ": T[" + program.rowLengthName +
                                   "]'");
      break;
    case ir::RowParamShape::OneElement:
      if (!ir::structurallyEqual(param.length, ir::ExprNode::constant(1)) ||
          !ir::structurallyEqual(param.offset, ir::ExprNode::constant(0)))
        diags.error(param.loc, "the " + std::string(info.params[k].name) + " '" + param.text +
                                   "' must hold one element: declare it as '" +
                                   program.buffer(param).name + ": " +
                                   typeText(info.params[k].type) + "[1]'");
      break;
    case ir::RowParamShape::OnePerRow:
      if (!ir::structurallyEqual(param.length,
                                 ir::ExprNode::binary(ir::ExprKind::Div, ir::ExprNode::count(),
                                                      ir::ExprNode::rowLength())) ||
          !ir::structurallyEqual(param.offset, ir::ExprNode::constant(0)))
        diags.error(param.loc, "the " + std::string(info.params[k].name) + " '" + param.text +
                                   "' must hold one element per row: declare it as '" +
                                   program.buffer(param).name + ": " +
                                   typeText(info.params[k].type) + "[n / " + program.rowLengthName +
                                   "]'");
      break;
    case ir::RowParamShape::BlocksPerRow:
    case ir::RowParamShape::SwizzledBlocks: {
      const bool swizzled = info.params[k].shape == ir::RowParamShape::SwizzledBlocks;
      using ir::ExprKind;
      using ir::ExprNode;
      const ir::Expr rowCount =
          ExprNode::binary(ExprKind::Div, ExprNode::count(), ExprNode::rowLength());
      const ir::Expr blocks =
          ExprNode::binary(ExprKind::CeilDiv, ExprNode::rowLength(), ExprNode::constant(16));
      const ir::Expr size =
          swizzled ? ExprNode::binary(
                         ExprKind::Mul,
                         ExprNode::binary(ExprKind::RoundUp, rowCount, ExprNode::constant(128)),
                         ExprNode::binary(ExprKind::RoundUp, blocks, ExprNode::constant(4)))
                   : ExprNode::binary(ExprKind::Mul, rowCount, blocks);
      const std::string& h = program.rowLengthName;
      if (!ir::structurallyEqual(param.length, size) ||
          !ir::structurallyEqual(param.offset, ir::ExprNode::constant(0)))
        diags.error(
            param.loc,
            "the " + std::string(info.params[k].name) + " '" + param.text + "' must hold " +
                (swizzled
                     ? "the 128x4-swizzled matrix of every row's scales of 16 "
                       "elements: declare it as '" +
                           program.buffer(param).name + ": " + typeText(info.params[k].type) +
                           "[round_up(n / " + h + ", 128) * round_up(ceil_div(" + h + ", 16), 4)]'"
                     : "one scale per 16 elements of every row: declare it as '" +
                           program.buffer(param).name + ": " + typeText(info.params[k].type) +
                           "[n / " + h + " * ceil_div(" + h + ", 16)]'"));
      break;
    }
    }
  }
  if (program.buffer(stmt.target).role == ir::BufferRole::Scratch)
    diags.error(stmt.target.loc, "'" + opName +
                                     "' writes user memory (the output or another user "
                                     "buffer), not scratch '" +
                                     stmt.target.text + "'");
}

/// Some row op stores its result as `type` (a quantization the language has).
bool someRowOpWrites(std::optional<ElementType> type) {
  for (const ir::RowOpInfo& info : ir::allRowOps())
    if (info.targetType == type)
      return true;
  return false;
}

/// Every buffer a statement names has the element type its place there needs: `T` everywhere
/// except the target and the typed parameters of a row op that fixes them (RowOps.h), so that
/// no statement moves, adds or reduces an fp8 byte as a `T`.
class ElementTypes : public ir::Visitor {
public:
  ElementTypes(const ir::Program& program, Diagnostics& diags) : program_(program), diags_(diags) {}

private:
  void expect(const ir::Region& region, std::optional<ElementType> want, const std::string& role) {
    const ir::Buffer& buffer = program_.buffer(region);
    if (buffer.fixedType == want)
      return;
    diags_.error(region.loc, "'" + buffer.name + "' holds " + typeText(buffer.fixedType) +
                                 " elements, but " + role + " must hold " + typeText(want) +
                                 (buffer.fixedType ? "; only a quantizing row statement writes or "
                                                     "reads a buffer of a fixed element type"
                                                   : ""));
  }
  void visitPut(const ir::Put& s) override {
    expect(s.source.region, std::nullopt, "the source of 'put'");
    expect(s.target, std::nullopt, "the target of 'put'");
  }
  void visitAtomicAdd(const ir::AtomicAdd& s) override {
    expect(s.source.region, std::nullopt, "the source of 'atomic_add'");
    expect(s.target, std::nullopt, "the target of 'atomic_add'");
  }
  void visitAssign(const ir::Assign& s) override {
    expect(s.target, std::nullopt, "the target of an assignment");
    for (const auto& o : s.operands)
      expect(o.region, std::nullopt, "an operand");
    for (const auto& o : s.addends)
      expect(o.region, std::nullopt, "an operand");
  }
  void visitRow(const ir::RowStmt& s) override {
    const ir::RowOpInfo& info = ir::rowOpInfo(s.op);
    const std::string op = "'" + std::string(info.displayName) + "'";
    if (program_.buffer(s.target).fixedType != info.targetType) {
      const ir::Buffer& target = program_.buffer(s.target);
      diags_.error(s.target.loc,
                   "the target '" + target.name + "' holds " + typeText(target.fixedType) +
                       " elements, but " + op + " writes " + typeText(info.targetType) +
                       (!info.targetType && someRowOpWrites(target.fixedType)
                            ? "; quantize the result to store it as " + typeText(target.fixedType)
                            : ""));
    }
    expect(s.rows.region, std::nullopt, "the rows of " + op);
    for (size_t k = 0; k < s.params.size() && k < info.params.size(); ++k)
      expect(s.params[k].region, info.params[k].type,
             "the " + std::string(info.params[k].name) + " of " + op);
  }

  const ir::Program& program_;
  Diagnostics& diags_;
};

/// A statement sharing its step with a row-wise one: the block that owns a row computes it.
void checkRowStepStatement(const ir::Program& program, const ir::Stmt& stmt,
                           const std::string& opName, Diagnostics& diags) {
  if (stmt->kind != ir::StmtKind::Assign) {
    diags.error(stmt->loc, "a step with '" + opName +
                               "' is split by rows; its other statements must be "
                               "local assignments ('y = reduce(...) + r'); move this one to a step "
                               "of its own");
    return;
  }
  const auto& assign = stmt->as<ir::Assign>();
  requireWholeRows(program, assign.target, "the target", opName, diags);
  for (const auto& operand : assign.operands)
    requireWholeRows(program, operand.region, "the operand", opName, diags);
  for (const auto& addend : assign.addends)
    requireWholeRows(program, addend.region, "the operand", opName, diags);
}

class NestedRowStmts : public ir::Visitor {
public:
  explicit NestedRowStmts(Diagnostics& diags) : diags_(diags) {}

private:
  void visitRow(const ir::RowStmt& s) override {
    diags_.error(s.loc, "'" + std::string(ir::rowOpInfo(s.op).displayName) +
                            "' must be a statement of the step itself, not inside a loop or "
                            "an 'if'");
  }
  Diagnostics& diags_;
};

/// The buffers a statement (or those nested in it) writes.
class WrittenBuffers : public ir::Visitor {
public:
  std::vector<ir::BufferId> written;

private:
  void visitPut(const ir::Put& s) override { written.push_back(s.target.buffer); }
  void visitAtomicAdd(const ir::AtomicAdd& s) override { written.push_back(s.target.buffer); }
  void visitAssign(const ir::Assign& s) override { written.push_back(s.target.buffer); }
  void visitRow(const ir::RowStmt& s) override {
    written.push_back(s.target.buffer);
    const ir::RowOpInfo& info = ir::rowOpInfo(s.op);
    for (size_t k = 0; k < s.params.size() && k < info.params.size(); ++k)
      if (info.params[k].access == ir::RowParamAccess::Written)
        written.push_back(s.params[k].region.buffer);
  }
};

bool mentionsRowLength(const ir::Expr& e) {
  return e &&
         (e->kind == ir::ExprKind::RowLength || mentionsRowLength(e->a) || mentionsRowLength(e->b));
}

/// A buffer sized by the row length may only be read as a row parameter (rmsnorm's weight): then
/// no rule the
/// verifier checks depends on the row length, which is what lets it prove a spec for rows of one
/// element and every n (dsl/README.md, "What the verifier proves").
class RowSizedBuffers : public ir::Visitor {
public:
  RowSizedBuffers(const ir::Program& program, Diagnostics& diags)
      : program_(program), diags_(diags) {}

private:
  void check(const ir::Region& region) {
    const ir::Buffer& buffer = program_.buffer(region);
    if (mentionsRowLength(buffer.slotElems) || mentionsRowLength(buffer.slots))
      diags_.error(region.loc, "'" + buffer.name + "' is sized by the row length ('" +
                                   program_.rowLengthName +
                                   "'); such a buffer may be used only as rmsnorm's weight");
  }
  void visitPut(const ir::Put& s) override {
    check(s.source.region);
    check(s.target);
  }
  void visitAtomicAdd(const ir::AtomicAdd& s) override {
    check(s.source.region);
    check(s.target);
  }
  void visitAssign(const ir::Assign& s) override {
    check(s.target);
    for (const auto& o : s.operands)
      check(o.region);
    for (const auto& o : s.addends)
      check(o.region);
  }
  void visitRow(const ir::RowStmt& s) override {
    check(s.target);
    check(s.rows.region);
  }
  const ir::Program& program_;
  Diagnostics& diags_;
};

/// An op that quantizes blocks of a row (ir::RowOpInfo::quantBlock) does each whole in adjacent
/// lanes: a row length that is no multiple of the block, or a vector that does not divide it, is
/// refused at the variant.
bool checkQuantBlockRowLength(const ir::Program& program, const ir::RowLoop& loop,
                              int64_t rowLength, llvm::SMLoc loc, Diagnostics& diags) {
  int vectorElems = 0;
  const ir::RowStmt* blocked = nullptr;
  for (const auto& inner : loop.body) {
    if (inner->kind == ir::StmtKind::ElementLoop)
      vectorElems = inner->as<ir::ElementLoop>().vectorElems;
    if (inner->kind == ir::StmtKind::Row) {
      const auto& row = inner->as<ir::RowStmt>();
      if (ir::rowOpInfo(row.op).quantBlock.elems > 0)
        blocked = &row;
    }
  }
  if (!blocked)
    return true;
  const ir::RowOpInfo& info = ir::rowOpInfo(blocked->op);
  const std::string opName(info.displayName), format(info.quantBlock.format);
  const int64_t blockElems = info.quantBlock.elems;
  if (rowLength % blockElems != 0) {
    diags.error(loc, "row length " + std::to_string(rowLength) + " is not a multiple of " +
                         std::to_string(blockElems) + ": '" + opName + "' (" + program.name +
                         ") quantizes whole " + format + " blocks of " +
                         std::to_string(blockElems) + " elements");
    return false;
  }
  if (vectorElems > 0 && blockElems % vectorElems != 0) {
    diags.error(loc, "a vector of " + std::to_string(vectorElems) +
                         " elements does not divide an " + format + " block of " +
                         std::to_string(blockElems) + " ('" + opName +
                         "'); choose a smaller --vector");
    return false;
  }
  return true;
}

} // namespace

std::vector<AuxBuffer> describeAuxBuffers(const ir::Program& program, int nranks,
                                          int64_t rowLength) {
  WrittenBuffers writes;
  for (const auto& step : program.steps)
    writes.visitAll(step.body);
  std::vector<AuxBuffer> aux;
  for (size_t id = 0; id < program.buffers.size(); ++id) {
    const ir::Buffer& buffer = program.buffers[id];
    if (buffer.role != ir::BufferRole::Aux)
      continue;
    AuxBuffer described;
    described.name = buffer.name;
    described.written = std::find(writes.written.begin(), writes.written.end(), ir::BufferId(id)) !=
                        writes.written.end();
    described.elems = elementCount(buffer.slotElems, nranks, rowLength);
    described.fixedType = buffer.fixedType;
    aux.push_back(std::move(described));
  }
  return aux;
}

std::optional<AddRmsNormEpilogue> findAddRmsNorm(const ir::Program& program) {
  for (const auto& step : program.steps) {
    const ir::RowStmt* norm = nullptr;
    for (const auto& stmt : step.body)
      if (stmt->kind == ir::StmtKind::Row && stmt->as<ir::RowStmt>().op == ir::RowOp::RmsNorm)
        norm = &stmt->as<ir::RowStmt>();
    if (!norm || program.buffer(norm->target).role != ir::BufferRole::Output)
      continue;
    const ir::Buffer& rows = program.buffer(norm->rows.region);
    const ir::Buffer& weight = program.buffer(norm->params.at(0).region);
    for (const auto& stmt : step.body) {
      if (stmt->kind != ir::StmtKind::Assign)
        continue;
      const auto& assign = stmt->as<ir::Assign>();
      if (!assign.reduce || assign.target.buffer != norm->rows.region.buffer ||
          assign.addends.size() != 1)
        continue;
      const ir::Buffer& residual = program.buffer(assign.addends[0].region);
      if (rows.role != ir::BufferRole::Aux || weight.role != ir::BufferRole::Aux ||
          residual.role != ir::BufferRole::Aux)
        continue;
      return AddRmsNormEpilogue{residual.auxIndex, rows.auxIndex, weight.auxIndex};
    }
  }
  return std::nullopt;
}

bool hasRowStatement(const ir::Step& step) {
  for (const auto& stmt : step.body)
    if (stmt->kind == ir::StmtKind::Row || stmt->kind == ir::StmtKind::RowLoop)
      return true;
  return false;
}

void checkRowStatements(const ir::Program& program, Diagnostics& diags) {
  if (!program.rowLengthName.empty())
    for (const auto& buffer : program.buffers)
      if (buffer.name == program.rowLengthName)
        diags.error(buffer.loc, "'" + buffer.name + "' names the row length ('rows " + buffer.name +
                                    "'); a buffer cannot have that name");
  // A written parameter's own rules first: where its buffer is also of the wrong type, being
  // named elsewhere or in place is what to fix.
  checkWrittenParamsAlone(program, diags);
  RowSizedBuffers rowSized(program, diags);
  for (const auto& step : program.steps)
    rowSized.visitAll(step.body);
  NestedRowStmts nested(diags);
  for (const auto& step : program.steps) {
    for (const auto& stmt : step.body)
      if (stmt->kind == ir::StmtKind::For || stmt->kind == ir::StmtKind::If)
        nested.visit(stmt);
    if (!hasRowStatement(step))
      continue;
    const std::string opName = rowOpName(step);
    for (const auto& stmt : step.body) {
      if (stmt->kind == ir::StmtKind::Row)
        checkRowStmt(program, stmt->as<ir::RowStmt>(), diags);
      else
        checkRowStepStatement(program, stmt, opName, diags);
    }
  }
  ElementTypes types(program, diags);
  for (const auto& step : program.steps)
    types.visitAll(step.body);
}

std::vector<std::pair<int64_t, int64_t>> shapesToVerify(const ir::Program& program, int nranks) {
  const int64_t lengths[] = {1, 2 * nranks + 3, ir::kChunkAlignElems * nranks * 3 + 5};
  const int64_t rows[] = {1, 3, 2};
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int k = 0; k < 3; ++k)
    shapes.push_back(program.rowLengthName.empty() ? std::pair{lengths[k], int64_t(0)}
                                                   : std::pair{rows[k] * lengths[k], lengths[k]});
  return shapes;
}

bool checkRowLength(const ir::Program& program, int64_t rowLength, Diagnostics& diags) {
  const llvm::SMLoc loc = program.rowsLoc.isValid() ? program.rowsLoc : program.loc;
  if (program.rowLengthName.empty()) {
    if (rowLength == 0)
      return true;
    diags.error(program.loc, "a row length (--hidden " + std::to_string(rowLength) +
                                 ") was given, but the spec has no rows");
    return false;
  }
  if (rowLength <= 0) {
    diags.error(loc, "the spec works on rows of '" + program.rowLengthName +
                         "' elements: give the row length (--hidden, CompileOptions::rowLength)");
    return false;
  }
  if (rowLength > kMaxRowLength) {
    diags.error(loc, "row length " + std::to_string(rowLength) +
                         " (--hidden, CompileOptions::rowLength) is larger than the most collc "
                         "supports, 2^30 = " +
                         std::to_string(kMaxRowLength));
    return false;
  }
  for (const auto& step : program.steps) {
    if (!hasRowStatement(step))
      continue;
    if (syncStrategy(program.sync).walksWholeLines()) {
      diags.error(program.syncLoc.isValid() ? program.syncLoc : program.loc,
                  "sync strategy '" + std::string(name(program.sync)) + "' cannot synchronize '" +
                      program.name + "': step '" + step.name + "' is split by rows ('" +
                      rowOpName(step) +
                      "'), and this strategy walks whole 128-byte "
                      "lines; use " +
                      rowStrategies());
      return false;
    }
    for (const auto& stmt : step.body) {
      if (stmt->kind != ir::StmtKind::RowLoop)
        continue;
      if (!checkQuantBlockRowLength(program, stmt->as<ir::RowLoop>(), rowLength, loc, diags))
        return false;
      for (const auto& inner : stmt->as<ir::RowLoop>().body) {
        if (inner->kind != ir::StmtKind::ElementLoop)
          continue;
        const int vectorElems = inner->as<ir::ElementLoop>().vectorElems;
        if (rowLength % vectorElems != 0) {
          diags.error(loc, "row length " + std::to_string(rowLength) + " is not a multiple of " +
                               std::to_string(vectorElems) +
                               " elements, the vector width of this variant: a vector would "
                               "straddle two rows; choose a smaller --vector");
          return false;
        }
      }
    }
  }
  return true;
}

} // namespace collc
