#include "compiler/Sema.h"

#include "abi/CollectiveShapes.h"
#include "abi/collc_abi.h"
#include "compiler/RowEpilogue.h"
#include "compiler/ir/RowOps.h"
#include "compiler/ir/Visitor.h"

#include <algorithm>
#include <set>

namespace collc {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::ExprNode;

/// What an expression may mention where it appears.
enum class ExprContext {
  Size,  // buffer sizes and slot counts: n, nranks, constants, chunk(...); the same on every rank
  Index, // slots, peers, chunk indices, loop bounds: also rank and loop variables
};

class Analyzer {
public:
  Analyzer(const ast::Spec& spec, Diagnostics& diags) : spec_(spec), diags_(diags) {}

  std::unique_ptr<ir::Program> run() {
    program_ = std::make_unique<ir::Program>();
    program_->name = spec_.name;
    program_->loc = spec_.loc;
    program_->rowLengthName = spec_.rowLengthName;
    program_->rowsLoc = spec_.rowsLoc;
    checkHeader();
    declareBuffers();
    checkLaunch();
    buildSteps();
    if (diags_.hasErrors())
      return nullptr;
    return std::move(program_);
  }

private:
  void checkHeader() {
    if (!spec_.kind) {
      diags_.error(spec_.kindLoc, "unknown collective kind '" + spec_.kindName + "'; expected " +
                                      nameList<CollectiveKind>());
    } else {
      program_->kind = *spec_.kind;
    }
    if (spec_.minRanks < 2 || spec_.maxRanks > COLLC_MAX_RANKS || spec_.minRanks > spec_.maxRanks) {
      diags_.error(spec_.ranksLoc.isValid() ? spec_.ranksLoc : spec_.loc,
                   "rank range " + std::to_string(spec_.minRanks) + ".." +
                       std::to_string(spec_.maxRanks) + " is invalid; it must lie within 2.." +
                       std::to_string(COLLC_MAX_RANKS));
    } else {
      program_->minRanks = int(spec_.minRanks);
      program_->maxRanks = int(spec_.maxRanks);
    }
    if (spec_.defaultRowLengthLoc.isValid()) {
      // The same bounds as a row length the variant gives (checkRowLength), here at the number.
      if (spec_.defaultRowLength < 1 || spec_.defaultRowLength > uint64_t(kMaxRowLength))
        diags_.error(spec_.defaultRowLengthLoc, "row length " +
                                                    std::to_string(spec_.defaultRowLength) +
                                                    " is out of range: a row holds 1 to 2^30 = " +
                                                    std::to_string(kMaxRowLength) + " elements");
      else
        program_->defaultRowLength = int64_t(spec_.defaultRowLength);
    }
    if (!spec_.syncName.empty()) {
      program_->syncLoc = spec_.syncLoc;
      auto sync = parseSyncKind(spec_.syncName);
      if (!sync)
        diags_.error(spec_.syncLoc, "unknown sync strategy '" + spec_.syncName + "'; expected " +
                                        nameList<SyncKind>());
      else
        program_->defaultSync = *sync;
    }
  }

