#include "fleet/stuck_consumer.h"

#include <gtest/gtest.h>

namespace natsfleet {
namespace {

using namespace std::chrono_literals;
using Clock = StuckConsumerWatch::Clock;

TEST(StuckConsumer, AFloorUnmovedWithMessagesAwaitingAckAndNoneHereAsksOnce) {
  StuckConsumerWatch watch(12s);
  const Clock::time_point t0{};
  EXPECT_FALSE(watch.observe(t0 + 1s, 86153, 1, false));
  EXPECT_FALSE(watch.observe(t0 + 12s, 86153, 1, false));  // 11 s: not yet
  EXPECT_TRUE(watch.observe(t0 + 13s, 86153, 1, false));
  EXPECT_FALSE(watch.observe(t0 + 14s, 86153, 1, false));  // asked: not again so soon
  EXPECT_TRUE(watch.observe(t0 + 26s, 86153, 1, false));   // still stuck after another round
}

TEST(StuckConsumer, AMovingFloorNothingAwaitingOrAMessageHereIsNotStuck) {
  StuckConsumerWatch watch(12s);
  const Clock::time_point t0{};
  EXPECT_FALSE(watch.observe(t0, 100, 5, false));
  EXPECT_FALSE(watch.observe(t0 + 10s, 200, 5, false));  // moved
  EXPECT_FALSE(watch.observe(t0 + 21s, 200, 5, true));   // held here: ours to settle
  EXPECT_FALSE(watch.observe(t0 + 22s, 200, 0, false));  // nothing awaits ack
  EXPECT_FALSE(watch.observe(t0 + 33s, 200, 3, false));  // 11 s since nothing awaited
  EXPECT_TRUE(watch.observe(t0 + 35s, 200, 3, false));
}

TEST(StuckConsumer, WaitsThreeRedeliveryRoundsAndAtLeastTenSeconds) {
  EXPECT_EQ(StuckConsumerWatch::after_for(30s), 90s);
  EXPECT_EQ(StuckConsumerWatch::after_for(2s), 10s);
}

}  // namespace
}  // namespace natsfleet
