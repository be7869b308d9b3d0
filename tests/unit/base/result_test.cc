// natsfleet::Result as a user chains it: value() on an error throws the Error itself, error() on
// a success is refused, and value_or / and_then / transform / or_else behave as std::expected's.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "natsfleet/error.h"

namespace natsfleet {
namespace {

Result<int> parsed(const std::string& text) {
  if (text.empty()) return Result<int>(Errc::invalid_argument, "empty");
  return std::stoi(text);
}

Result<int> half(int n) {
  if (n % 2 != 0) return Result<int>(Errc::invalid_argument, "odd");
  return n / 2;
}

TEST(Result, ValueOfAnErrorThrowsTheErrorItself) {
  const Result<int> r(Errc::timeout, "the broker did not answer in 2 s");
  try {
    (void)r.value();
    FAIL() << "value() returned";
  } catch (const BadResultAccess& e) {
    EXPECT_EQ(e.error().code, make_error_code(Errc::timeout));
    EXPECT_EQ(e.error().message, "the broker did not answer in 2 s");
    EXPECT_NE(std::string(e.what()).find("the broker did not answer in 2 s"), std::string::npos);
  }
  EXPECT_THROW((void)*r, BadResultAccess);
  const Result<void> v(Errc::not_connected);
  try {
    v.value();
    FAIL() << "value() returned";
  } catch (const BadResultAccess& e) {
    EXPECT_EQ(e.error().code, make_error_code(Errc::not_connected));
    EXPECT_EQ(std::string(e.what()),
              "natsfleet::Result holds an error: not connected to the broker");
  }
  EXPECT_NO_THROW(Result<void>().value());
}

TEST(Result, ErrorOfASuccessIsRefusedNotAFakeError) {
  EXPECT_THROW((void)Result<int>(3).error(), std::logic_error);
  EXPECT_THROW((void)Result<void>().error(), std::logic_error);
  EXPECT_EQ(Result<int>(Errc::timeout).error().code, make_error_code(Errc::timeout));
}

TEST(Result, ValueOrGivesTheFallbackOnlyOnAnError) {
  EXPECT_EQ(parsed("7").value_or(-1), 7);
  EXPECT_EQ(parsed("").value_or(-1), -1);
  Result<std::string> s(std::string("kept"));
  EXPECT_EQ(std::move(s).value_or("fallback"), "kept");
  EXPECT_EQ(Result<std::string>(Errc::timeout).value_or("fallback"), "fallback");
}

TEST(Result, AndThenChainsUntilTheFirstError) {
  EXPECT_EQ(parsed("8").and_then(half).and_then(half).value(), 2);
  auto odd = parsed("6").and_then(half).and_then(half);
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.error().message, "odd");
  int called = 0;
  auto first = parsed("").and_then([&](int n) {
    ++called;
    return half(n);
  });
  EXPECT_EQ(first.error().message, "empty");
  EXPECT_EQ(called, 0);
  // To another type, and from a Result<void>.
  Result<std::string> text = parsed("5").and_then(
      [](int n) -> Result<std::string> { return std::string(static_cast<size_t>(n), 'x'); });
  EXPECT_EQ(text.value(), "xxxxx");
  EXPECT_EQ(Result<void>().and_then([] { return parsed("4"); }).value(), 4);
  EXPECT_EQ(Result<void>(Errc::shutting_down).and_then([] { return parsed("4"); }).error().code,
            make_error_code(Errc::shutting_down));
}

TEST(Result, TransformMapsAValueAndKeepsAnError) {
  EXPECT_EQ(parsed("20").transform([](int n) { return n + 1; }).value(), 21);
  EXPECT_EQ(parsed("20").transform([](int n) { return std::to_string(n); }).value(), "20");
  EXPECT_EQ(parsed("").transform([](int n) { return n + 1; }).error().message, "empty");
  int seen = 0;
  Result<void> done = parsed("9").transform([&](int n) { seen = n; });
  EXPECT_TRUE(done);
  EXPECT_EQ(seen, 9);
  // A move-only value moves through.
  Result<std::unique_ptr<int>> owned(std::make_unique<int>(3));
  auto doubled = std::move(owned).transform([](std::unique_ptr<int> p) { return *p * 2; });
  EXPECT_EQ(doubled.value(), 6);
  EXPECT_EQ(Result<void>().transform([] { return 1; }).value(), 1);
  EXPECT_FALSE(Result<void>(Errc::timeout).transform([] { return 1; }));
}

TEST(Result, OrElseRecoversOrReplacesTheError) {
  EXPECT_EQ(parsed("").or_else([](const Error&) { return Result<int>(0); }).value(), 0);
  auto renamed = parsed("").or_else(
      [](const Error& e) { return Result<int>(Errc::invalid_argument, "count: " + e.message); });
  EXPECT_EQ(renamed.error().message, "count: empty");
  int called = 0;
  EXPECT_EQ(parsed("3")
                .or_else([&](const Error&) {
                  ++called;
                  return Result<int>(0);
                })
                .value(),
            3);
  EXPECT_EQ(called, 0);
  EXPECT_TRUE(Result<void>(Errc::timeout).or_else([](const Error&) { return Result<void>(); }));
}

TEST(Result, MoveOnlyValuesComeOutOfAnRvalue) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(5));
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, 5);
  EXPECT_TRUE(Result<int>(1).has_value());
  EXPECT_FALSE(Result<int>(Errc::timeout).has_value());
}

}  // namespace
}  // namespace natsfleet