  void declareBuffers() {
    int userBuffers = 0;
    int scratchBuffers = 0;
    for (const auto& decl : spec_.buffers) {
      if (program_->find(decl.name) >= 0) {
        diags_.error(decl.loc, "buffer '" + decl.name + "' is declared twice");
        continue;
      }
      ir::Buffer buffer;
      if (decl.elementType != "T") {
        buffer.fixedType = parseName<ElementType>(decl.elementType);
        if (!buffer.fixedType)
          diags_.error(decl.elementTypeLoc,
                       "unknown element type '" + decl.elementType +
                           "'; expected 'T' (the variant's, chosen with --dtype) or " +
                           nameList<ElementType>());
        else if (decl.scratch || userBuffers == 0)
          diags_.error(decl.elementTypeLoc,
                       std::string(decl.scratch ? "a scratch buffer" : "the input") +
                           " holds the variant's elements: declare it 'T', "
                           "not '" +
                           decl.elementType + "'");
      }
      buffer.name = decl.name;
      buffer.loc = decl.loc;
      buffer.slotElems = lowerExpr(*decl.size, ExprContext::Size, {});
      buffer.slots =
          decl.slots ? lowerExpr(*decl.slots, ExprContext::Size, {}) : ExprNode::constant(1);
      checkSizeForms(decl, buffer.slotElems, buffer.slots);
      if (decl.scratch) {
        buffer.role = ir::BufferRole::Scratch;
        buffer.scratchIndex = scratchBuffers++;
        if (scratchBuffers == COLLC_MAX_SCRATCH + 1)
          diags_.error(decl.loc, "too many scratch buffers; at most " +
                                     std::to_string(COLLC_MAX_SCRATCH) + " are supported");
        hasSlots_.insert({decl.name, decl.slots != nullptr});
      } else {
        ++userBuffers;
        // The first user buffer is the input, the second the output; their sizes are the kind's
        // (CollectiveShapes.h).
        buffer.role = userBuffers == 1 ? ir::BufferRole::Input : ir::BufferRole::Output;
        if (userBuffers > 2) // after the input and the output: aux buffers (RowEpilogue.h)
          declareAuxBuffer(decl, buffer, userBuffers - 3);
        else if (buffer.slotElems)
          checkUserBufferShape(decl, buffer.slotElems, userBuffers == 1);
        hasSlots_.insert({decl.name, false});
      }
      program_->buffers.push_back(std::move(buffer));
    }
    if (userBuffers < 2)
      diags_.error(spec_.loc, article() +
                                  " needs an input and an output buffer: add 'buffers in: " +
                                  shapeText(true) + ", out: " + shapeText(false) + "'");
  }

  /// Sizes may use n only as `a * n + b` or `chunk(a * n + b)` (ir::SizeForm), for every rank
  /// count the spec declares; slot counts not at all.
  void checkSizeForms(const ast::BufferDecl& decl, const Expr& elems, const Expr& slots) {
    if (slots && ir::mentionsCount(slots))
      diags_.error(decl.slots->loc, "the number of slots of '" + decl.name +
                                        "' may not depend on n; use nranks and integers");
    if (!elems)
      return;
    for (int nranks = program_->minRanks; nranks <= program_->maxRanks; ++nranks) {
      ir::Env env;
      env.nranks = nranks;
      env.rowLength = program_->rowLengthName.empty() ? 0 : 1; // 0: n / row length is refused
      std::string why;
      // The kernel computes the size in its C types (ir::CType): an int part must not overflow.
      ir::Env smallest = env;
      smallest.count = 1;
      if (!ir::evaluate(elems, smallest, &why)) {
        diags_.error(decl.size->loc, "the size of '" + decl.name + "' cannot be computed: " + why +
                                         " (nranks=" + std::to_string(nranks) + ", n=1)");
        return;
      }
      if (!ir::sizeForm(elems, env, &why)) {
        diags_.error(decl.size->loc,
                     "the size of '" + decl.name + "' cannot be proved for every n: " + why +
                         " (nranks=" + std::to_string(nranks) +
                         "); sizes may use n only as 'a * n + b' or 'chunk(a * n + b)', with a "
                         "and b free of n" +
                         (program_->rowLengthName.empty()
                              ? std::string()
                              : ", plus 'c * (n / " + program_->rowLengthName +
                                    ")' or 'c * round_up(n / " + program_->rowLengthName +
                                    ", k)' (rows)"));
        return;
      }
    }
  }

  std::string kindName() const { return std::string(name(program_->kind)); }
  std::string article() const {
    return (program_->kind == CollectiveKind::AllReduce ||
                    program_->kind == CollectiveKind::AllGather ||
                    program_->kind == CollectiveKind::AllToAll
                ? "an "
                : "a ") +
           kindName();
  }
  bool perRankBlocks(bool input) const {
    return input ? inputIsPerRankBlocks(program_->kind) : outputIsPerRankBlocks(program_->kind);
  }
  std::string shapeText(bool input) const {
    return perRankBlocks(input) ? "T[n * nranks]" : "T[n]";
  }

