// The downstream gate: an outage holds messages and probes one at a time; a message that fails
// while others succeed is rejected; the poison that looks like an outage is found out.
#include "fleet/downstream_gate.h"

#include <gtest/gtest.h>

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;
using Change = DownstreamGate::Change;
using TimePoint = DownstreamGate::TimePoint;

nats::InboundMessage msg(uint64_t id) {
  nats::InboundMessage m;
  m.subject = "jobs.run";
  m.reply = "reply." + std::to_string(id);
  m.data = "m" + std::to_string(id);
  return m;
}

uint64_t id_of(const nats::InboundMessage& m) { return std::stoull(m.data.substr(1)); }

DownstreamGate gate() {
  DownstreamGate::Options o;
  o.retry_min = 100ms;
  o.retry_max = 1s;
  o.in_progress_every = 10s;
  o.jitter = [] { return 1.0; };
  return DownstreamGate(o);
}

const TimePoint t0{};

TEST(DownstreamGate, OneFailureIsASuspectNotAnOutage) {
  auto g = gate();
  auto out = g.failed(msg(1), 1, false, "503", 0ms, t0);
  EXPECT_EQ(out.change, Change::none);
  EXPECT_FALSE(g.down());
  EXPECT_EQ(g.held(), 1u);
  EXPECT_FALSE(g.quiet());
}

TEST(DownstreamGate, AMessageThatFailsWhileAnotherSucceedsIsRejected) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "400-ish", 0ms, t0);
  auto out = g.succeeded(false, t0 + 10ms, t0 + 10ms);
  ASSERT_EQ(out.reject.size(), 1u);
  EXPECT_EQ(id_of(out.reject[0]), 1u);
  EXPECT_TRUE(out.retry.empty());
  EXPECT_TRUE(g.quiet());
}

// 42 crashed the worker with 43 in flight, just after the worker answered 41. The three answers
// reach the gate in any order; 41's, reported between the two failures, was handed over before
// either failed and shows nothing: 43 is no culprit and is tried alone, never rejected.
TEST(DownstreamGate, ASuccessHandedOverBeforeAFailureConvictsNothing) {
  auto g = gate();
  (void)g.failed(msg(42), 42, false, "worker exited", 0ms, t0 + 5ms);
  auto late = g.succeeded(false, t0, t0 + 5ms);
  EXPECT_TRUE(late.reject.empty()) << "41 was in flight with 42";
  (void)g.failed(msg(43), 43, false, "worker exited", 0ms, t0 + 5ms);
  ASSERT_TRUE(g.down()) << "two messages failed with no success between";
  // The restarted worker takes 44, handed over after the failures: the downstream works.
  auto up = g.succeeded(false, t0 + 200ms, t0 + 210ms);
  EXPECT_TRUE(up.reject.empty());
  std::vector<uint64_t> rejected;
  while (auto p = g.next_probe(t0 + 1s)) {
    const uint64_t id = id_of(*p);
    if (id == 42) {
      auto out = g.failed(std::move(*p), id, true, "worker exited", 0ms, t0 + 1s);
      for (auto& m : out.reject) rejected.push_back(id_of(m));
    } else {
      (void)g.succeeded(true, t0 + 1s, t0 + 1s);
    }
  }
  EXPECT_EQ(rejected, std::vector<uint64_t>{42});
  EXPECT_FALSE(g.down());
}

TEST(DownstreamGate, FailuresOfTwoDifferentMessagesMeanTheDownstreamIsDown) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  auto out = g.failed(msg(2), 2, false, "503", 0ms, t0);
  EXPECT_EQ(out.change, Change::went_down);
  EXPECT_TRUE(g.down());
  EXPECT_TRUE(out.reject.empty());
  // Fresh messages are held untried.
  EXPECT_FALSE(g.hold(msg(3), 3, t0).has_value());
  EXPECT_EQ(g.held(), 3u);
}

TEST(DownstreamGate, TheSameMessageFailingTwiceIsNotYetAnOutage) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  auto probe = g.next_probe(t0 + 100ms);
  ASSERT_TRUE(probe);
  auto out = g.failed(std::move(*probe), 1, true, "503", 0ms, t0 + 110ms);
  EXPECT_EQ(out.change, Change::none);
  EXPECT_FALSE(g.down());
}

