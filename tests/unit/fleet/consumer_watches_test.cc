// The supervisor's conclusions over time (stalled, stuck leader, unserved), on simulated time.
#include "fleet/consumer_watches.h"

#include <gtest/gtest.h>

namespace natsfleet::fleet {
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

TEST(StallWatch, WaitingMessagesWithNeitherFloorNorAcksMovingForStallAfterIsAStall) {
  StallWatch watch(60s);
  const Clock::time_point t0 = Clock::time_point{} + 1h;
  watch.restart(t0, 100);
  EXPECT_FALSE(watch.observe(t0 + 30s, 100, 0, 5));
  EXPECT_FALSE(watch.observe(t0 + 60s, 100, 0, 5)) << "exactly stall_after: not yet";
  EXPECT_TRUE(watch.observe(t0 + 61s, 100, 0, 5));
  EXPECT_FALSE(watch.observe(t0 + 62s, 101, 0, 5)) << "the floor moved";
  EXPECT_TRUE(watch.observe(t0 + 123s, 101, 0, 5));
  EXPECT_FALSE(watch.observe(t0 + 124s, 101, 1, 5)) << "this replica settled one";
}

TEST(StallWatch, NothingWaitingIsNeverAStall) {
  StallWatch watch(60s);
  const Clock::time_point t0 = Clock::time_point{} + 1h;
  watch.restart(t0, 7);
  EXPECT_FALSE(watch.observe(t0 + 10min, 7, 0, 0));
  EXPECT_FALSE(watch.observe(t0 + 11min, 7, 0, 3)) << "waiting since a minute ago, not ten";
}

TEST(StallWatch, ABindStartsTheCountAfresh) {
  StallWatch watch(60s);
  const Clock::time_point t0 = Clock::time_point{} + 1h;
  watch.restart(t0, 7);
  EXPECT_TRUE(watch.observe(t0 + 2min, 7, 0, 3));
  watch.restart(t0 + 2min, 7);
  EXPECT_FALSE(watch.observe(t0 + 150s, 7, 0, 3)) << "rebound 30 s ago";
}

class UnservedWatchTest : public ::testing::Test {
 protected:
  const Clock::time_point t0 = Clock::time_point{} + 1h;
  UnservedWatch watch{30s};
  UnservedWatch::Link up{.connected = true};
};

TEST_F(UnservedWatchTest, TheCountStartsAtTheFirstEvidenceAndEndsAfterReplaceAfter) {
  EXPECT_FALSE(watch.evidence(t0, up)) << "the first evidence starts the count";
  EXPECT_FALSE(watch.evidence(t0 + 29s, up));
  EXPECT_TRUE(watch.evidence(t0 + 30s, up));
  EXPECT_EQ(watch.unserved(t0 + 30s), 30s);
}

TEST_F(UnservedWatchTest, ServingOnceRestartsTheCount) {
  ASSERT_FALSE(watch.evidence(t0, up));
  up.last_served = t0 + 10s;
  EXPECT_FALSE(watch.evidence(t0 + 31s, up)) << "it served 21 s ago";
  EXPECT_FALSE(watch.evidence(t0 + 60s, up));
  EXPECT_TRUE(watch.evidence(t0 + 61s, up));
}

TEST_F(UnservedWatchTest, AnOutageSaysNothingAboutTheConsumer) {
  ASSERT_FALSE(watch.evidence(t0, up));
  UnservedWatch::Link down{.connected = false};
  EXPECT_FALSE(watch.evidence(t0 + 40s, down)) << "disconnected: nothing counts";
  up.link_changed = t0 + 45s;  // came back
  EXPECT_FALSE(watch.evidence(t0 + 50s, up)) << "the count starts again after the reconnect";
  EXPECT_FALSE(watch.evidence(t0 + 79s, up));
  EXPECT_TRUE(watch.evidence(t0 + 80s, up));
}

TEST_F(UnservedWatchTest, SparedOrResetTheCountStartsAgain) {
  ASSERT_FALSE(watch.evidence(t0, up));
  ASSERT_TRUE(watch.evidence(t0 + 30s, up));
  watch.spare(t0 + 30s);  // a last look found a leader
  EXPECT_FALSE(watch.evidence(t0 + 59s, up));
  EXPECT_TRUE(watch.evidence(t0 + 60s, up));
  watch.reset();  // deleted and made anew
  EXPECT_FALSE(watch.evidence(t0 + 90s, up)) << "a new consumer: its first evidence";
  EXPECT_TRUE(watch.evidence(t0 + 120s, up));
}

}  // namespace
}  // namespace natsfleet::fleet