  /// The input and output sizes are fixed by the kind; any expression equal to them for every
  /// rank count and n is accepted (`n * nranks`, `nranks * n`).
  void checkUserBufferShape(const ast::BufferDecl& decl, const Expr& size, bool input) {
    bool matches = true;
    for (int64_t nranks = 2; nranks <= COLLC_MAX_RANKS && matches; ++nranks)
      for (int64_t count : {1, 3, 8, 1000}) {
        ir::Env env;
        env.nranks = nranks;
        env.count = count;
        auto value = ir::evaluate(size, env);
        matches &= value && *value == (perRankBlocks(input) ? count * nranks : count);
      }
    if (matches)
      return;
    std::string role = input ? "input" : "output";
    std::string holds = perRankBlocks(input) ? "n * nranks elements" : "n elements";
    diags_.error(decl.size->loc, "the " + role + " of " + article() + " holds " + holds +
                                     "; declare it as '" + decl.name + ": " + shapeText(input) +
                                     "'");
  }

  /// A user buffer after the input and the output: the caller's memory, of any size, passed in
  /// collc_params::aux.
  void declareAuxBuffer(const ast::BufferDecl& decl, ir::Buffer& buffer, int auxIndex) {
    buffer.role = ir::BufferRole::Aux;
    buffer.auxIndex = auxIndex;
    if (auxIndex >= COLLC_MAX_AUX)
      diags_.error(decl.loc, "too many user buffers; besides the input and the output at most " +
                                 std::to_string(COLLC_MAX_AUX) + " are supported");
  }

  void checkLaunch() {
    std::set<std::string> seen;
    for (const auto& knob : spec_.launch) {
      if (!seen.insert(knob.name).second) {
        diags_.error(knob.loc, "launch knob '" + knob.name + "' is given twice");
        continue;
      }
      auto require = [&](bool ok, const std::string& rule) {
        if (!ok)
          diags_.error(knob.loc, "launch knob '" + knob.name + "' = " + std::to_string(knob.value) +
                                     " is invalid: " + rule);
        return ok;
      };
      int value = int(std::min<uint64_t>(knob.value, 1 << 20));
      if (knob.name == "blocks") {
        if (require(value >= 1 && value <= COLLC_MAX_BLOCKS,
                    "must be 1.." + std::to_string(COLLC_MAX_BLOCKS)))
          program_->launch.blocks = value;
      } else if (knob.name == "threads") {
        if (require(value >= 32 && value <= 1024 && value % 32 == 0,
                    "must be a multiple of 32 in 32..1024"))
          program_->launch.threads = value;
      } else if (knob.name == "vector") {
        if (require(value == 2 || value == 4 || value == 8 || value == 16,
                    "must be 2, 4, 8 or 16 bytes"))
          program_->launch.vectorBytes = value;
      } else if (knob.name == "unroll") {
        if (require(value >= 1 && value <= 8, "must be 1..8"))
          program_->launch.unroll = value;
      } else if (knob.name == "whole_stores") {
        if (require(value == 0 || value == 1, "must be 0 or 1"))
          program_->launch.wholeStores = value;
      } else {
        diags_.error(knob.loc, "unknown launch knob '" + knob.name +
                                   "'; expected blocks, threads, vector, unroll or whole_stores");
      }
    }
  }

  void buildSteps() {
    if (spec_.steps.empty())
      diags_.error(spec_.loc, "the collective has no steps");
    std::map<std::string, int> stepIndex;
    for (const auto& astStep : spec_.steps) {
      ir::Step step;
      step.name = astStep.name;
      step.loc = astStep.loc;
      step.index = int(program_->steps.size());
      if (stepIndex.count(astStep.name)) {
        diags_.error(astStep.loc, "step '" + astStep.name + "' is declared twice");
      }
      std::vector<std::string> scope;
      if (!astStep.repeatVar.empty()) {
        step.repeatVar = astStep.repeatVar;
        step.repeatBegin = lowerExpr(*astStep.repeatLo, ExprContext::Size, {});
        step.repeatEnd = lowerExpr(*astStep.repeatHi, ExprContext::Size, {});
        // The steps are unrolled when the kernel is generated, where nranks is known but n is not.
        if (ir::mentionsCount(step.repeatBegin) || ir::mentionsCount(step.repeatEnd))
          diags_.error(astStep.repeatLo->loc, "the repetitions of a step may depend on nranks but "
                                              "not on n, which is known only when the kernel runs");
        scope.push_back(astStep.repeatVar);
      }
      for (const auto& stmt : astStep.body) {
        if (stmt->kind == ast::Stmt::Kind::Wait) {
          auto it = stepIndex.find(stmt->waitFor);
          if (stmt->waitFor == astStep.name && !astStep.repeatVar.empty())
            step.waits.push_back({step.index, stmt->loc}); // the previous repetition
          else if (stmt->waitFor == astStep.name)
            diags_.error(stmt->loc, "step '" + astStep.name +
                                        "' waits for itself; only a repeated step ('step " +
                                        astStep.name +
                                        " for s in LO..HI') may, for its previous repetition");
          else if (it == stepIndex.end())
            diags_.error(stmt->loc,
                         std::any_of(spec_.steps.begin(), spec_.steps.end(),
                                     [&](const ast::Step& s) { return s.name == stmt->waitFor; })
                             ? "wait for step '" + stmt->waitFor +
                                   "', which comes later: a step can only wait for "
                                   "an earlier one"
                             : "wait for unknown step '" + stmt->waitFor + "'");
          else
            step.waits.push_back({it->second, stmt->loc});
          continue;
        }
        if (auto lowered = lowerStmt(*stmt, scope))
          step.body.push_back(std::move(lowered));
      }
      stepIndex.insert({astStep.name, step.index});
      program_->steps.push_back(std::move(step));
    }
  }

