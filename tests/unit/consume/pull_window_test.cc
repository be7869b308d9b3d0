// The pull engine's window and re-pull rules, on a clock the test moves by hand.
#include "consume/pull_window.h"

#include <gtest/gtest.h>

namespace natsfleet::consume {
namespace {

using namespace std::chrono_literals;
using Clock = PullWindow::Clock;

const Clock::time_point t0 = Clock::time_point{} + 1h;

PullWindow window(int64_t size, std::chrono::milliseconds gap_after = 0ms) {
  return PullWindow({.window = size, .expires = 30s, .heartbeat = 5s, .gap_after = gap_after});
}

TEST(PullWindow, TheFirstPullAsksForTheWholeWindowOnce) {
  auto w = window(10);
  EXPECT_EQ(w.next_pull(t0), 10);
  EXPECT_EQ(w.next_pull(t0), 0) << "all of it is on its way";
  EXPECT_EQ(w.requested(), 10);
  EXPECT_EQ(w.pulls(), 1u);
}

TEST(PullWindow, ItAsksAgainOnceHalfTheWindowIsFreeSoTheNextBatchIsInFlight) {
  auto w = window(10);
  ASSERT_EQ(w.next_pull(t0), 10);
  for (int i = 0; i < 10; ++i) w.delivered(t0);
  EXPECT_EQ(w.in_hand(), 10);
  for (int i = 0; i < 4; ++i) w.done();
  EXPECT_EQ(w.next_pull(t0), 0) << "6 in hand: more than half";
  w.done();
  EXPECT_EQ(w.next_pull(t0), 5) << "5 in hand: the free half is asked for";
  EXPECT_EQ(w.requested() + w.in_hand(), 10) << "never more than the window";
}

TEST(PullWindow, WhatTheBrokerReleasedIsAskedForAgain) {
  auto w = window(8);
  ASSERT_EQ(w.next_pull(t0), 8);
  w.delivered(t0);
  w.done();
  w.released(7);  // the request expired with 7 undelivered
  EXPECT_EQ(w.requested(), 0);
  EXPECT_EQ(w.next_pull(t0 + 1s), 8);
  w.released(100);  // more than asked for: never below zero
  EXPECT_EQ(w.requested(), 0);
}

TEST(PullWindow, APullThatCouldNotBeSentIsNotCountedAndNoSilenceFollowsIt) {
  auto w = window(8, 15s);
  ASSERT_EQ(w.next_pull(t0), 8);
  w.unsent(8);  // disconnected: the pull never left
  EXPECT_EQ(w.requested(), 0);
  EXPECT_EQ(w.pulls(), 0u);
  EXPECT_FALSE(w.gap(t0 + 60s)) << "nothing was asked for, so no silence is owed";
  EXPECT_FALSE(w.heartbeat_missed(t0 + 60s));
  EXPECT_EQ(w.next_pull(t0 + 60s), 8) << "asked for again once it can be sent";
}

TEST(PullWindow, ASilenceIsAGapOnlyWithRequestsOutstandingAndOnlyOnce) {
  auto w = window(4, 15s);
  EXPECT_FALSE(w.gap(t0 + 1h)) << "nothing asked for: silence is expected";
  ASSERT_EQ(w.next_pull(t0), 4);
  EXPECT_FALSE(w.gap(t0 + 14s));
  EXPECT_TRUE(w.gap(t0 + 15s));
  EXPECT_EQ(w.requested(), 0) << "the requests are forgotten";
  EXPECT_FALSE(w.gap(t0 + 16s)) << "one gap, called once";
  EXPECT_EQ(w.gaps(), 1u);
}

TEST(PullWindow, HeartbeatsAndMessagesKeepAGapAway) {
  auto w = window(4, 15s);
  ASSERT_EQ(w.next_pull(t0), 4);
  w.heard(t0 + 10s);
  EXPECT_FALSE(w.gap(t0 + 20s));
  w.delivered(t0 + 20s);
  EXPECT_FALSE(w.gap(t0 + 34s));
  EXPECT_TRUE(w.gap(t0 + 35s));
}

TEST(PullWindow, NoGapRuleWithoutAckWait) {
  auto w = window(4);
  ASSERT_EQ(w.next_pull(t0), 4);
  EXPECT_FALSE(w.gap(t0 + 24h));
}

TEST(PullWindow, HeartbeatsAreMissedAfterTwoSilentHeartbeatsWithRequestsOut) {
  auto w = window(4);
  EXPECT_FALSE(w.heartbeat_missed(t0 + 1h));
  // Idle for an hour, then a pull: heartbeats are owed from the pull on, not from before.
  ASSERT_EQ(w.next_pull(t0 + 1h), 4);
  EXPECT_FALSE(w.heartbeat_missed(t0 + 1h + 10s));
  EXPECT_TRUE(w.heartbeat_missed(t0 + 1h + 10s + 1ms));
  w.heard(t0 + 1h + 10s);
  EXPECT_FALSE(w.heartbeat_missed(t0 + 1h + 11s));
}

TEST(PullWindow, RequestsThatNeverReportBackExpireAfterExpiresAndAHeartbeat) {
  auto w = window(4);
  ASSERT_EQ(w.next_pull(t0), 4);
  EXPECT_FALSE(w.expire(t0 + 35s));
  EXPECT_EQ(w.requested(), 4);
  EXPECT_TRUE(w.expire(t0 + 35s + 1ms));
  EXPECT_EQ(w.requested(), 0);
  EXPECT_EQ(w.next_pull(t0 + 36s), 4) << "the pipeline is not held by lost requests";
}

TEST(PullWindow, ForgottenRequestsArePulledAfresh) {
  auto w = window(6);
  ASSERT_EQ(w.next_pull(t0), 6);
  w.delivered(t0);
  w.forget_requests(t0 + 1s);  // a reconnect or a new leader may have dropped them
  EXPECT_EQ(w.requested(), 0);
  EXPECT_EQ(w.in_hand(), 1) << "what is in hand stays";
  EXPECT_EQ(w.next_pull(t0 + 1s), 5);
}

TEST(PullWindow, HeldBackItTakesHardlyMoreAndResumesAtItsSize) {
  auto w = window(64);
  w.hold_back(true);
  EXPECT_EQ(w.window(), 2);
  EXPECT_EQ(w.next_pull(t0), 2);
  w.set_window(128);  // measured meanwhile: applies once released
  EXPECT_EQ(w.window(), 2);
  w.hold_back(false);
  EXPECT_EQ(w.window(), 128);
  w.set_window(0);
  EXPECT_EQ(w.window(), 1) << "never below one";
}

// What a message arriving now can have been sent for: the oldest request that may still deliver.
TEST(PullWindow, AMessageIsDatedByTheOldestRequestThatMayStillDeliver) {
  auto w = window(4);
  ASSERT_EQ(w.next_pull(t0), 4);
  EXPECT_EQ(w.pulled_since(), t0);
  w.delivered(t0 + 1s);
  w.delivered(t0 + 1s);
  w.done();
  w.done();
  ASSERT_EQ(w.next_pull(t0 + 2s), 2) << "pipelined while two are still asked for";
  EXPECT_EQ(w.pulled_since(), t0) << "the first request may still bring the next message";
  for (int i = 0; i < 4; ++i) w.delivered(t0 + 3s);
  for (int i = 0; i < 4; ++i) w.done();
  ASSERT_EQ(w.requested(), 0);
  ASSERT_EQ(w.next_pull(t0 + 4s), 4);
  EXPECT_EQ(w.pulled_since(), t0 + 4s) << "everything asked for before arrived";
}

TEST(PullWindow, RequestsForgottenOnTheSameInboxStillDateMessagesUntilTheyExpire) {
  auto w = window(1);
  ASSERT_EQ(w.next_pull(t0), 1);
  w.forget_requests(t0 + 1s);  // a reconnect: the broker may still hold the request
  ASSERT_EQ(w.next_pull(t0 + 1s), 1);
  EXPECT_EQ(w.pulled_since(), t0) << "the forgotten request may deliver first";
  w.delivered(t0 + 2s);
  w.done();
  ASSERT_EQ(w.next_pull(t0 + 36s), 1) << "the new request is done, the old one has expired";
  EXPECT_EQ(w.pulled_since(), t0 + 36s);
}

TEST(PullWindow, ANewInboxLeavesForgottenRequestsNothingToDeliverTo) {
  auto w = window(1, 15s);
  ASSERT_EQ(w.next_pull(t0), 1);
  ASSERT_TRUE(w.gap(t0 + 20s));
  w.new_inbox(t0 + 20s);
  ASSERT_EQ(w.next_pull(t0 + 20s), 1);
  EXPECT_EQ(w.pulled_since(), t0 + 20s);
}

}  // namespace
}  // namespace natsfleet::consume
