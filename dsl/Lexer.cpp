#include "dsl/Lexer.h"

#include <cctype>

namespace collc {

const char* describe(TokenKind kind) {
  switch (kind) {
  case TokenKind::Eof:
    return "end of file";
  case TokenKind::Error:
    return "invalid character";
  case TokenKind::Identifier:
    return "identifier";
  case TokenKind::Integer:
    return "integer";
  case TokenKind::LBrace:
    return "'{'";
  case TokenKind::RBrace:
    return "'}'";
  case TokenKind::LParen:
    return "'('";
  case TokenKind::RParen:
    return "')'";
  case TokenKind::LBracket:
    return "'['";
  case TokenKind::RBracket:
    return "']'";
  case TokenKind::Colon:
    return "':'";
  case TokenKind::Comma:
    return "','";
  case TokenKind::Dot:
    return "'.'";
  case TokenKind::Arrow:
    return "'->'";
  case TokenKind::DotDot:
    return "'..'";
  case TokenKind::Assign:
    return "'='";
  case TokenKind::Plus:
    return "'+'";
  case TokenKind::Minus:
    return "'-'";
  case TokenKind::Star:
    return "'*'";
  case TokenKind::Slash:
    return "'/'";
  case TokenKind::Percent:
    return "'%'";
  case TokenKind::EqualEqual:
    return "'=='";
  case TokenKind::NotEqual:
    return "'!='";
  }
  return "token";
}

Token Lexer::make(TokenKind kind, const char* begin) {
  Token token;
  token.kind = kind;
  token.text = llvm::StringRef(begin, pos_ - begin);
  token.loc = llvm::SMLoc::getFromPointer(begin);
  return token;
}

void Lexer::skipSpaceAndComments() {
  while (pos_ != text_.end()) {
    if (std::isspace(static_cast<unsigned char>(*pos_))) {
      ++pos_;
    } else if (*pos_ == '#') {
      while (pos_ != text_.end() && *pos_ != '\n')
        ++pos_;
    } else {
      return;
    }
  }
}

Token Lexer::lexNumber(const char* begin) {
  uint64_t value = 0;
  bool overflow = false;
  while (pos_ != text_.end() && std::isdigit(static_cast<unsigned char>(*pos_))) {
    unsigned digit = *pos_ - '0';
    // Integers in specs are sizes and knobs: anything past 2^40 is a mistake, not a request.
    if (value > (uint64_t(1) << 40))
      overflow = true;
    else
      value = value * 10 + digit;
    ++pos_;
  }
  if (overflow) {
    error_ = "integer literal is too large";
    return make(TokenKind::Error, begin);
  }
  Token token = make(TokenKind::Integer, begin);
  token.integer = value;
  return token;
}

Token Lexer::next() {
  skipSpaceAndComments();
  const char* begin = pos_;
  if (pos_ == text_.end())
    return make(TokenKind::Eof, begin);
  char c = *pos_++;
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
    while (pos_ != text_.end() && (std::isalnum(static_cast<unsigned char>(*pos_)) || *pos_ == '_'))
      ++pos_;
    return make(TokenKind::Identifier, begin);
  }
  if (std::isdigit(static_cast<unsigned char>(c))) {
    --pos_;
    return lexNumber(begin);
  }
  auto peekIs = [&](char want) { return pos_ != text_.end() && *pos_ == want; };
  switch (c) {
  case '{':
    return make(TokenKind::LBrace, begin);
  case '}':
    return make(TokenKind::RBrace, begin);
  case '(':
    return make(TokenKind::LParen, begin);
  case ')':
    return make(TokenKind::RParen, begin);
  case '[':
    return make(TokenKind::LBracket, begin);
  case ']':
    return make(TokenKind::RBracket, begin);
  case ':':
    return make(TokenKind::Colon, begin);
  case ',':
    return make(TokenKind::Comma, begin);
  case '=':
    if (peekIs('=')) {
      ++pos_;
      return make(TokenKind::EqualEqual, begin);
    }
    return make(TokenKind::Assign, begin);
  case '!':
    if (peekIs('=')) {
      ++pos_;
      return make(TokenKind::NotEqual, begin);
    }
    break;
  case '+':
    return make(TokenKind::Plus, begin);
  case '*':
    return make(TokenKind::Star, begin);
  case '/':
    return make(TokenKind::Slash, begin);
  case '%':
    return make(TokenKind::Percent, begin);
  case '.':
    if (peekIs('.')) {
      ++pos_;
      return make(TokenKind::DotDot, begin);
    }
    return make(TokenKind::Dot, begin);
  case '-':
    if (peekIs('>')) {
      ++pos_;
      return make(TokenKind::Arrow, begin);
    }
    return make(TokenKind::Minus, begin);
  default:
    break;
  }
  error_ = std::isprint(static_cast<unsigned char>(c))
               ? std::string("unexpected character '") + c + "'"
               : "unexpected byte " + std::to_string(static_cast<unsigned char>(c));
  return make(TokenKind::Error, begin);
}

} // namespace collc