  ir::Stmt lowerStmt(const ast::Stmt& stmt, std::vector<std::string>& scope) {
    switch (stmt.kind) {
    case ast::Stmt::Kind::Wait:
      diags_.error(stmt.loc, "'wait' must be a statement of the step itself, not inside a loop "
                             "or an 'if'");
      return nullptr;
    case ast::Stmt::Kind::If: {
      Expr lhs = lowerExpr(*stmt.lo, ExprContext::Index, scope);
      Expr rhs = lowerExpr(*stmt.hi, ExprContext::Index, scope);
      std::vector<ir::Stmt> body = lowerBody(stmt.body, scope);
      if (!lhs || !rhs)
        return nullptr;
      return std::make_shared<ir::If>(
          stmt.loc, ExprNode::binary(stmt.compare == '=' ? ExprKind::Eq : ExprKind::Ne, lhs, rhs),
          std::move(body));
    }
    case ast::Stmt::Kind::For: {
      if (std::find(scope.begin(), scope.end(), stmt.var) != scope.end()) {
        diags_.error(stmt.varLoc, "loop variable '" + stmt.var + "' shadows an outer one");
        return nullptr;
      }
      // Names the compiler makes start with '%', which no name in a spec can: they never
      // capture (or are captured by) a spec's names.
      const std::string indexName = "%i." + stmt.var;
      Expr index = ExprNode::var(indexName);
      ir::LoopRange range = ir::LoopRange::Interval;
      Expr begin, end, value = index;
      if (stmt.rangeSet == "peers") {
        range = ir::LoopRange::Peers;
        begin = ExprNode::constant(1);
        end = ExprNode::nranks();
        value = ExprNode::binary(ExprKind::Mod,
                                 ExprNode::binary(ExprKind::Add, ExprNode::rank(), index),
                                 ExprNode::nranks());
      } else if (stmt.rangeSet == "ranks") {
        range = ir::LoopRange::Ranks;
        begin = ExprNode::constant(0);
        end = ExprNode::nranks();
      } else {
        begin = lowerExpr(*stmt.lo, ExprContext::Index, scope);
        end = lowerExpr(*stmt.hi, ExprContext::Index, scope);
        if (begin && end && (ir::dependsOnRank(begin) || ir::dependsOnRank(end)))
          diags_.error(stmt.loc, "loop bounds must be the same on every rank (use n, nranks "
                                 "and constants; index with rank inside the loop)");
      }
      scope.push_back(stmt.var);
      std::vector<ir::Stmt> body = lowerBody(stmt.body, scope);
      scope.pop_back();
      if (!begin || !end)
        return nullptr;
      return std::make_shared<ir::For>(stmt.loc, stmt.var, indexName, range, begin, end, value,
                                       std::move(body));
    }
    case ast::Stmt::Kind::Put:
    case ast::Stmt::Kind::AtomicAdd: {
      auto source = lowerRegion(stmt.sources[0], scope, /*remote=*/false);
      auto target = lowerRegion(stmt.target, scope, /*remote=*/true);
      if (!source || !target)
        return nullptr;
      ir::Operand operand;
      operand.region = *source;
      if (stmt.kind == ast::Stmt::Kind::Put)
        return std::make_shared<ir::Put>(stmt.loc, operand, *target);
      return std::make_shared<ir::AtomicAdd>(stmt.loc, operand, *target);
    }
    case ast::Stmt::Kind::Copy:
    case ast::Stmt::Kind::Reduce: {
      auto target = lowerRegion(stmt.target, scope, /*remote=*/false);
      bool ok = target.has_value();
      std::vector<ir::Operand> operands, addends;
      for (const auto& ref : stmt.sources) {
        std::vector<std::string> operandScope = scope;
        ir::Operand operand;
        if (ref.slotSet) {
          operand.set = *ref.slotSet == "peers" ? ir::LoopRange::Peers : ir::LoopRange::Ranks;
          operand.setVar = "%q" + std::to_string(setCounter_++);
          operandScope.push_back(operand.setVar);
        }
        auto region = lowerRegion(ref, operandScope, /*remote=*/false, operand.setVar);
        if (!region) {
          ok = false;
          continue;
        }
        operand.region = *region;
        operands.push_back(operand);
      }
      for (const auto& ref : stmt.addends) {
        auto region = lowerRegion(ref, scope, /*remote=*/false);
        ok &= region.has_value();
        if (region) {
          ir::Operand addend;
          addend.region = *region;
          addends.push_back(addend);
        }
      }
      if (!ok)
        return nullptr;
      // `x = a + b` is a reduce of the one operand `a` (which is `a` whatever the operator)
      // followed by the addends: one code path adds in float and rounds once.
      const bool reduce = stmt.kind == ast::Stmt::Kind::Reduce || !addends.empty();
      return std::make_shared<ir::Assign>(stmt.loc, *target, reduce, std::move(operands),
                                          std::move(addends));
    }
    case ast::Stmt::Kind::RowNorm: {
      // The rows, then the op's parameters in the order RowOps.h lists them: the weight, then
      // the quantization's keyword arguments in the order of its keywords.
      const std::optional<ir::RowQuant> quant = quantizationOf(stmt);
      if (!quant)
        return nullptr;
      const ir::RowOpInfo* info = ir::findRowOp(stmt.function, *quant);
      auto target = lowerRegion(stmt.target, scope, /*remote=*/false);
      std::vector<ir::Operand> operands;
      const std::vector<std::string_view> keywords = ir::quantKeywords(*quant);
      for (size_t k = 0; k < stmt.sources.size(); ++k) {
        // Sources 0 and 1 are the rows and the weight; keyword argument j is source 2 + j.
        size_t from = k;
        if (k >= 2)
          for (size_t j = 0; j < stmt.quantize.size(); ++j)
            if (stmt.quantize[j].keyword == keywords.at(k - 2))
              from = 2 + j;
        const ast::RegionRef& source = stmt.sources[from];
        auto region = lowerRegion(source, scope, /*remote=*/false);
        if (!region)
          return nullptr;
        ir::Operand operand;
        operand.region = *region;
        operands.push_back(std::move(operand));
      }
      if (!info || operands.size() != info->params.size() + 1)
        internalError("the parser took a row statement that RowOps.h does not describe");
      if (!target)
        return nullptr;
      ir::Operand rows = operands.front();
      operands.erase(operands.begin());
      return std::make_shared<ir::RowStmt>(stmt.loc, info->op, *target, std::move(rows),
                                           std::move(operands));
    }
    }
    return nullptr;
  }

