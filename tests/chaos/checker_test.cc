// The checker on histories made by hand: it must find a lost message, blame duplicates on the
// fault around them, and measure a stall only while some replica was ready.
#include "chaos/checker.h"

#include <gtest/gtest.h>

namespace natsfleet::chaos {
namespace {

History three_messages() {
  History h;
  h.replicas = 2;
  h.end_ms = 10'000;
  for (int64_t id = 0; id < 3; ++id)
    h.publishes.push_back(PublishRecord{id, 100.0 * double(id), true, uint64_t(id + 1),
                                        100.0 * double(id) + 5, 1, ""});
  h.readiness = {{0, 0, true}, {1, 0, true}};
  return h;
}

CheckOptions options() {
  CheckOptions o;
  o.stall_bound_ms = 1'000;
  o.blame_window_ms = 500;
  return o;
}

TEST(Checker, EveryAckedMessageHandledPasses) {
  auto h = three_messages();
  for (int64_t id = 0; id < 3; ++id) h.handlings.push_back({id, 0, 1, uint64_t(id + 1), 300});
  const auto v = check(h, options());
  EXPECT_EQ(v.acked, 3u);
  EXPECT_EQ(v.handled, 3u);
  EXPECT_EQ(v.lost, 0u);
  EXPECT_EQ(v.duplicates, 0u);
  EXPECT_TRUE(v.pass);
}

TEST(Checker, AckedButNeverHandledIsLost) {
  auto h = three_messages();
  h.handlings.push_back({0, 0, 1, 1, 300});
  h.handlings.push_back({2, 1, 1, 3, 300});
  const auto v = check(h, options());
  EXPECT_EQ(v.lost, 1u);
  ASSERT_EQ(v.lost_ids.size(), 1u);
  EXPECT_EQ(v.lost_ids[0], 1);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(report(v).find("lost 1 (ids 1)"), std::string::npos) << report(v);
}

TEST(Checker, DeadLetteredIsNotLostAndUnackedIsNotOwed) {
  auto h = three_messages();
  h.publishes[2].acked = false;
  h.handlings.push_back({0, 0, 1, 1, 300});
  h.dead_lettered = {1};
  const auto v = check(h, options());
  EXPECT_EQ(v.lost, 0u);
  EXPECT_EQ(v.dead_lettered, 1u);
  EXPECT_EQ(v.acked, 2u);
  EXPECT_TRUE(v.pass);
}

TEST(Checker, DuplicatesAreCountedAndBlamedOnTheFaultAroundThem) {
  auto h = three_messages();
  h.faults.push_back(FaultRecord{"replica-pause", "r1", 1'000, 2'000});
  h.handlings.push_back({0, 0, 1, 1, 300});
  h.handlings.push_back({1, 0, 1, 2, 300});
  h.handlings.push_back({2, 0, 1, 3, 300});
  h.handlings.push_back({0, 1, 2, 1, 2'400});  // inside the blame window after the pause
  h.handlings.push_back({1, 1, 2, 2, 9'000});  // long after: no fault to blame
  const auto v = check(h, options());
  EXPECT_EQ(v.duplicates, 2u);
  EXPECT_EQ(v.duplicated_messages, 2u);
  EXPECT_EQ(v.duplicates_by_fault.at("replica-pause"), 1u);
  EXPECT_EQ(v.duplicates_by_fault.at("none"), 1u);
  EXPECT_EQ(v.faults_by_kind.at("replica-pause"), 1u);
  EXPECT_TRUE(v.pass);  // duplicates are allowed; they are reported
}

TEST(Checker, OverlappingFaultsBlameTheOneThatJustEnded) {
  auto h = three_messages();
  h.faults.push_back(FaultRecord{"node-kill", "n1", 500, 4'000});
  h.faults.push_back(FaultRecord{"replica-pause", "r1", 1'000, 2'000});
  for (int64_t id = 0; id < 3; ++id) h.handlings.push_back({id, 0, 1, uint64_t(id + 1), 300});
  h.handlings.push_back({0, 1, 2, 1, 2'100});
  const auto v = check(h, options());
  EXPECT_EQ(v.duplicates_by_fault.size(), 1u);
  EXPECT_EQ(v.duplicates_by_fault.at("replica-pause"), 1u);
}

TEST(Checker, StallCountsOnlyTimeWhenSomeReplicaWasReady) {
  auto h = three_messages();
  // Both replicas down from 1 s to 6 s: message 0 waits 7.995 s, of which 2.995 s ready.
  h.readiness = {
      {0, 0, true}, {1, 0, true}, {0, 1'000, false}, {1, 1'000, false}, {1, 6'000, true}};
  h.handlings.push_back({0, 1, 1, 1, 8'000});
  h.handlings.push_back({1, 1, 1, 2, 300});
  h.handlings.push_back({2, 1, 1, 3, 300});
  auto o = options();
  o.stall_bound_ms = 3'500;
  auto v = check(h, o);
  EXPECT_NEAR(v.longest_stall_ms, 2'995, 1);
  EXPECT_EQ(v.longest_stall_id, 0);
  EXPECT_TRUE(v.pass);
  o.stall_bound_ms = 2'000;
  v = check(h, o);
  EXPECT_EQ(v.stalls_over_bound, 1u);
  EXPECT_FALSE(v.pass);
}

TEST(Checker, SelfTestDropsOneRecordAndReportsItLost) {
  auto h = three_messages();
  for (int64_t id = 0; id < 3; ++id) h.handlings.push_back({id, 0, 1, uint64_t(id + 1), 300});
  h.handlings.push_back({0, 1, 2, 1, 400});  // handled twice: not a candidate to drop
  auto o = options();
  o.drop_one_record = true;
  const auto v = check(h, o);
  EXPECT_EQ(v.lost, 1u);
  EXPECT_EQ(v.self_test_dropped, 1);
  EXPECT_FALSE(v.pass);
}

TEST(Checker, WhatTheBrokerLostOrStoredTwiceIsReportedApart) {
  auto h = three_messages();
  h.handlings.push_back({0, 0, 1, 1, 300});
  h.handlings.push_back({0, 1, 1, 2, 400});  // the same publish at the next sequence
  h.handlings.push_back({2, 0, 1, 3, 300});
  h.broker_lost = {1};  // its ack's sequence holds another message now
  const auto v = check(h, options());
  EXPECT_EQ(v.lost, 0u);
  EXPECT_EQ(v.broker_lost, 1u);
  EXPECT_EQ(v.duplicates, 1u);
  EXPECT_EQ(v.stored_twice, 1u);
  EXPECT_TRUE(v.pass);
  EXPECT_NE(report(v).find("lost by the broker 1"), std::string::npos) << report(v);
}

TEST(Checker, AnotherMessageDeliveredAtTheAckedSequenceIsLostByTheBroker) {
  auto h = three_messages();
  h.handlings.push_back({0, 0, 1, 1, 300});
  h.handlings.push_back({2, 0, 1, 2, 300});  // the consumer gave message 2 at message 1's sequence
  h.handlings.push_back({2, 0, 1, 3, 300});
  const auto v = check(h, options());
  EXPECT_EQ(v.lost, 0u);
  EXPECT_EQ(v.broker_lost, 1u);
  EXPECT_TRUE(v.pass);
}

TEST(Checker, RecordsOfUnpublishedIdsFail) {
  auto h = three_messages();
  for (int64_t id = 0; id < 3; ++id) h.handlings.push_back({id, 0, 1, uint64_t(id + 1), 300});
  h.handlings.push_back({77, 0, 1, 9, 300});
  const auto v = check(h, options());
  EXPECT_EQ(v.unknown, 1u);
  EXPECT_FALSE(v.pass);
}

TEST(Checker, PerSecondBinsFirstHandlingsAndDuplicates) {
  auto h = three_messages();
  h.end_ms = 2'500;
  h.handlings = {{0, 0, 1, 1, 300}, {1, 0, 1, 2, 1'300}, {1, 1, 2, 2, 1'700}, {2, 0, 1, 3, 2'100}};
  const auto seconds = per_second(h);
  ASSERT_EQ(seconds.size(), 3u);
  EXPECT_EQ(seconds[0].acked, 3u);
  EXPECT_EQ(seconds[0].handled, 1u);
  EXPECT_EQ(seconds[1].handled, 1u);
  EXPECT_EQ(seconds[1].duplicates, 1u);
  EXPECT_EQ(seconds[2].handled, 1u);
}

// Per-key order: ids 0..5 with keys id % 2, so key 0 is 0, 2, 4 (seqs 1, 3, 5).
History keyed() {
  History h;
  h.replicas = 2;
  h.keys = 2;
  h.end_ms = 10'000;
  for (int64_t id = 0; id < 6; ++id)
    h.publishes.push_back(
        PublishRecord{id, 10.0 * double(id), true, uint64_t(id + 1), 10.0 * double(id) + 5, 1, ""});
  h.readiness = {{0, 0, true}, {1, 0, true}};
  return h;
}

CheckOptions ordered_options() {
  CheckOptions o = options();
  o.order_tolerance_ms = 100;
  return o;
}

TEST(Checker, KeysInOrderAcrossReplicasPass) {
  auto h = keyed();
  h.handlings = {{0, 0, 1, 1, 200}, {1, 1, 1, 2, 200}, {2, 1, 1, 3, 400},
                 {3, 0, 1, 4, 400}, {4, 0, 1, 5, 600}, {5, 1, 1, 6, 600}};
  // A repeat of a key's latest message (a crash before its ack) is at-least-once.
  h.handlings.push_back({4, 1, 2, 5, 900});
  const auto v = check(h, ordered_options());
  EXPECT_EQ(v.order_violations, 0u) << report(v);
  EXPECT_TRUE(v.pass);
  EXPECT_NE(report(v).find("per-key order violations 0"), std::string::npos);
}

TEST(Checker, AnOlderMessageOfAKeyAfterANewerOneIsAViolation) {
  auto h = keyed();
  // Key 0: message 4 on r1 at 300 ms, then message 2 on r2 at 800 ms.
  h.handlings = {{0, 0, 1, 1, 200}, {4, 0, 1, 5, 300}, {1, 1, 1, 2, 300},
                 {3, 1, 1, 4, 400}, {5, 1, 1, 6, 500}, {2, 1, 2, 3, 800}};
  const auto v = check(h, ordered_options());
  EXPECT_EQ(v.order_violations, 1u);
  EXPECT_FALSE(v.pass);
  ASSERT_FALSE(v.order_violation_examples.empty());
  EXPECT_NE(v.order_violation_examples[0].find("message 2 (seq 3, r2) handled after 4"),
            std::string::npos)
      << v.order_violation_examples[0];
}

TEST(Checker, AViolationOnAStreamHistoryTheBrokerRewroteIsCountedApart) {
  auto h = keyed();
  // Key 0: 4 handled, then 2 delivered again under sequence 2 (its publish ack said 3): a
  // failover renumbered the stream under the consumer.
  h.handlings = {{0, 0, 1, 1, 200}, {2, 0, 1, 3, 250}, {4, 0, 1, 5, 300}, {1, 1, 1, 2, 300},
                 {3, 1, 1, 4, 400}, {5, 1, 1, 6, 500}, {2, 1, 2, 2, 800}};
  const auto v = check(h, ordered_options());
  EXPECT_EQ(v.order_violations, 0u) << report(v);
  EXPECT_EQ(v.order_violations_rewritten, 1u) << report(v);
  EXPECT_TRUE(v.pass) << report(v);
  EXPECT_NE(report(v).find("on a stream history the broker rewrote 1"), std::string::npos)
      << report(v);
}

TEST(Checker, OrderWithinOneFileIsExactAcrossFilesWithinTheTolerance) {
  auto h = keyed();
  // Same poll, two files: 2 seen at 300 on r2 just after 4 on r1 is within the tolerance...
  h.handlings = {{0, 0, 1, 1, 200}, {4, 0, 1, 5, 300}, {2, 1, 1, 3, 300},
                 {1, 1, 1, 2, 300}, {3, 1, 1, 4, 300}, {5, 1, 1, 6, 300}};
  EXPECT_EQ(check(h, ordered_options()).order_violations, 0u);
  // ...but in one file the order is the handling order.
  h.handlings = {{0, 0, 1, 1, 200}, {4, 0, 1, 5, 300}, {2, 0, 1, 3, 300},
                 {1, 1, 1, 2, 300}, {3, 1, 1, 4, 300}, {5, 1, 1, 6, 300}};
  EXPECT_EQ(check(h, ordered_options()).order_violations, 1u);
}

TEST(Checker, SelfTestSwapIsFound) {
  auto h = keyed();
  h.handlings = {{0, 0, 1, 1, 200}, {1, 1, 1, 2, 200}, {2, 1, 1, 3, 400},
                 {3, 0, 1, 4, 400}, {4, 0, 1, 5, 600}, {5, 1, 1, 6, 600}};
  auto o = ordered_options();
  o.swap_one_key = true;
  EXPECT_GT(check(h, o).order_violations, 0u);
}

}  // namespace
}  // namespace natsfleet::chaos