TEST(DownstreamGate, ALoneMessageFailingAgainAndAgainIsTakenForAnOutage) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  TimePoint now = t0;
  Change last = Change::none;
  for (int i = 0; i < 2; ++i) {
    now += 5s;
    auto probe = g.next_probe(now);
    ASSERT_TRUE(probe);
    last = g.failed(std::move(*probe), 1, true, "503", 0ms, now).change;
  }
  EXPECT_EQ(last, Change::went_down);
  EXPECT_TRUE(g.down());
}

TEST(DownstreamGate, WhileDownOneProbeAtATimeAfterBackoffOldestFirstInTurn) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  (void)g.failed(msg(2), 2, false, "503", 0ms, t0);
  EXPECT_FALSE(g.next_probe(t0 + 50ms)) << "before the first backoff";
  auto p1 = g.next_probe(t0 + 100ms);
  ASSERT_TRUE(p1);
  EXPECT_EQ(id_of(*p1), 1u);
  EXPECT_FALSE(g.next_probe(t0 + 10s)) << "one probe out at a time";
  (void)g.failed(std::move(*p1), 1, true, "503", 0ms, t0 + 150ms);
  // The next wait doubles (200ms), and the next probe is another message.
  EXPECT_FALSE(g.next_probe(t0 + 300ms));
  auto p2 = g.next_probe(t0 + 350ms);
  ASSERT_TRUE(p2);
  EXPECT_EQ(id_of(*p2), 2u);
}

TEST(DownstreamGate, RetryAfterDelaysTheNextProbe) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  (void)g.failed(msg(2), 2, false, "503", 30s, t0);
  EXPECT_FALSE(g.next_probe(t0 + 29s));
  EXPECT_TRUE(g.next_probe(t0 + 30s));
}

TEST(DownstreamGate, RecoveryTriesTheOutagesFirstFailuresAloneThenHandsTheRestBack) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  (void)g.failed(msg(2), 2, false, "503", 0ms, t0);
  (void)g.hold(msg(3), 3, t0);
  (void)g.hold(msg(4), 4, t0);
  auto p = g.next_probe(t0 + 1s);
  ASSERT_TRUE(p);
  EXPECT_EQ(id_of(*p), 1u);
  auto first = g.succeeded(true, t0 + 1s, t0 + 1s);
  EXPECT_EQ(first.change, Change::none) << "2 failed with 1 when the outage began: tried alone";
  auto alone = g.next_probe(t0 + 1s);
  ASSERT_TRUE(alone);
  EXPECT_EQ(id_of(*alone), 2u);
  auto out = g.succeeded(true, t0 + 1s, t0 + 1s);
  EXPECT_EQ(out.change, Change::went_up);
  EXPECT_TRUE(out.reject.empty());
  ASSERT_EQ(out.retry.size(), 2u);
  EXPECT_EQ(id_of(out.retry[0]), 3u);
  EXPECT_EQ(id_of(out.retry[1]), 4u);
  EXPECT_FALSE(g.down());
  EXPECT_TRUE(g.quiet());
}

TEST(DownstreamGate, TheCulpritOfAnOutageIsFoundEvenWhenAnotherMessageIsProbedFirst) {
  // 1 and 2 fail together because 2 crashed the worker; 1 is probed first and goes through.
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "worker exited", 0ms, t0);
  (void)g.failed(msg(2), 2, false, "worker exited", 0ms, t0);
  auto p1 = g.next_probe(t0 + 1s);
  ASSERT_EQ(id_of(*p1), 1u);
  (void)g.succeeded(true, t0 + 1s, t0 + 1s);
  auto p2 = g.next_probe(t0 + 1s);
  ASSERT_EQ(id_of(*p2), 2u);
  auto out = g.failed(std::move(*p2), 2, true, "worker exited", 0ms, t0 + 1s);
  ASSERT_EQ(out.reject.size(), 1u);
  EXPECT_EQ(out.change, Change::went_up);
}

