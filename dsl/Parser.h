// Recursive-descent parser for the spec language (grammar: dsl/README.md). It stops at the first
// syntax error: specs are short, and one precise message beats a cascade of guesses.
#ifndef COLLC_DSL_PARSER_H
#define COLLC_DSL_PARSER_H

#include "dsl/AST.h"
#include "dsl/Diagnostics.h"
#include "dsl/Lexer.h"
#include "dsl/LibraryLocal.h"

#include <memory>

namespace collc {

class COLLC_LIBRARY_LOCAL Parser {
public:
  /// Parses the buffer `bufferId` of the diagnostics' SourceMgr.
  Parser(Diagnostics& diags, unsigned bufferId);

  /// The spec, or null after reporting a syntax error.
  std::unique_ptr<ast::Spec> parseSpec();

private:
  // Helpers return false after reporting an error; callers unwind.
  void advance();
  bool expect(TokenKind kind, const char* context);
  bool once(llvm::SMLoc first, llvm::StringRef clause);
  bool expectWord(llvm::StringRef word, const char* context);
  bool expectName(std::string& name, llvm::SMLoc& loc, const char* what);
  bool fail(llvm::SMLoc loc, const llvm::Twine& message);

  bool parseHeader(ast::Spec& spec);
  bool parseBufferDecl(ast::Spec& spec, bool scratch);
  bool parseStep(ast::Spec& spec);
  bool parseBlock(std::vector<ast::StmtPtr>& body);
  ast::StmtPtr parseStmt();
  ast::StmtPtr parseTransfer(ast::Stmt::Kind kind);
  bool parseAddends(ast::Stmt& stmt);
  ast::StmtPtr parseRowNorm(ast::StmtPtr stmt);
  /// `quantize(rmsnorm(rows, weight), scale=S)`: a row statement whose result is stored quantized.
  ast::StmtPtr parseQuantize(ast::StmtPtr stmt);
  bool parseRegion(ast::RegionRef& region, bool allowSlotSet);
  bool parseRemoteRegion(ast::RegionRef& region);
  ast::ExprPtr parseExpr();
  bool countOperator();
  ast::ExprPtr parseTerm();
  ast::ExprPtr parsePrimary();

  Diagnostics& diags_;
  Lexer lexer_;
  Token tok_;
  // Bounds that keep every later stage's recursion and work in check, whatever the input.
  unsigned depth_ = 0;         // nesting of expressions and statements
  unsigned exprLevel_ = 0;     // parseExpr calls in progress: 1 at a top-level expression
  unsigned exprOperators_ = 0; // operators of the top-level expression being parsed
  unsigned statements_ = 0;    // statements of the spec
};

/// Limits on what a spec may be, each refused with an error at its place.
inline constexpr size_t kMaxSpecBytes = 1 << 20;
inline constexpr unsigned kMaxExprOperators = 256;
inline constexpr unsigned kMaxStatements = 4096;
inline constexpr unsigned kMaxSteps = 256;
inline constexpr size_t kMaxOperands = 64; // of one reduce or sum

/// Convenience: parse `text` registered under `bufferName` in the diagnostics' SourceMgr.
COLLC_LIBRARY_LOCAL std::unique_ptr<ast::Spec>
parseSpecText(Diagnostics& diags, llvm::StringRef text, llvm::StringRef bufferName);

} // namespace collc

#endif // COLLC_DSL_PARSER_H
