// Trimming, splitting and whole decimal numbers, as the tuning table, the environment and the
// rendezvous address are read.
#include "runtime/TextParsing.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

TEST(TextParsing, TrimsWhiteSpaceOrTheCharactersGiven) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trimLeft("  a "), "a ");
  EXPECT_EQ(trimRight("  a "), "  a");
  EXPECT_EQ(trimRight("line\r\r", "\r"), "line");
}

TEST(TextParsing, SplitsKeepingOrDroppingEmptyPieces) {
  EXPECT_EQ(splitText("a\nb\n", '\n'), (std::vector<std::string_view>{"a", "b", ""}));
  EXPECT_EQ(splitText("", '\n'), (std::vector<std::string_view>{""}));
  EXPECT_EQ(splitText("a  b ", ' ', false), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_TRUE(splitText("   ", ' ', false).empty());
}

TEST(TextParsing, ReadsWholeDecimalNumbersOnly) {
  EXPECT_EQ(parseDecimal<int>("42"), 42);
  EXPECT_EQ(parseDecimal<int>("-42"), -42);
  EXPECT_EQ(parseDecimal<int>("-2147483648"), std::numeric_limits<int>::min());
  EXPECT_EQ(parseDecimal<int>("2147483647"), std::numeric_limits<int>::max());
  EXPECT_EQ(parseDecimal<int>("2147483648"), std::nullopt);
  EXPECT_EQ(parseDecimal<uint64_t>("18446744073709551615"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(parseDecimal<uint64_t>("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parseDecimal<unsigned>("-1"), std::nullopt);
  for (const char* wrong : {"", "-", "+1", " 1", "1 ", "1x", "0x10", "1.5"})
    EXPECT_EQ(parseDecimal<int>(wrong), std::nullopt) << "'" << wrong << "'";
}

} // namespace
} // namespace collc
