#include "base/backoff.h"

#include <gtest/gtest.h>

#include <limits>

namespace natsfleet::base {
namespace {

using std::chrono::milliseconds;

TEST(ExponentialDelay, DoublesFromMinUpToTheCap) {
  EXPECT_EQ(exponential_delay(milliseconds(100), milliseconds(1000), 0), milliseconds(100));
  EXPECT_EQ(exponential_delay(milliseconds(100), milliseconds(1000), 1), milliseconds(200));
  EXPECT_EQ(exponential_delay(milliseconds(100), milliseconds(1000), 3), milliseconds(800));
  EXPECT_EQ(exponential_delay(milliseconds(100), milliseconds(1000), 4), milliseconds(1000));
  EXPECT_EQ(exponential_delay(milliseconds(100), milliseconds(1000), 5), milliseconds(1000));
}

TEST(ExponentialDelay, EdgesNeitherOverflowNorLoop) {
  EXPECT_EQ(exponential_delay(milliseconds(1), milliseconds::max(), 10'000), milliseconds::max());
  EXPECT_EQ(exponential_delay(milliseconds(1), milliseconds(60'000),
                              std::numeric_limits<uint64_t>::max()),
            milliseconds(60'000));
  EXPECT_EQ(exponential_delay(milliseconds(0), milliseconds(1000), 5), milliseconds(0));
  EXPECT_EQ(exponential_delay(milliseconds(500), milliseconds(100), 0), milliseconds(100))
      << "a min above the cap is the cap";
}

TEST(Backoff, DoublesUpToTheCapWithFullJitterTop) {
  Backoff b(milliseconds(100), milliseconds(1000), [] { return 1.0; });
  EXPECT_EQ(b.next(), milliseconds(100));
  EXPECT_EQ(b.next(), milliseconds(200));
  EXPECT_EQ(b.next(), milliseconds(400));
  EXPECT_EQ(b.next(), milliseconds(800));
  EXPECT_EQ(b.next(), milliseconds(1000));
  EXPECT_EQ(b.next(), milliseconds(1000));
  EXPECT_EQ(b.attempts(), 6);
}

TEST(Backoff, JitterScalesIntoUpperHalf) {
  Backoff b(milliseconds(1000), milliseconds(1000), [] { return 0.0; });
  EXPECT_EQ(b.next(), milliseconds(500));
}

TEST(Backoff, ResetStartsOver) {
  Backoff b(milliseconds(10), milliseconds(1000), [] { return 1.0; });
  b.next();
  b.next();
  b.reset();
  EXPECT_EQ(b.next(), milliseconds(10));
}

TEST(Backoff, ZeroMinStillWaitsAMillisecond) {
  Backoff b(milliseconds(0), milliseconds(0), [] { return 0.0; });
  EXPECT_EQ(b.next(), milliseconds(1));
}

TEST(Backoff, SurvivesManyAttemptsWithoutOverflow) {
  Backoff b(milliseconds(1), milliseconds(60000), [] { return 1.0; });
  milliseconds last{};
  for (int i = 0; i < 10000; ++i) last = b.next();
  EXPECT_EQ(last, milliseconds(60000));
}

}  // namespace
}  // namespace natsfleet::base