  /// The quantization a row statement's keyword arguments name (RowQuant::None for none), or
  /// nullopt after an error at the keyword that does not fit: an unknown one, one of another
  /// quantization, or a missing one.
  std::optional<ir::RowQuant> quantizationOf(const ast::Stmt& stmt) {
    if (stmt.quantize.empty())
      return ir::RowQuant::None;
    std::vector<std::string_view> given;
    for (const ast::Stmt::QuantArg& arg : stmt.quantize) {
      if (ir::quantsTaking(arg.keyword).empty()) {
        diags_.error(arg.loc, "unknown keyword '" + arg.keyword + "' in 'quantize'; it takes " +
                                  ir::allQuantKeywords());
        return std::nullopt;
      }
      given.push_back(arg.keyword);
    }
    if (auto quant = ir::findQuant(given))
      return quant;
    // The quantizations the first keyword belongs to: what is missing from, or foreign to, the
    // first of them.
    const std::vector<ir::RowQuant> candidates = ir::quantsTaking(given.front());
    for (ir::RowQuant candidate : candidates) {
      const std::vector<std::string_view> wanted = ir::quantKeywords(candidate);
      bool foreign = false;
      for (const ast::Stmt::QuantArg& arg : stmt.quantize)
        foreign |= std::find(wanted.begin(), wanted.end(), arg.keyword) == wanted.end();
      if (foreign && candidate != candidates.back())
        continue;
      auto spelled = [](const std::vector<std::string_view>& keywords) {
        std::string text;
        for (size_t k = 0; k < keywords.size(); ++k)
          text += (k ? ", " : "") + std::string(keywords[k]) + "=...";
        return text;
      };
      for (const ast::Stmt::QuantArg& arg : stmt.quantize)
        if (std::find(wanted.begin(), wanted.end(), arg.keyword) == wanted.end()) {
          diags_.error(arg.loc, "'" + arg.keyword + "' does not go with '" +
                                    stmt.quantize.front().keyword +
                                    "' in 'quantize': give 'quantize(rmsnorm(...), " +
                                    spelled(wanted) + ")'");
          return std::nullopt;
        }
      for (std::string_view keyword : wanted)
        if (std::find(given.begin(), given.end(), keyword) == given.end()) {
          diags_.error(stmt.quantizeLoc, "'quantize' with '" + stmt.quantize.front().keyword +
                                             "' needs '" + std::string(keyword) +
                                             "=...' too: 'quantize(rmsnorm(...), " +
                                             spelled(wanted) + ")'");
          return std::nullopt;
        }
    }
    internalError("a set of quantization keywords neither found nor refused");
  }

