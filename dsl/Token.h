// Tokens of the collc spec language. Each carries the location of its first character.
#ifndef COLLC_DSL_TOKEN_H
#define COLLC_DSL_TOKEN_H

#include "dsl/LibraryLocal.h"

#include <cstdint>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>

namespace collc {

enum class TokenKind {
  Eof,
  Error,      // a character the language has no use for; text holds it
  Identifier, // names and keywords alike: keywords are contextual (see Parser.cpp)
  Integer,
  LBrace,
  RBrace,
  LParen,
  RParen,
  LBracket,
  RBracket,
  Colon,
  Comma,
  Dot,
  Arrow,
  DotDot,
  Assign,
  Plus,
  Minus,
  Star,
  Slash,
  Percent,
  EqualEqual, // '==' (conditions of `if`)
  NotEqual,   // '!='
};

const char* describe(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::Eof;
  llvm::StringRef text; // points into the source buffer
  llvm::SMLoc loc;
  uint64_t integer = 0; // value of an Integer token

  bool is(TokenKind k) const { return kind == k; }
  COLLC_LIBRARY_LOCAL bool isWord(llvm::StringRef word) const {
    return kind == TokenKind::Identifier && text == word;
  }
};

} // namespace collc

#endif // COLLC_DSL_TOKEN_H