TEST(DownstreamGate, AMessageWhoseFailureArrivesAfterTheOutageBeganIsTriedAloneToo) {
  // 1 crashed the worker; 2 and 3 were in flight with it, and 1's own failure is reported last.
  auto g = gate();
  (void)g.failed(msg(2), 2, false, "worker exited", 0ms, t0);
  (void)g.failed(msg(3), 3, false, "worker exited", 0ms, t0);
  ASSERT_TRUE(g.down());
  (void)g.failed(msg(1), 1, false, "worker exited", 0ms, t0);
  (void)g.hold(msg(4), 4, t0);
  auto p = g.next_probe(t0 + 1s);
  ASSERT_EQ(id_of(*p), 2u);
  (void)g.succeeded(true, t0 + 1s, t0 + 1s);
  auto v3 = g.next_probe(t0 + 1s);
  ASSERT_EQ(id_of(*v3), 3u);
  (void)g.succeeded(true, t0 + 1s, t0 + 1s);
  auto v1 = g.next_probe(t0 + 1s);
  ASSERT_TRUE(v1) << "1 failed during the outage: tried alone before 4 is released";
  ASSERT_EQ(id_of(*v1), 1u);
  auto out = g.failed(std::move(*v1), 1, true, "worker exited", 0ms, t0 + 1s);
  ASSERT_EQ(out.reject.size(), 1u);
  EXPECT_EQ(out.change, Change::went_up);
  ASSERT_EQ(out.retry.size(), 1u);
  EXPECT_EQ(id_of(out.retry[0]), 4u);
}

TEST(DownstreamGate, AFailureReportedAfterALateSuccessIsStillTriedAlone) {
  // 1 crashed the worker with 2 and 3 in flight. The worker answered 0 just before it died, but
  // that answer is reported after the outage began, and 1's own failure after that.
  auto g = gate();
  (void)g.failed(msg(2), 2, false, "worker exited", 0ms, t0);
  (void)g.failed(msg(3), 3, false, "worker exited", 0ms, t0);
  ASSERT_TRUE(g.down());
  (void)g.succeeded(false, t0 - 1ms, t0);  // 0 was handed over before they failed
  (void)g.failed(msg(1), 1, false, "worker exited", 0ms, t0);
  (void)g.hold(msg(4), 4, t0);
  for (uint64_t expected : {2, 3}) {
    auto p = g.next_probe(t0 + 1s);
    ASSERT_TRUE(p);
    ASSERT_EQ(id_of(*p), expected);
    auto out = g.succeeded(true, t0 + 1s, t0 + 1s);
    EXPECT_EQ(out.change, Change::none) << "1 is not tried yet";
  }
  auto v1 = g.next_probe(t0 + 1s);
  ASSERT_TRUE(v1) << "1 was in flight when the outage began: tried alone before 4 is released";
  ASSERT_EQ(id_of(*v1), 1u);
  auto out = g.failed(std::move(*v1), 1, true, "worker exited", 0ms, t0 + 1s);
  ASSERT_EQ(out.reject.size(), 1u);
  EXPECT_EQ(out.change, Change::went_up);
  ASSERT_EQ(out.retry.size(), 1u);
  EXPECT_EQ(id_of(out.retry[0]), 4u);
}

TEST(DownstreamGate, AKnownCulpritHeldAloneInAnOutageIsRejectedNotHeldForEver) {
  auto g = gate();
  (void)g.failed(msg(7), 7, false, "worker exited", 0ms, t0);
  (void)g.succeeded(false, t0, t0);  // 7 failed alone once: found out
  // Now 7 and 8 fail together (7 crashed the worker again), then 8 goes through alone.
  (void)g.failed(msg(8), 8, false, "worker exited", 0ms, t0 + 1s);
  (void)g.failed(msg(7), 7, false, "worker exited", 0ms, t0 + 1s);
  ASSERT_TRUE(g.down());
  auto p = g.next_probe(t0 + 2s);
  ASSERT_EQ(id_of(*p), 8u);
  (void)g.failed(std::move(*p), 8, true, "worker restarting", 0ms, t0 + 2s);
  auto p7 = g.next_probe(t0 + 3s);
  ASSERT_EQ(id_of(*p7), 7u);
  auto out = g.failed(std::move(*p7), 7, true, "worker exited", 0ms, t0 + 3s);
  ASSERT_EQ(out.reject.size(), 1u) << "its history decides";
  EXPECT_EQ(id_of(out.reject[0]), 7u);
}