  std::vector<ir::Stmt> lowerBody(const std::vector<ast::StmtPtr>& body,
                                  std::vector<std::string>& scope) {
    std::vector<ir::Stmt> lowered;
    for (const auto& inner : body)
      if (auto stmt = lowerStmt(*inner, scope))
        lowered.push_back(std::move(stmt));
    return lowered;
  }

  std::optional<ir::Region> lowerRegion(const ast::RegionRef& ref,
                                        const std::vector<std::string>& scope, bool remote,
                                        const std::string& setVar = "") {
    const ir::BufferId id = program_->find(ref.name);
    if (id < 0) {
      diags_.error(ref.nameLoc, "unknown buffer '" + ref.name + "'");
      return std::nullopt;
    }
    const ir::Buffer* buffer = &program_->buffer(id);
    bool ok = true;
    ir::Region region;
    region.buffer = id;
    region.loc = ref.loc;
    region.text = refText(ref);
    if (remote) {
      if (buffer->role != ir::BufferRole::Scratch) {
        diags_.error(ref.loc, "'" + ref.name +
                                  "' is user memory, which peers cannot address; put into a "
                                  "scratch buffer (symmetric memory) instead");
        ok = false;
      }
      region.owner = lowerExpr(*ref.peer, ExprContext::Index, scope);
      ok &= region.owner != nullptr;
    }
    bool slotted = hasSlots_[ref.name];
    if (ref.slotSet) {
      if (!slotted) {
        diags_.error(ref.loc, "'" + ref.name + "' has no slots; declare it as 'scratch " +
                                  ref.name + "[nranks]: T[...]' to index it by rank");
        ok = false;
      }
      region.slot = ExprNode::var(setVar);
    } else if (ref.slot) {
      if (!slotted) {
        diags_.error(ref.slot->loc, "'" + ref.name + "' has no slots to index");
        ok = false;
      }
      region.slot = lowerExpr(*ref.slot, ExprContext::Index, scope);
      ok &= region.slot != nullptr;
    } else {
      if (slotted) {
        diags_.error(ref.loc, "'" + ref.name + "' has several slots; say which one, as '" +
                                  ref.name + "[rank]'");
        ok = false;
      }
      region.slot = ExprNode::constant(0);
    }
    if (!ok || !buffer->slotElems)
      return std::nullopt;
    region.offset = ExprNode::constant(0);
    region.length = buffer->slotElems;
    region.bound = buffer->slotElems;
    if (ref.block) {
      // Exact blocks: block k of L elements is [k * L/nranks, (k+1) * L/nranks), as NCCL lays out
      // an allgather's output or an alltoall's buffers.
      Expr k = lowerExpr(*ref.block, ExprContext::Index, scope);
      if (!k)
        return std::nullopt;
      const Expr& size = buffer->slotElems;
      Expr blockElems = ExprNode::binary(ExprKind::Div, size, ExprNode::nranks());
      if (size->kind == ExprKind::Mul && size->b->kind == ExprKind::NRanks)
        blockElems = size->a; // T[x * nranks]: blocks of x
      else if (size->kind == ExprKind::Mul && size->a->kind == ExprKind::NRanks)
        blockElems = size->b;
      region.offset = ExprNode::binary(ExprKind::Mul, k, blockElems);
      region.length = blockElems;
      region.bound = blockElems;
    }
    if (ref.chunk) {
      Expr k = lowerExpr(*ref.chunk, ExprContext::Index, scope);
      if (!k)
        return std::nullopt;
      region.offset = ExprNode::chunkBegin(buffer->slotElems, k);
      region.length = ExprNode::chunkLength(buffer->slotElems, k);
      region.bound = ExprNode::chunkSize(buffer->slotElems);
    }
    return region;
  }

