// Turns spec text into tokens. `#` starts a comment that runs to the end of the line; newlines are
// whitespace. Errors (a stray character, an integer too large) come back as Error tokens whose
// message the parser reports, so the lexer itself never needs a diagnostics engine.
#ifndef COLLC_DSL_LEXER_H
#define COLLC_DSL_LEXER_H

#include "dsl/Token.h"

#include <string>

namespace collc {

class Lexer {
public:
  explicit Lexer(llvm::StringRef buffer) : text_(buffer), pos_(buffer.begin()) {}

  Token next();
  /// Why the last Error token was produced.
  const std::string& errorMessage() const { return error_; }

private:
  Token make(TokenKind kind, const char* begin);
  Token lexNumber(const char* begin);
  void skipSpaceAndComments();

  llvm::StringRef text_;
  const char* pos_;
  std::string error_;
};

} // namespace collc

#endif // COLLC_DSL_LEXER_H
