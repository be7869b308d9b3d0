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

// A consumer info answer: the leader's last delivery `since_last` before it answered (none: the
// answer does not say, as nats-server 2.9's does not).
nats::ConsumerInfo answer(uint64_t delivered, uint64_t ack_pending,
                          std::optional<std::chrono::nanoseconds> since_last = std::nullopt) {
  nats::ConsumerInfo info;
  info.delivered_consumer_seq = delivered;
  info.num_ack_pending = ack_pending;
  if (since_last) {
    info.gathered_ns = 1'800'000'000'000'000'000;
    info.last_delivery_ns = info.gathered_ns - since_last->count();
  }
  return info;
}

constexpr std::chrono::nanoseconds kSlack = 500ms;

TEST(Fencing, WithoutTimesTheRecordMustNameThisDelivery) {
  EXPECT_TRUE(latest_delivery_is(answer(19, 1), 19, 30ms, kSlack));
  EXPECT_FALSE(latest_delivery_is(answer(18, 1), 19, 30ms, kSlack))
      << "a record that has not caught up says nothing for sure";
  EXPECT_FALSE(latest_delivery_is(answer(20, 1), 19, 30ms, kSlack));
  EXPECT_TRUE(latest_delivery_is(answer(19, 1, 40ms), 19, std::nullopt, kSlack))
      << "no receipt time (a held message tried again): the record decides";
  EXPECT_FALSE(latest_delivery_is(answer(18, 1, 40ms), 19, std::nullopt, kSlack));
}

TEST(Fencing, ARecordBehindTheLeaderIsOursWhenNothingWasDeliveredSinceTheReceipt) {
  EXPECT_TRUE(latest_delivery_is(answer(18, 1, 30ms), 19, 28ms, kSlack))
      << "nats-server 2.10: the store lags the leader; its last delivery came before the receipt";
  EXPECT_TRUE(latest_delivery_is(answer(18, 1, 2ms), 19, 30ms, kSlack))
      << "round trips and clock rates blur the comparison by far less than the slack";
  EXPECT_TRUE(latest_delivery_is(answer(19, 1, 3s), 19, 3s, kSlack));
}

TEST(Fencing, ADeliveryAfterTheReceiptMeansItIsNotOurs) {
  EXPECT_FALSE(latest_delivery_is(answer(18, 1, 100ms), 19, 4s, kSlack))
      << "held 4 s since its receipt; the leader delivered 100 ms ago: redelivered elsewhere";
  EXPECT_FALSE(latest_delivery_is(answer(19, 1, 100ms), 19, 4s, kSlack))
      << "the record names this delivery, but the leader delivered since (the record lags)";
}

TEST(Fencing, NothingAwaitingAckOrALaterDeliveryOnRecordIsNeverOurs) {
  EXPECT_FALSE(latest_delivery_is(answer(19, 0, 30ms), 19, 28ms, kSlack));
  EXPECT_FALSE(latest_delivery_is(answer(20, 1, 30ms), 19, 28ms, kSlack));
  EXPECT_FALSE(latest_delivery_is(answer(19, 0), 19, std::nullopt, kSlack));
}

}  // namespace
}  // namespace natsfleet::fleet
