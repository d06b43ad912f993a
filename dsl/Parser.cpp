#include "dsl/Parser.h"

#include <llvm/Support/MemoryBuffer.h>

namespace collc {
namespace {

constexpr unsigned kMaxNesting = 64;

/// Words a buffer or loop variable may not take: statement keywords (a statement that starts with
/// a name is an assignment to that buffer), `reduce(`, the slot sets and the names expressions
/// already give a meaning. Steps live in their own namespace and may use any name.
bool isReserved(llvm::StringRef word) {
  static const char* const kReserved[] = {
      "wait",   "for", "put",   "atomic_add", "reduce", "peers", "ranks",   "rank",
      "nranks", "n",   "chunk", "if",         "root",   "block", "rmsnorm", "quantize"};
  for (const char* r : kReserved)
    if (word == r)
      return true;
  return false;
}

/// Guards recursion depth for the lifetime of one nested construct.
struct DepthGuard {
  unsigned& depth;
  explicit DepthGuard(unsigned& d) : depth(d) { ++depth; }
  ~DepthGuard() { --depth; }
};

} // namespace

Parser::Parser(Diagnostics& diags, unsigned bufferId)
    : diags_(diags), lexer_(diags.sources().getMemoryBuffer(bufferId)->getBuffer()) {
  advance();
}

void Parser::advance() {
  tok_ = lexer_.next();
}

bool Parser::fail(llvm::SMLoc loc, const llvm::Twine& message) {
  diags_.error(loc, message);
  return false;
}

bool Parser::expect(TokenKind kind, const char* context) {
  if (tok_.is(kind)) {
    advance();
    return true;
  }
  if (tok_.is(TokenKind::Error))
    return fail(tok_.loc, lexer_.errorMessage());
  return fail(tok_.loc,
              llvm::Twine("expected ") + describe(kind) + " " + context + ", found " +
                  (tok_.is(TokenKind::Eof) ? llvm::Twine("end of file") : "'" + tok_.text + "'"));
}

bool Parser::expectWord(llvm::StringRef word, const char* context) {
  if (tok_.isWord(word)) {
    advance();
    return true;
  }
  if (tok_.is(TokenKind::Error))
    return fail(tok_.loc, lexer_.errorMessage());
  return fail(tok_.loc,
              "expected '" + word + "' " + context + ", found " +
                  (tok_.is(TokenKind::Eof) ? llvm::Twine("end of file") : "'" + tok_.text + "'"));
}

bool Parser::expectName(std::string& name, llvm::SMLoc& loc, const char* what) {
  if (tok_.is(TokenKind::Error))
    return fail(tok_.loc, lexer_.errorMessage());
  if (!tok_.is(TokenKind::Identifier))
    return fail(tok_.loc,
                llvm::Twine("expected ") + what + ", found " +
                    (tok_.is(TokenKind::Eof) ? llvm::Twine("end of file") : "'" + tok_.text + "'"));
  if (std::string_view(what) != "a step" && isReserved(tok_.text))
    return fail(tok_.loc, "'" + tok_.text + "' is a reserved word and cannot name " + what);
  name = tok_.text.str();
  loc = tok_.loc;
  advance();
  return true;
}

std::unique_ptr<ast::Spec> Parser::parseSpec() {
  auto spec = std::make_unique<ast::Spec>();
  spec->loc = tok_.loc;
  if (!expectWord("collective", "to begin a spec"))
    return nullptr;
  llvm::SMLoc unused;
  if (!expectName(spec->name, unused, "a collective name"))
    return nullptr;
  if (!expectWord("kind", "after the collective's name"))
    return nullptr;
  if (tok_.is(TokenKind::Identifier)) {
    spec->kindName = tok_.text.str();
    spec->kindLoc = tok_.loc;
    spec->kind = parseCollectiveKind(tok_.text);
    advance();
  } else if (!expect(TokenKind::Identifier, "naming the collective's kind")) {
    return nullptr;
  }
  while (!tok_.is(TokenKind::LBrace)) {
    if (!parseHeader(*spec))
      return nullptr;
  }
  llvm::SMLoc bodyOpen = tok_.loc;
  advance(); // '{'
  while (!tok_.is(TokenKind::RBrace)) {
    if (tok_.is(TokenKind::Eof)) {
      fail(tok_.loc, "missing '}' at the end of the spec");
      diags_.note(bodyOpen, "the spec's body opens here");
      return nullptr;
    }
    if (!tok_.isWord("step"))
      return fail(tok_.loc, "expected 'step' or '}' in the spec body"), nullptr;
    if (!parseStep(*spec))
      return nullptr;
  }
  advance(); // '}'
  if (!tok_.is(TokenKind::Eof))
    return fail(tok_.loc, "unexpected text after the end of the collective"), nullptr;
  return spec;
}

/// A clause a spec may give once (`ranks`, `rows`, `sync`): a second one is an error with a note at
/// the first, never a silent override.
bool Parser::once(llvm::SMLoc first, llvm::StringRef clause) {
  if (!first.isValid())
    return true;
  diags_.error(tok_.loc, "'" + clause + "' is given twice; a spec has one '" + clause + "' clause");
  diags_.note(first, "the first '" + clause + "' is here");
  return false;
}

bool Parser::parseHeader(ast::Spec& spec) {
  if (tok_.isWord("ranks")) {
    if (!once(spec.ranksLoc, "ranks"))
      return false;
    spec.ranksLoc = tok_.loc;
    advance();
    if (!tok_.is(TokenKind::Integer))
      return expect(TokenKind::Integer, "after 'ranks'");
    spec.minRanks = tok_.integer;
    advance();
    if (!expect(TokenKind::DotDot, "in the rank range 'ranks LO..HI'"))
      return false;
    if (!tok_.is(TokenKind::Integer))
      return expect(TokenKind::Integer, "ending the rank range");
    spec.maxRanks = tok_.integer;
    advance();
    return true;
  }
  if (tok_.isWord("buffers")) {
    advance();
    do {
      if (!parseBufferDecl(spec, /*scratch=*/false))
        return false;
    } while (tok_.is(TokenKind::Comma) && (advance(), true));
    return true;
  }
  if (tok_.isWord("scratch")) {
    advance();
    return parseBufferDecl(spec, /*scratch=*/true);
  }
  if (tok_.isWord("sync")) {
    if (!once(spec.syncLoc, "sync"))
      return false;
    advance();
    spec.syncLoc = tok_.loc;
    if (!tok_.is(TokenKind::Identifier))
      return expect(TokenKind::Identifier, "naming a sync strategy");
    spec.syncName = tok_.text.str();
    advance();
    return true;
  }
  if (tok_.isWord("rows")) {
    if (!once(spec.rowsLoc, "rows"))
      return false;
    spec.rowsLoc = tok_.loc;
    advance();
    llvm::SMLoc unused;
    if (!expectName(spec.rowLengthName, unused, "the row length"))
      return false;
    if (!tok_.is(TokenKind::Assign))
      return true;
    advance();
    if (!tok_.is(TokenKind::Integer))
      return expect(TokenKind::Integer, "as the default row length ('rows hidden = 4096')");
    spec.defaultRowLength = tok_.integer;
    spec.defaultRowLengthLoc = tok_.loc;
    advance();
    return true;
  }
  if (tok_.isWord("launch")) {
    advance();
    do {
      ast::LaunchKnob knob;
      knob.loc = tok_.loc;
      if (!tok_.is(TokenKind::Identifier))
        return expect(TokenKind::Identifier,
                      "naming a launch knob (blocks, threads, vector, unroll, whole_stores)");
      knob.name = tok_.text.str();
      advance();
      if (!expect(TokenKind::Assign, "after the launch knob's name"))
        return false;
      if (!tok_.is(TokenKind::Integer))
        return expect(TokenKind::Integer, "as the launch knob's value");
      knob.value = tok_.integer;
      advance();
      spec.launch.push_back(std::move(knob));
    } while (tok_.is(TokenKind::Identifier) && !tok_.isWord("ranks") && !tok_.isWord("buffers") &&
             !tok_.isWord("scratch") && !tok_.isWord("sync") && !tok_.isWord("launch") &&
             !tok_.isWord("rows"));
    return true;
  }
  if (tok_.is(TokenKind::Error))
    return fail(tok_.loc, lexer_.errorMessage());
  return fail(tok_.loc,
              tok_.is(TokenKind::Eof)
                  ? llvm::Twine("expected '{' to open the spec body, found end of file")
                  : "expected 'ranks', 'buffers', 'scratch', 'rows', 'sync', 'launch' or '{', "
                    "found '" +
                        tok_.text + "'");
}

bool Parser::parseBufferDecl(ast::Spec& spec, bool scratch) {
  ast::BufferDecl decl;
  decl.scratch = scratch;
  if (!expectName(decl.name, decl.loc, scratch ? "a scratch buffer" : "a buffer"))
    return false;
  if (scratch && tok_.is(TokenKind::LBracket)) {
    advance();
    decl.slots = parseExpr();
    if (!decl.slots || !expect(TokenKind::RBracket, "after the slot count"))
      return false;
  }
  if (!expect(TokenKind::Colon, "before the buffer's type"))
    return false;
  decl.elementTypeLoc = tok_.loc;
  if (!tok_.is(TokenKind::Identifier))
    return expect(TokenKind::Identifier, "naming the element type");
  decl.elementType = tok_.text.str();
  advance();
  if (!expect(TokenKind::LBracket, "before the buffer's size"))
    return false;
  decl.size = parseExpr();
  if (!decl.size || !expect(TokenKind::RBracket, "after the buffer's size"))
    return false;
  spec.buffers.push_back(std::move(decl));
  return true;
}

bool Parser::parseStep(ast::Spec& spec) {
  if (spec.steps.size() >= kMaxSteps)
    return fail(tok_.loc, "the spec has more than " + llvm::Twine(kMaxSteps) +
                              " steps; collc refuses specs that large");
  advance(); // 'step'
  ast::Step step;
  if (!expectName(step.name, step.loc, "a step"))
    return false;
  if (tok_.isWord("for")) {
    // `step name for s in lo..hi { ... }`: one step per value of s.
    advance();
    if (!expectName(step.repeatVar, step.repeatVarLoc, "the step's repetition variable") ||
        !expectWord("in", "after the repetition variable"))
      return false;
    step.repeatLo = parseExpr();
    if (!step.repeatLo || !expect(TokenKind::DotDot, "in the repetition range 'LO..HI'"))
      return false;
    step.repeatHi = parseExpr();
    if (!step.repeatHi)
      return false;
  }
  // Accept both `step name { ... }` and the one-statement form `step name: stmt`.
  if (tok_.is(TokenKind::Colon)) {
    advance();
    auto stmt = parseStmt();
    if (!stmt)
      return false;
    step.body.push_back(std::move(stmt));
  } else if (!parseBlock(step.body)) {
    return false;
  }
  spec.steps.push_back(std::move(step));
  return true;
}

bool Parser::parseBlock(std::vector<ast::StmtPtr>& body) {
  llvm::SMLoc open = tok_.loc;
  if (!expect(TokenKind::LBrace, "to open a block"))
    return false;
  while (!tok_.is(TokenKind::RBrace)) {
    if (tok_.is(TokenKind::Eof)) {
      fail(tok_.loc, "missing '}' to close the block");
      diags_.note(open, "the block opens here");
      return false;
    }
    auto stmt = parseStmt();
    if (!stmt)
      return false;
    body.push_back(std::move(stmt));
  }
  advance();
  return true;
}

ast::StmtPtr Parser::parseStmt() {
  DepthGuard guard(depth_);
  if (depth_ > kMaxNesting)
    return fail(tok_.loc, "statements nested too deeply"), nullptr;
  if (++statements_ > kMaxStatements)
    return fail(tok_.loc, "the spec has more than " + llvm::Twine(kMaxStatements) +
                              " statements; collc refuses specs that large"),
           nullptr;
  auto stmt = std::make_unique<ast::Stmt>();
  stmt->loc = tok_.loc;
  if (tok_.isWord("wait")) {
    stmt->kind = ast::Stmt::Kind::Wait;
    advance();
    llvm::SMLoc loc;
    if (!expectName(stmt->waitFor, loc, "a step"))
      return nullptr;
    return stmt;
  }
  if (tok_.isWord("for")) {
    stmt->kind = ast::Stmt::Kind::For;
    advance();
    if (!expectName(stmt->var, stmt->varLoc, "a loop variable") ||
        !expectWord("in", "after the loop variable"))
      return nullptr;
    if (tok_.isWord("peers") || tok_.isWord("ranks")) {
      stmt->rangeSet = tok_.text.str();
      advance();
    } else {
      stmt->lo = parseExpr();
      if (!stmt->lo || !expect(TokenKind::DotDot, "in the loop range 'LO..HI'"))
        return nullptr;
      stmt->hi = parseExpr();
      if (!stmt->hi)
        return nullptr;
    }
    if (!parseBlock(stmt->body))
      return nullptr;
    return stmt;
  }
  if (tok_.isWord("if")) {
    stmt->kind = ast::Stmt::Kind::If;
    advance();
    stmt->lo = parseExpr();
    if (!stmt->lo)
      return nullptr;
    if (!tok_.is(TokenKind::EqualEqual) && !tok_.is(TokenKind::NotEqual))
      return fail(tok_.loc, "expected '==' or '!=' in the condition of 'if'"), nullptr;
    stmt->compare = tok_.is(TokenKind::EqualEqual) ? '=' : '!';
    advance();
    stmt->hi = parseExpr();
    if (!stmt->hi || !parseBlock(stmt->body))
      return nullptr;
    return stmt;
  }
  if (tok_.isWord("put"))
    return parseTransfer(ast::Stmt::Kind::Put);
  if (tok_.isWord("atomic_add"))
    return parseTransfer(ast::Stmt::Kind::AtomicAdd);
  if (tok_.is(TokenKind::Identifier) && !isReserved(tok_.text)) {
    if (!parseRegion(stmt->target, /*allowSlotSet=*/false))
      return nullptr;
    if (!expect(TokenKind::Assign, "in an assignment 'target = source' or 'target = reduce(...)'"))
      return nullptr;
    if (tok_.isWord("rmsnorm"))
      return parseRowNorm(std::move(stmt));
    if (tok_.isWord("quantize"))
      return parseQuantize(std::move(stmt));
    if (tok_.isWord("reduce")) {
      stmt->kind = ast::Stmt::Kind::Reduce;
      advance();
      if (!expect(TokenKind::LParen, "after 'reduce'"))
        return nullptr;
      do {
        if (stmt->sources.size() >= kMaxOperands)
          return fail(tok_.loc,
                      "a statement may have at most " + llvm::Twine(kMaxOperands) + " operands"),
                 nullptr;
        ast::RegionRef operand;
        if (!parseRegion(operand, /*allowSlotSet=*/true))
          return nullptr;
        stmt->sources.push_back(std::move(operand));
      } while (tok_.is(TokenKind::Comma) && (advance(), true));
      if (!expect(TokenKind::RParen, "to close 'reduce('"))
        return nullptr;
      return parseAddends(*stmt) ? std::move(stmt) : nullptr;
    }
    stmt->kind = ast::Stmt::Kind::Copy;
    ast::RegionRef source;
    if (!parseRegion(source, /*allowSlotSet=*/false))
      return nullptr;
    stmt->sources.push_back(std::move(source));
    return parseAddends(*stmt) ? std::move(stmt) : nullptr;
  }
  if (tok_.is(TokenKind::Error))
    return fail(tok_.loc, lexer_.errorMessage()), nullptr;
  return fail(tok_.loc, tok_.is(TokenKind::Eof)
                            ? llvm::Twine("expected a statement, found end of file")
                            : "expected a statement (put, atomic_add, for, if, wait or an "
                              "assignment), found '" +
                                  tok_.text + "'"),
         nullptr;
}

bool Parser::parseAddends(ast::Stmt& stmt) {
  while (tok_.is(TokenKind::Plus)) {
    advance();
    if (tok_.isWord("reduce"))
      return fail(tok_.loc, "'reduce(...)' must come first in a sum: write 'x = reduce(...) + a'");
    if (stmt.sources.size() + stmt.addends.size() >= kMaxOperands)
      return fail(tok_.loc,
                  "a statement may have at most " + llvm::Twine(kMaxOperands) + " operands");
    ast::RegionRef addend;
    if (!parseRegion(addend, /*allowSlotSet=*/false))
      return false;
    stmt.addends.push_back(std::move(addend));
  }
  if (tok_.is(TokenKind::Minus) || tok_.is(TokenKind::Star) || tok_.is(TokenKind::Slash) ||
      tok_.is(TokenKind::Percent))
    return fail(tok_.loc, "'" + tok_.text +
                              "' between buffers is not supported; an assignment may only add "
                              "regions ('x = a + b')");
  return true;
}

ast::StmtPtr Parser::parseRowNorm(ast::StmtPtr stmt) {
  stmt->kind = ast::Stmt::Kind::RowNorm;
  stmt->function = tok_.text.str();
  advance(); // 'rmsnorm'
  if (!expect(TokenKind::LParen, "after 'rmsnorm'"))
    return nullptr;
  ast::RegionRef rows, weight;
  if (!parseRegion(rows, /*allowSlotSet=*/false) ||
      !expect(TokenKind::Comma, "between the rows and the weight in 'rmsnorm(rows, weight)'") ||
      !parseRegion(weight, /*allowSlotSet=*/false))
    return nullptr;
  stmt->sources.push_back(std::move(rows));
  stmt->sources.push_back(std::move(weight));
  if (!expect(TokenKind::RParen, "to close 'rmsnorm(rows, weight)'"))
    return nullptr;
  return stmt;
}

ast::StmtPtr Parser::parseQuantize(ast::StmtPtr stmt) {
  const llvm::SMLoc quantizeLoc = tok_.loc;
  advance(); // 'quantize'
  if (!expect(TokenKind::LParen, "after 'quantize'"))
    return nullptr;
  if (!tok_.isWord("rmsnorm"))
    return fail(tok_.loc, "'quantize' takes a row statement's result, 'quantize(rmsnorm(rows, "
                          "weight), scale=S)'; found '" +
                              tok_.text + "'"),
           nullptr;
  stmt = parseRowNorm(std::move(stmt));
  if (!stmt || !expect(TokenKind::Comma, "before the scale in 'quantize(rmsnorm(...), scale=S)'"))
    return nullptr;
  stmt->quantizeLoc = quantizeLoc;
  // Keyword arguments `KEY=S`; which keywords exist and go together is the compiler's
  // (compiler/ir/RowOps.h), checked where the statement is analyzed.
  do {
    if (!tok_.is(TokenKind::Identifier))
      return fail(tok_.loc, "expected a keyword argument 'KEY=S' in 'quantize' (such as "
                            "'scale=S'), found '" +
                                tok_.text + "'"),
             nullptr;
    for (const ast::Stmt::QuantArg& earlier : stmt->quantize)
      if (earlier.keyword == tok_.text)
        return fail(tok_.loc, "'" + tok_.text + "' is given twice in 'quantize'"), nullptr;
    stmt->quantize.push_back({tok_.text.str(), tok_.loc});
    advance();
    const std::string afterKeyword = "after '" + stmt->quantize.back().keyword + "'";
    if (!expect(TokenKind::Assign, afterKeyword.c_str()))
      return nullptr;
    ast::RegionRef scale;
    if (!parseRegion(scale, /*allowSlotSet=*/false))
      return nullptr;
    stmt->sources.push_back(std::move(scale));
  } while (tok_.is(TokenKind::Comma) && (advance(), true));
  if (!expect(TokenKind::RParen, "to close 'quantize(...)'"))
    return nullptr;
  return stmt;
}

ast::StmtPtr Parser::parseTransfer(ast::Stmt::Kind kind) {
  auto stmt = std::make_unique<ast::Stmt>();
  stmt->kind = kind;
  stmt->loc = tok_.loc;
  advance(); // put / atomic_add
  ast::RegionRef source;
  if (!parseRegion(source, /*allowSlotSet=*/false))
    return nullptr;
  stmt->sources.push_back(std::move(source));
  if (!expect(TokenKind::Arrow, "between the source and the destination"))
    return nullptr;
  if (!parseRemoteRegion(stmt->target))
    return nullptr;
  return stmt;
}

bool Parser::parseRemoteRegion(ast::RegionRef& region) {
  region.loc = tok_.loc;
  if (tok_.is(TokenKind::LParen)) {
    advance();
    region.peer = parseExpr();
    if (!region.peer || !expect(TokenKind::RParen, "after the peer expression"))
      return false;
  } else if (tok_.is(TokenKind::Identifier)) {
    auto peer = std::make_unique<ast::Expr>();
    peer->kind = ast::Expr::Kind::Name;
    peer->loc = tok_.loc;
    peer->name = tok_.text.str();
    region.peer = std::move(peer);
    advance();
  } else {
    return fail(tok_.loc, "expected the destination peer, as 'p.buffer' or '(expr).buffer'");
  }
  if (!expect(TokenKind::Dot, "between the peer and its buffer ('p.buffer')"))
    return false;
  llvm::SMLoc loc = region.loc;
  if (!parseRegion(region, /*allowSlotSet=*/false))
    return false;
  region.loc = loc;
  return true;
}

bool Parser::parseRegion(ast::RegionRef& region, bool allowSlotSet) {
  region.loc = tok_.loc;
  if (!expectName(region.name, region.nameLoc, "a buffer"))
    return false;
  if (tok_.is(TokenKind::LBracket)) {
    advance();
    if (tok_.isWord("peers") || tok_.isWord("ranks")) {
      if (!allowSlotSet)
        return fail(tok_.loc, "'" + region.name + "[" + tok_.text +
                                  "]' names several slots; only a reduce operand may do that");
      region.slotSet = tok_.text.str();
      advance();
    } else {
      region.slot = parseExpr();
      if (!region.slot)
        return false;
    }
    if (!expect(TokenKind::RBracket, "after the slot index"))
      return false;
  }
  if (tok_.is(TokenKind::Dot)) {
    advance();
    if (tok_.isWord("block")) {
      advance();
      if (!expect(TokenKind::LParen, "after 'block'"))
        return false;
      region.block = parseExpr();
      return region.block && expect(TokenKind::RParen, "to close 'block('");
    }
    if (!tok_.isWord("chunk")) {
      if (tok_.is(TokenKind::Identifier))
        return fail(region.loc, "'" + region.name + "." + tok_.text +
                                    "' reads a peer's memory; only writes to peers ('put') are "
                                    "supported: have the peer put the data instead");
      return fail(tok_.loc, "expected 'chunk(k)' or 'block(k)' after '.'");
    }
    advance();
    if (!expect(TokenKind::LParen, "after 'chunk'"))
      return false;
    region.chunk = parseExpr();
    if (!region.chunk || !expect(TokenKind::RParen, "to close 'chunk('"))
      return false;
  }
  return true;
}

/// Counts an operator of the top-level expression being parsed: false (after reporting) past the
/// limit, which bounds the depth of every expression tree (a chain of `+` is a tree as deep as it
/// is long).
bool Parser::countOperator() {
  if (++exprOperators_ <= kMaxExprOperators)
    return true;
  return fail(tok_.loc, "expression has more than " + llvm::Twine(kMaxExprOperators) +
                            " operators; collc refuses expressions that long");
}

ast::ExprPtr Parser::parseExpr() {
  DepthGuard guard(depth_);
  if (depth_ > kMaxNesting)
    return fail(tok_.loc, "expression nested too deeply"), nullptr;
  if (exprLevel_ == 0)
    exprOperators_ = 0;
  DepthGuard level(exprLevel_);
  auto lhs = parseTerm();
  while (lhs && (tok_.is(TokenKind::Plus) || tok_.is(TokenKind::Minus))) {
    if (!countOperator())
      return nullptr;
    auto node = std::make_unique<ast::Expr>();
    node->kind = ast::Expr::Kind::Binary;
    node->loc = tok_.loc;
    node->op = tok_.text[0];
    advance();
    auto rhs = parseTerm();
    if (!rhs)
      return nullptr;
    node->operands.push_back(std::move(lhs));
    node->operands.push_back(std::move(rhs));
    lhs = std::move(node);
  }
  return lhs;
}

ast::ExprPtr Parser::parseTerm() {
  auto lhs = parsePrimary();
  while (lhs &&
         (tok_.is(TokenKind::Star) || tok_.is(TokenKind::Slash) || tok_.is(TokenKind::Percent))) {
    if (!countOperator())
      return nullptr;
    auto node = std::make_unique<ast::Expr>();
    node->kind = ast::Expr::Kind::Binary;
    node->loc = tok_.loc;
    node->op = tok_.text[0];
    advance();
    auto rhs = parsePrimary();
    if (!rhs)
      return nullptr;
    node->operands.push_back(std::move(lhs));
    node->operands.push_back(std::move(rhs));
    lhs = std::move(node);
  }
  return lhs;
}

ast::ExprPtr Parser::parsePrimary() {
  auto node = std::make_unique<ast::Expr>();
  node->loc = tok_.loc;
  if (tok_.is(TokenKind::Integer)) {
    node->kind = ast::Expr::Kind::Integer;
    node->value = tok_.integer;
    advance();
    return node;
  }
  if (tok_.is(TokenKind::LParen)) {
    advance();
    auto inner = parseExpr();
    if (!inner || !expect(TokenKind::RParen, "to close '('"))
      return nullptr;
    return inner;
  }
  if (tok_.is(TokenKind::Identifier)) {
    node->name = tok_.text.str();
    advance();
    if (tok_.is(TokenKind::LParen)) {
      node->kind = ast::Expr::Kind::Call;
      advance();
      if (!tok_.is(TokenKind::RParen)) {
        do {
          auto arg = parseExpr();
          if (!arg)
            return nullptr;
          node->operands.push_back(std::move(arg));
        } while (tok_.is(TokenKind::Comma) && (advance(), true));
      }
      if (!expect(TokenKind::RParen, "to close the call"))
        return nullptr;
      return node;
    }
    node->kind = ast::Expr::Kind::Name;
    return node;
  }
  if (tok_.is(TokenKind::Error))
    return fail(tok_.loc, lexer_.errorMessage()), nullptr;
  return fail(tok_.loc, tok_.is(TokenKind::Eof)
                            ? llvm::Twine("expected an expression, found end of file")
                            : "expected an expression, found '" + tok_.text + "'"),
         nullptr;
}

std::unique_ptr<ast::Spec> parseSpecText(Diagnostics& diags, llvm::StringRef text,
                                         llvm::StringRef bufferName) {
  if (text.size() > kMaxSpecBytes) {
    // Refused before the text is read: report at its start.
    unsigned id = diags.sources().AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text.take_front(200), bufferName), llvm::SMLoc());
    diags.error(llvm::SMLoc::getFromPointer(diags.sources().getMemoryBuffer(id)->getBufferStart()),
                "the spec is " + std::to_string(text.size()) +
                    " bytes; collc reads specs of at "
                    "most " +
                    std::to_string(kMaxSpecBytes) + " bytes");
    return nullptr;
  }
  unsigned id = diags.sources().AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, bufferName), llvm::SMLoc());
  Parser parser(diags, id);
  return parser.parseSpec();
}

} // namespace collc
