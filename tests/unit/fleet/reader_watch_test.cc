#include "fleet/ordered/reader_watch.h"

#include <gtest/gtest.h>

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;
using Clock = ReaderWatch::Clock;

constexpr auto kPeriod = 2s;

// A watch that saw read_to 100 at t0 with room in the lanes.
struct Watched {
  Clock::time_point t0 = Clock::time_point{} + 1h;
  ReaderWatch watch{kPeriod};
  Watched() {
    EXPECT_FALSE(watch.look_due(t0, 100, true)) << "the first tick only starts the wait";
  }
};

TEST(ReaderWatch, LooksOnlyAfterAPeriodWithoutProgressThenOncePerPeriod) {
  Watched w;
  EXPECT_FALSE(w.watch.look_due(w.t0 + 1s, 100, true));
  EXPECT_TRUE(w.watch.look_due(w.t0 + kPeriod, 100, true));
  EXPECT_FALSE(w.watch.look_due(w.t0 + kPeriod + 1s, 100, true)) << "once per period";
  EXPECT_TRUE(w.watch.look_due(w.t0 + 2 * kPeriod, 100, true));
}

TEST(ReaderWatch, AMessageStillUnreadAtTheNextLookMeansTheConsumerDoesNotServe) {
  Watched w;
  ASSERT_TRUE(w.watch.look_due(w.t0 + kPeriod, 100, true));
  EXPECT_FALSE(w.watch.unserved(101)) << "it may be on its way";
  EXPECT_EQ(w.watch.waiting(), 101u);
  ASSERT_TRUE(w.watch.look_due(w.t0 + 2 * kPeriod, 100, true));
  EXPECT_TRUE(w.watch.unserved(101));
}

TEST(ReaderWatch, ProgressStartsTheWaitAgain) {
  Watched w;
  ASSERT_TRUE(w.watch.look_due(w.t0 + kPeriod, 100, true));
  ASSERT_FALSE(w.watch.unserved(101));
  EXPECT_FALSE(w.watch.look_due(w.t0 + 2 * kPeriod, 101, true)) << "101 was read";
  EXPECT_EQ(w.watch.waiting(), 0u);
  EXPECT_FALSE(w.watch.look_due(w.t0 + 3 * kPeriod - 1ms, 101, true));
  ASSERT_TRUE(w.watch.look_due(w.t0 + 3 * kPeriod, 101, true));
  EXPECT_FALSE(w.watch.unserved(102)) << "a message found after progress waits a period again";
}

TEST(ReaderWatch, FullLanesAreNotAStall) {
  Watched w;
  ASSERT_TRUE(w.watch.look_due(w.t0 + kPeriod, 100, true));
  ASSERT_FALSE(w.watch.unserved(101));
  EXPECT_FALSE(w.watch.look_due(w.t0 + 2 * kPeriod, 100, false)) << "the reader asks for nothing";
  EXPECT_FALSE(w.watch.look_due(w.t0 + 10 * kPeriod, 100, false));
  EXPECT_FALSE(w.watch.look_due(w.t0 + 10 * kPeriod + 1ms, 100, true)) << "room again: a new wait";
  ASSERT_TRUE(w.watch.look_due(w.t0 + 11 * kPeriod + 1ms, 100, true));
  EXPECT_FALSE(w.watch.unserved(101));
}

TEST(ReaderWatch, NothingPastWhatWasReadIsIdleNotAStall) {
  Watched w;
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(w.watch.look_due(w.t0 + i * kPeriod, 100, true));
    EXPECT_FALSE(w.watch.unserved(0));
  }
  ASSERT_TRUE(w.watch.look_due(w.t0 + 6 * kPeriod, 100, true));
  EXPECT_FALSE(w.watch.unserved(101)) << "a message that came in while idle waits a period";
}

}  // namespace
}  // namespace natsfleet::fleet