TEST(DownstreamGate, APoisonThatLooksLikeAnOutageIsFoundOutAndRejected) {
  // Message 1 crashes the worker every time, taking message 2 down with it: an "outage".
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "worker exited", 0ms, t0);
  (void)g.failed(msg(2), 2, false, "worker exited", 0ms, t0);
  ASSERT_TRUE(g.down());
  auto p1 = g.next_probe(t0 + 1s);
  ASSERT_EQ(id_of(*p1), 1u);
  (void)g.failed(std::move(*p1), 1, true, "worker exited", 0ms, t0 + 1s);
  auto p2 = g.next_probe(t0 + 2s);
  ASSERT_EQ(id_of(*p2), 2u);
  auto up = g.succeeded(true, t0 + 2s, t0 + 2s);  // 2 goes through alone: the worker is fine
  EXPECT_EQ(up.change, Change::none) << "not up until the probe that failed is tried alone";
  EXPECT_TRUE(g.down());
  auto verify = g.next_probe(t0 + 2s);  // at once, no backoff
  ASSERT_TRUE(verify);
  EXPECT_EQ(id_of(*verify), 1u);
  auto out = g.failed(std::move(*verify), 1, true, "worker exited", 0ms, t0 + 2s);
  ASSERT_EQ(out.reject.size(), 1u);
  EXPECT_EQ(id_of(out.reject[0]), 1u);
  EXPECT_EQ(out.change, Change::went_up);
  EXPECT_FALSE(g.down());
}

TEST(DownstreamGate, AProbeThatFailedDuringTheOutageAndWorksNowIsNotRejected) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  (void)g.failed(msg(2), 2, false, "503", 0ms, t0);
  auto p1 = g.next_probe(t0 + 1s);
  (void)g.failed(std::move(*p1), 1, true, "503", 0ms, t0 + 1s);
  auto p2 = g.next_probe(t0 + 2s);
  (void)g.succeeded(true, t0 + 2s, t0 + 2s);
  auto verify = g.next_probe(t0 + 2s);
  ASSERT_EQ(id_of(*verify), 1u);
  auto out = g.succeeded(true, t0 + 2s, t0 + 2s);
  EXPECT_EQ(out.change, Change::went_up);
  EXPECT_TRUE(out.reject.empty());
}

TEST(DownstreamGate, TwoVerifyFailuresInARowMeanDownAgain) {
  auto g = gate();
  for (uint64_t id : {1, 2, 3}) (void)g.failed(msg(id), id, false, "503", 0ms, t0);
  TimePoint now = t0;
  for (int i = 0; i < 2; ++i) {  // probes of 1 and 2 fail
    now += 5s;
    auto p = g.next_probe(now);
    (void)g.failed(std::move(*p), id_of(*p), true, "503", 0ms, now);
  }
  now += 5s;
  auto p3 = g.next_probe(now);
  ASSERT_EQ(id_of(*p3), 3u);
  (void)g.succeeded(true, now, now);
  auto v1 = g.next_probe(now);
  auto first = g.failed(std::move(*v1), id_of(*v1), true, "503", 0ms, now);
  EXPECT_EQ(first.reject.size(), 1u) << "failed alone right after a success";
  auto v2 = g.next_probe(now);
  ASSERT_TRUE(v2);
  auto second = g.failed(std::move(*v2), id_of(*v2), true, "503", 0ms, now);
  EXPECT_TRUE(second.reject.empty()) << "a second failure in a row is the downstream again";
  EXPECT_TRUE(g.down());
  EXPECT_FALSE(g.next_probe(now)) << "back to backoff";
}

TEST(DownstreamGate, AMessageFoundOutBeforeIsRejectedAgainWhenItFailsAlone) {
  auto g = gate();
  (void)g.failed(msg(7), 7, false, "worker exited", 0ms, t0);
  ASSERT_EQ(g.succeeded(false, t0 + 1ms, t0 + 1ms).reject.size(),
            1u);  // failed while 8 went through
  // Redelivered when nothing else is flowing: no message to compare it with, but a history.
  auto again = g.failed(msg(7), 7, false, "worker exited", 0ms, t0 + 2s);
  ASSERT_EQ(again.reject.size(), 1u);
  EXPECT_EQ(id_of(again.reject[0]), 7u);
  EXPECT_FALSE(g.down());
  EXPECT_TRUE(g.quiet());
  // Another message failing alone is still only a suspect.
  auto other = g.failed(msg(8), 8, false, "503", 0ms, t0 + 3s);
  EXPECT_TRUE(other.reject.empty());
}