  Expr lowerExpr(const ast::Expr& e, ExprContext context, const std::vector<std::string>& scope) {
    switch (e.kind) {
    case ast::Expr::Kind::Integer:
      return ExprNode::constant(int64_t(e.value));
    case ast::Expr::Kind::Name:
      if (e.name == "n") {
        if (context == ExprContext::Index) {
          diags_.error(e.loc, "'n' may size buffers but may not pick ranks, slots, chunks or "
                              "blocks, bound a loop or decide an 'if': collc proves a spec for "
                              "every n only where n decides nothing but sizes");
          return nullptr;
        }
        return ExprNode::count();
      }
      if (!spec_.rowLengthName.empty() && e.name == spec_.rowLengthName)
        return ExprNode::rowLength();
      if (e.name == "nranks")
        return ExprNode::nranks();
      if (e.name == "root") {
        if (!hasRoot(program_->kind)) {
          diags_.error(e.loc, "'root' is the root rank of a broadcast or a reduce; " + article() +
                                  " has none");
          return nullptr;
        }
        if (context == ExprContext::Size) {
          diags_.error(e.loc, "sizes cannot depend on the root; 'root' cannot appear here");
          return nullptr;
        }
        return ExprNode::root();
      }
      if (e.name == "rank") {
        if (context == ExprContext::Size) {
          diags_.error(e.loc, "sizes must be the same on every rank; 'rank' cannot appear here");
          return nullptr;
        }
        return ExprNode::rank();
      }
      if (std::find(scope.begin(), scope.end(), e.name) != scope.end())
        return ExprNode::var(e.name);
      diags_.error(e.loc,
                   "unknown name '" + e.name + "'" +
                       (context == ExprContext::Size
                            ? "; sizes may use n, nranks, chunk(...), ceil_div(...), "
                              "round_up(...)" +
                                  (spec_.rowLengthName.empty()
                                       ? std::string(" and, in a spec with 'rows NAME', NAME")
                                       : " and " + spec_.rowLengthName)
                        : hasRoot(program_->kind)
                            ? "; expected rank, nranks, n, root or a loop variable"
                            : "; expected rank, nranks, n or a loop variable"));
      return nullptr;
    case ast::Expr::Kind::Binary: {
      Expr a = lowerExpr(*e.operands[0], context, scope);
      Expr b = lowerExpr(*e.operands[1], context, scope);
      if (!a || !b)
        return nullptr;
      ExprKind kind = e.op == '+'   ? ExprKind::Add
                      : e.op == '-' ? ExprKind::Sub
                      : e.op == '*' ? ExprKind::Mul
                      : e.op == '/' ? ExprKind::Div
                                    : ExprKind::Mod;
      if ((kind == ExprKind::Div || kind == ExprKind::Mod) && b->kind == ExprKind::Const &&
          b->value == 0) {
        diags_.error(e.loc, "division by zero");
        return nullptr;
      }
      return ExprNode::binary(kind, a, b);
    }
    case ast::Expr::Kind::Call:
      if (e.name == "ceil_div" || e.name == "round_up")
        return lowerRounding(e, context, scope);
      if (e.name == "chunk" && context == ExprContext::Size && e.operands.size() == 1) {
        Expr length = lowerExpr(*e.operands[0], context, scope);
        return length ? ExprNode::chunkSize(length) : nullptr;
      }
      diags_.error(e.loc, e.name == "chunk"
                              ? (context == ExprContext::Size
                                     ? "chunk(...) takes one argument: the length being split"
                                     : "chunk(...) gives a size and may appear only in buffer "
                                       "sizes; use 'buffer.chunk(k)' to address a chunk")
                              : "unknown function '" + e.name + "'");
      return nullptr;
    }
    return nullptr;
  }

