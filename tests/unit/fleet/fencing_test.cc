// When per-key ordered work asks the broker whether a delivery is still this replica's, and when
// the delivery's own timing already says so.
#include <gtest/gtest.h>

#include "fleet/consumer_subscription.h"

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const Clock::time_point t0 = Clock::time_point{} + 1h;
constexpr std::chrono::milliseconds kAckWait = 4000ms;

TEST(Fencing, AFreshDeliveryNeedsNoBrokerCheck) {
  EXPECT_FALSE(needs_broker_fence(t0, false, t0 + 999ms, Clock::time_point{}, kAckWait));
  EXPECT_FALSE(needs_broker_fence(t0, false, t0 + 5ms, t0 - 1s, kAckWait))
      << "a reconnect before the pull changes nothing";
}

TEST(Fencing, ADeliveryThatWaitedAQuarterOfAckWaitIsChecked) {
  EXPECT_TRUE(needs_broker_fence(t0, false, t0 + 1000ms, Clock::time_point{}, kAckWait));
  EXPECT_TRUE(needs_broker_fence(t0, false, t0 + 30s, Clock::time_point{}, kAckWait))
      << "an idle long poll: the message may have come long after the pull, or not";
}

TEST(Fencing, AHeldMessageTriedAgainIsAlwaysChecked) {
  EXPECT_TRUE(needs_broker_fence(t0, true, t0 + 1ms, Clock::time_point{}, kAckWait));
}

TEST(Fencing, ADisconnectSinceThePullIsChecked) {
  EXPECT_TRUE(needs_broker_fence(t0, false, t0 + 10ms, t0 + 5ms, kAckWait))
      << "the broker may have restarted and forgotten the delivery";
  EXPECT_TRUE(needs_broker_fence(t0, false, t0 + 10ms, t0, kAckWait));
}

TEST(Fencing, AMessageOfUnknownOriginIsChecked) {
  EXPECT_TRUE(needs_broker_fence(Clock::time_point{}, false, t0, Clock::time_point{}, kAckWait));
}

}  // namespace
}  // namespace natsfleet::fleet
