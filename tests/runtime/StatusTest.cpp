// The runtime's errors: success and failure, messages joined a line each, Expected holding a value
// or an error (and converting between value types), ExitOnError ending a program with the message.
#include "runtime/Status.h"

#include "runtime/Span.h"

#include <gtest/gtest.h>
#include <memory>
#include <vector>

namespace collc {
namespace {

Error failIf(bool fail) {
  return fail ? makeError("it failed") : Error::success();
}

TEST(Status, ErrorIsSuccessOrAMessage) {
  Error ok = failIf(false);
  EXPECT_FALSE(ok);
  EXPECT_EQ(ok.message(), "");
  Error bad = failIf(true);
  ASSERT_TRUE(bad);
  EXPECT_EQ(toString(std::move(bad)), "it failed");
  Error empty = makeError("");
  EXPECT_TRUE(empty) << "an empty message is still a failure";
  consumeError(std::move(empty));
}

TEST(Status, JoinedErrorsKeepBothMessagesInOrder) {
  EXPECT_EQ(toString(joinErrors(makeError("first"), makeError("second"))), "first\nsecond");
  EXPECT_EQ(toString(joinErrors(Error::success(), makeError("only"))), "only");
  EXPECT_EQ(toString(joinErrors(makeError("only"), Error::success())), "only");
  EXPECT_FALSE(joinErrors(Error::success(), Error::success()));
}

TEST(Status, MovedFromErrorIsSuccess) {
  Error bad = makeError("once");
  Error taken = std::move(bad);
  EXPECT_TRUE(taken);
  EXPECT_FALSE(bad); // NOLINT(bugprone-use-after-move): what a moved-from Error holds is defined
  consumeError(std::move(taken));
}

struct Base {
  virtual ~Base() = default;
  virtual int value() const { return 1; }
};
struct Derived : Base {
  int value() const override { return 2; }
};

Expected<std::unique_ptr<Derived>> makeDerived(bool fail) {
  if (fail)
    return makeError("no derived");
  return std::make_unique<Derived>();
}

Expected<std::unique_ptr<Base>> makeBase(bool fail) {
  return makeDerived(fail);
}

// A spec's failure (the compiler's API) stays one through moves and an Expected of another type,
// and nothing else is one.
TEST(Status, ASpecFailureSaysSoWhereverItGoes) {
  Error spec = Error::specFailure("2 errors in a.coll");
  EXPECT_TRUE(bool(spec));
  EXPECT_TRUE(spec.isSpecError());
  EXPECT_EQ(spec.message(), "2 errors in a.coll");
  Expected<std::unique_ptr<int>> failed(std::move(spec));
  Expected<std::shared_ptr<const int>> converted(std::move(failed));
  Error moved = converted.takeError();
  EXPECT_TRUE(moved.isSpecError());
  EXPECT_FALSE(makeError("cannot open").isSpecError());
  EXPECT_FALSE(Error::success().isSpecError());
  EXPECT_FALSE(spec.isSpecError()); // moved from: a success
}

TEST(Status, ExpectedHoldsAValueOrAnError) {
  Expected<int> value = 42;
  ASSERT_TRUE(bool(value));
  EXPECT_EQ(*value, 42);
  EXPECT_FALSE(value.takeError());
  Expected<int> failed = makeError("no value");
  ASSERT_FALSE(bool(failed));
  EXPECT_EQ(toString(failed.takeError()), "no value");
  Expected<std::optional<int>> none = std::nullopt;
  ASSERT_TRUE(bool(none));
  EXPECT_FALSE(none->has_value());
}

TEST(Status, ExpectedConvertsToAnExpectedOfABase) {
  Expected<std::unique_ptr<Base>> made = makeBase(false);
  ASSERT_TRUE(bool(made));
  EXPECT_EQ((*made)->value(), 2);
  Expected<std::unique_ptr<Base>> failed = makeBase(true);
  ASSERT_FALSE(bool(failed));
  EXPECT_EQ(toString(failed.takeError()), "no derived");
}

TEST(Status, ExpectedMadeFromASuccessIsAFailureThatSaysSo) {
  Expected<int> wrong = Error::success();
  ASSERT_FALSE(bool(wrong));
  EXPECT_NE(toString(wrong.takeError()).find("internal error"), std::string::npos);
}

TEST(Status, ExitOnErrorPassesValuesAndEndsOnAnError) {
  ExitOnError check("prog: ");
  EXPECT_EQ(check(Expected<int>(7)), 7);
  check(Error::success());
  EXPECT_EXIT(check(makeError("broken")), ::testing::ExitedWithCode(1), "prog: broken");
}

int sum(Span<const int> values) {
  int total = 0;
  for (int v : values)
    total += v;
  return total;
}

void fill(Span<int> values, int value) {
  for (int& v : values)
    v = value;
}

TEST(Span, ViewsVectorsArraysAndOneElement) {
  std::vector<int> vector = {1, 2, 3};
  int array[] = {4, 5};
  EXPECT_EQ(sum(vector), 6);
  EXPECT_EQ(sum(array), 9);
  EXPECT_EQ(sum(10), 10);
  EXPECT_EQ(sum({}), 0);
  fill(vector, 7);
  EXPECT_EQ(vector, (std::vector<int>{7, 7, 7}));
  Span<int> writable(vector);
  Span<const int> readable = writable;
  EXPECT_EQ(readable.size(), 3u);
  EXPECT_EQ(readable.front(), 7);
  EXPECT_EQ(&readable.back(), &vector.back());
}

} // namespace
} // namespace collc