  /// ceil_div(a, b) and round_up(a, b): sizes only (a per-row buffer's padded rows and blocks),
  /// b a positive number.
  Expr lowerRounding(const ast::Expr& e, ExprContext context,
                     const std::vector<std::string>& scope) {
    if (context != ExprContext::Size) {
      diags_.error(e.loc, e.name + "(...) may appear only in buffer sizes");
      return nullptr;
    }
    if (e.operands.size() != 2) {
      diags_.error(e.loc, e.name + "(...) takes two arguments: " +
                              (e.name == "ceil_div" ? "ceil_div(a, b), a / b rounded up"
                                                    : "round_up(a, b), a rounded up to a "
                                                      "multiple of b"));
      return nullptr;
    }
    Expr a = lowerExpr(*e.operands[0], context, scope);
    Expr b = lowerExpr(*e.operands[1], context, scope);
    if (!a || !b)
      return nullptr;
    if (ir::mentionsCount(b)) {
      diags_.error(e.operands[1]->loc,
                   "the second argument of " + e.name + "(...) may not depend on n");
      return nullptr;
    }
    if (b->kind == ExprKind::Const && b->value <= 0) {
      diags_.error(e.operands[1]->loc,
                   e.name + "(...) " +
                       (e.name == "ceil_div" ? "divides by " : "rounds up to a multiple of ") +
                       std::to_string(b->value) + "; it must be positive");
      return nullptr;
    }
    return ExprNode::binary(e.name == "ceil_div" ? ExprKind::CeilDiv : ExprKind::RoundUp, a, b);
  }

  static std::string refText(const ast::RegionRef& ref) {
    std::string text;
    llvm::raw_string_ostream out(text);
    if (ref.peer) {
      ast::print(*ref.peer, out);
      out << ".";
    }
    out << ref.name;
    if (ref.slot) {
      out << "[";
      ast::print(*ref.slot, out);
      out << "]";
    } else if (ref.slotSet) {
      out << "[" << *ref.slotSet << "]";
    }
    if (ref.block) {
      out << ".block(";
      ast::print(*ref.block, out);
      out << ")";
    }
    if (ref.chunk) {
      out << ".chunk(";
      ast::print(*ref.chunk, out);
      out << ")";
    }
    return out.str();
  }

  const ast::Spec& spec_;
  Diagnostics& diags_;
  std::unique_ptr<ir::Program> program_;
  std::map<std::string, bool> hasSlots_;
  int setCounter_ = 0;
};

/// Writes into the input buffer are refused: the caller's data must survive the collective.
class InputWrites : public ir::Visitor {
public:
  InputWrites(const ir::Program& program, Diagnostics& diags) : program_(program), diags_(diags) {}

private:
  void check(const ir::Region& target) {
    const ir::Buffer& buffer = program_.buffer(target);
    if (buffer.role == ir::BufferRole::Input)
      diags_.error(target.loc,
                   "'" + buffer.name + "' is the collective's input, which it must not modify");
  }
  void visitPut(const ir::Put& s) override { check(s.target); }
  void visitAtomicAdd(const ir::AtomicAdd& s) override { check(s.target); }
  void visitAssign(const ir::Assign& s) override { check(s.target); }
  void visitRow(const ir::RowStmt& s) override { check(s.target); }
  const ir::Program& program_;
  Diagnostics& diags_;
};

} // namespace

std::unique_ptr<ir::Program> analyze(const ast::Spec& spec, Diagnostics& diags) {
  Analyzer analyzer(spec, diags);
  auto program = analyzer.run();
  if (!program)
    return nullptr;
  InputWrites inputWrites(*program, diags);
  for (const auto& step : program->steps)
    inputWrites.visitAll(step.body);
  checkRowStatements(*program, diags);
  if (diags.hasErrors())
    return nullptr;
  return program;
}

} // namespace collc