TEST(DownstreamGate, HeldMessagesGetInProgressAcksOnTheirInterval) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  (void)g.failed(msg(2), 2, false, "503", 0ms, t0);
  EXPECT_TRUE(g.in_progress_due(t0 + 9s).empty());
  auto due = g.in_progress_due(t0 + 10s);
  EXPECT_EQ(due.size(), 2u);
  EXPECT_TRUE(g.in_progress_due(t0 + 11s).empty());
}

TEST(DownstreamGate, TakeAllReturnsEverythingHeld) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  (void)g.failed(msg(2), 2, false, "503", 0ms, t0);
  (void)g.hold(msg(3), 3, t0);
  EXPECT_EQ(g.take_all().size(), 3u);
  EXPECT_EQ(g.held(), 0u);
  EXPECT_FALSE(g.down());
}

TEST(DownstreamGate, HandOverGivesEverythingHeldButWaitsForAProbesVerdict) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  (void)g.failed(msg(2), 2, false, "503", 0ms, t0);
  auto probe = g.next_probe(t0 + 1s);
  ASSERT_TRUE(probe);
  EXPECT_TRUE(g.hand_over().empty()) << "1 is being tried";
  (void)g.failed(std::move(*probe), 1, true, "503", 0ms, t0 + 1s);
  auto handed = g.hand_over();
  ASSERT_EQ(handed.size(), 2u);
  EXPECT_FALSE(g.down());
  EXPECT_TRUE(g.quiet());
  EXPECT_EQ(g.held(), 0u);
}

TEST(DownstreamGate, HoldHandsAMessageBackWhenUp) {
  auto g = gate();
  EXPECT_TRUE(g.hold(msg(1), 1, t0).has_value());
}

}  // namespace
}  // namespace natsfleet::fleet

namespace natsfleet::fleet {
namespace {

TEST(DownstreamGate, AProbeNoLongerOursIsForgottenAndTheNextIsDueAtOnce) {
  auto g = gate();
  (void)g.failed(msg(1), 1, false, "503", 0ms, t0);
  (void)g.failed(msg(2), 2, false, "503", 0ms, t0);
  ASSERT_TRUE(g.down());
  std::optional<nats::InboundMessage> probe;
  for (auto now = t0; !probe; now += 100ms) probe = g.next_probe(now);
  const TimePoint later = t0 + 1h;
  EXPECT_FALSE(g.next_probe(later)) << "one probe out at a time";
  // The broker gave the probe to another replica: it is dropped, not tried.
  (void)g.dropped(1, later);
  EXPECT_EQ(g.held(), 1u);
  auto next = g.next_probe(later);
  ASSERT_TRUE(next) << "the next held message is tried at once";
  EXPECT_TRUE(g.down()) << "nothing showed the downstream works";
}

// Ordered work's partitions hold one message at a time: the held one taken by another replica
// left the gate down with nothing to probe, and the partition's intake held back for good.
TEST(DownstreamGate, TheLastHeldMessageNoLongerOursBringsTheGateUp) {
  auto g = gate();
  auto now = t0;
  (void)g.failed(msg(1), 1, false, "503", 0ms, now);
  while (!g.down()) {  // tried again alone until its failures call an outage
    std::optional<nats::InboundMessage> retry;
    for (; !retry; now += 100ms) retry = g.next_probe(now);
    (void)g.failed(std::move(*retry), 1, true, "503", 0ms, now);
  }
  std::optional<nats::InboundMessage> probe;
  for (; !probe; now += 100ms) probe = g.next_probe(now);
  auto out = g.dropped(1, now);
  EXPECT_EQ(out.change, Change::went_up);
  EXPECT_TRUE(out.emptied);
  EXPECT_FALSE(g.down());
  EXPECT_TRUE(g.quiet());
  EXPECT_EQ(g.held(), 0u);
}

}  // namespace
}  // namespace natsfleet::fleet
