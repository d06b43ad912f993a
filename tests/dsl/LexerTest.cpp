#include "dsl/Lexer.h"

#include <gtest/gtest.h>
#include <vector>

namespace collc {
namespace {

std::vector<Token> lexAll(llvm::StringRef text) {
  Lexer lexer(text);
  std::vector<Token> tokens;
  for (Token t = lexer.next();; t = lexer.next()) {
    tokens.push_back(t);
    if (t.is(TokenKind::Eof) || t.is(TokenKind::Error))
      break;
  }
  return tokens;
}

TEST(Lexer, PunctuationAndWords) {
  auto tokens = lexAll("put in.chunk(p) -> p.slot[rank] 0..nranks = + - * / % : , { }");
  std::vector<TokenKind> kinds;
  for (const auto& t : tokens)
    kinds.push_back(t.kind);
  std::vector<TokenKind> expected = {
      TokenKind::Identifier, TokenKind::Identifier, TokenKind::Dot,        TokenKind::Identifier,
      TokenKind::LParen,     TokenKind::Identifier, TokenKind::RParen,     TokenKind::Arrow,
      TokenKind::Identifier, TokenKind::Dot,        TokenKind::Identifier, TokenKind::LBracket,
      TokenKind::Identifier, TokenKind::RBracket,   TokenKind::Integer,    TokenKind::DotDot,
      TokenKind::Identifier, TokenKind::Assign,     TokenKind::Plus,       TokenKind::Minus,
      TokenKind::Star,       TokenKind::Slash,      TokenKind::Percent,    TokenKind::Colon,
      TokenKind::Comma,      TokenKind::LBrace,     TokenKind::RBrace,     TokenKind::Eof};
  EXPECT_EQ(kinds, expected);
  EXPECT_EQ(tokens[0].text, "put");
  EXPECT_EQ(tokens[3].text, "chunk");
}

TEST(Lexer, CommentsRunToEndOfLine) {
  auto tokens = lexAll("a # b c -> d\n e");
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0].text, "a");
  EXPECT_EQ(tokens[1].text, "e");
}

TEST(Lexer, IntegersAndLocations) {
  llvm::StringRef text = "  42 7";
  auto tokens = lexAll(text);
  ASSERT_GE(tokens.size(), 2u);
  EXPECT_EQ(tokens[0].integer, 42u);
  EXPECT_EQ(tokens[0].loc.getPointer(), text.data() + 2);
  EXPECT_EQ(tokens[1].integer, 7u);
}

TEST(Lexer, HugeIntegerIsAnError) {
  Lexer lexer("123456789012345678901234567890");
  Token t = lexer.next();
  EXPECT_TRUE(t.is(TokenKind::Error));
  EXPECT_EQ(lexer.errorMessage(), "integer literal is too large");
}

TEST(Lexer, StrayCharacterIsAnError) {
  Lexer lexer("a $");
  EXPECT_TRUE(lexer.next().is(TokenKind::Identifier));
  Token t = lexer.next();
  EXPECT_TRUE(t.is(TokenKind::Error));
  EXPECT_EQ(lexer.errorMessage(), "unexpected character '$'");
}

TEST(Lexer, NonPrintableByteIsNamed) {
  Lexer lexer(llvm::StringRef("\x01", 1));
  EXPECT_TRUE(lexer.next().is(TokenKind::Error));
  EXPECT_EQ(lexer.errorMessage(), "unexpected byte 1");
}

TEST(Lexer, DotVersusDotDot) {
  auto tokens = lexAll("a.b 0..3");
  EXPECT_TRUE(tokens[1].is(TokenKind::Dot));
  EXPECT_TRUE(tokens[4].is(TokenKind::DotDot));
}

} // namespace
} // namespace collc
