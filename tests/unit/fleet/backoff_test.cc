#include "fleet/backoff.h"

#include <gtest/gtest.h>

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, DoublesUpToTheCapWithFullJitterTop) {
  Backoff b(milliseconds(100), milliseconds(1000), [] { return 1.0; });
  EXPECT_EQ(b.next(), milliseconds(100));
  EXPECT_EQ(b.next(), milliseconds(200));
  EXPECT_EQ(b.next(), milliseconds(400));
  EXPECT_EQ(b.next(), milliseconds(800));
  EXPECT_EQ(b.next(), milliseconds(1000));
  EXPECT_EQ(b.next(), milliseconds(1000));
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

TEST(Backoff, SurvivesManyAttemptsWithoutOverflow) {
  Backoff b(milliseconds(1), milliseconds(60000), [] { return 1.0; });
  milliseconds last{};
  for (int i = 0; i < 10000; ++i) last = b.next();
  EXPECT_EQ(last, milliseconds(60000));
}

}  // namespace
}  // namespace natsfleet::fleet
