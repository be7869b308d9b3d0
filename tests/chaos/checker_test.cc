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

// Gives every record a fencing token: partition 0, each replica in its own term.
void stamp_tokens(History& h) {
  for (auto& r : h.handlings) {
    r.partition = 0;
    r.epoch = uint64_t(r.replica + 1);
  }
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
  stamp_tokens(h);
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
  stamp_tokens(h);
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

// A record of ordered work, with its fencing token and its window (seen at `at`, absent 5 ms
// before).
HandlingRecord fenced_record(int64_t id, int replica, uint64_t seq, double at, uint64_t epoch) {
  HandlingRecord r{id, replica, 1, seq, at, at - 5};
  r.partition = 0;
  r.epoch = epoch;
  return r;
}

TEST(Checker, ALateWriteOfAnOldMessageIsFencedAndLeavesTheFinalStateRight) {
  auto h = keyed();
  // r2 owns the partition in epoch 1 and is paused while writing message 2; r1 takes over in
  // epoch 2, replays 2 from the checkpoint, handles 3 to 5 and repeats 4; then r2's write of 2
  // lands.
  h.handlings = {fenced_record(0, 1, 1, 100, 1), fenced_record(1, 1, 2, 110, 1),
                 fenced_record(2, 0, 3, 400, 2), fenced_record(3, 0, 4, 405, 2),
                 fenced_record(4, 0, 5, 410, 2), fenced_record(5, 0, 6, 420, 2),
                 fenced_record(4, 0, 5, 430, 2), fenced_record(2, 1, 3, 800, 1)};
  const auto v = check(h, ordered_options());
  EXPECT_EQ(v.fenced, 2u) << report(v);
  EXPECT_EQ(v.fenced_repeats, 1u);
  EXPECT_EQ(v.fenced_late, 1u);
  EXPECT_EQ(v.fenced_stale_epoch, 1u);
  EXPECT_EQ(v.fenced_final_wrong, 0u);
  // The raw view sees the late write as a violation, across a change of owner.
  EXPECT_EQ(v.order_violations, 1u);
  EXPECT_EQ(v.order_violations_same_epoch, 0u);
  EXPECT_EQ(v.bad_fencing_tokens, 0u);
  EXPECT_TRUE(v.pass) << report(v);
  EXPECT_NE(report(v).find("fenced 2 ("), std::string::npos) << report(v);
  EXPECT_NE(report(v).find("fenced_final_wrong 0"), std::string::npos) << report(v);
  EXPECT_EQ(to_json(v)["fenced"], 2);
}

TEST(Checker, AKeyWhoseNewestMessageIsNotItsFinalValueFails) {
  auto h = keyed();
  // Message 4 (key 0, acked at sequence 5) carries sequence 2: a fencing sink ignores it and
  // keeps message 2. In order as observed, so only the fencing view can tell.
  h.handlings = {fenced_record(0, 0, 1, 100, 1), fenced_record(1, 0, 2, 110, 1),
                 fenced_record(2, 0, 3, 120, 1), fenced_record(3, 0, 4, 130, 1),
                 fenced_record(4, 0, 2, 140, 1), fenced_record(5, 0, 6, 150, 1)};
  auto v = check(h, ordered_options());
  EXPECT_EQ(v.order_violations, 0u) << report(v);
  EXPECT_EQ(v.fenced_final_wrong, 1u) << report(v);
  ASSERT_EQ(v.fenced_final_wrong_examples.size(), 1u);
  EXPECT_NE(v.fenced_final_wrong_examples[0].find("key 0: holds message 2"), std::string::npos)
      << v.fenced_final_wrong_examples[0];
  EXPECT_FALSE(v.pass);
  // Where the broker lost acknowledged messages, a renumbered record is the broker's doing.
  h.publishes.push_back(PublishRecord{6, 60, true, 7, 65, 1, ""});
  h.broker_lost = {6};
  v = check(h, ordered_options());
  EXPECT_EQ(v.fenced_final_wrong, 0u) << report(v);
  EXPECT_EQ(v.fenced_final_wrong_rewritten, 1u) << report(v);
  EXPECT_TRUE(v.pass) << report(v);
}

TEST(Checker, AnOlderMessageAfterANewerOneWithinOneOwnersTermFails) {
  auto h = keyed();
  h.handlings = {fenced_record(0, 0, 1, 100, 1), fenced_record(1, 0, 2, 110, 1),
                 fenced_record(4, 0, 5, 120, 1), fenced_record(3, 0, 4, 130, 1),
                 fenced_record(2, 0, 3, 140, 1), fenced_record(5, 0, 6, 150, 1)};
  const auto v = check(h, ordered_options());
  EXPECT_EQ(v.order_violations, 1u) << report(v);
  EXPECT_EQ(v.order_violations_same_epoch, 1u) << report(v);
  EXPECT_EQ(v.fenced_late, 1u);
  EXPECT_EQ(v.fenced_final_wrong, 0u);
  EXPECT_FALSE(v.pass);
}

TEST(Checker, RecordsOfTwoReplicasAreOrderedByTheirWindows) {
  auto h = keyed();
  // Key 0: message 4 on r1 seen at 300; message 2 on r2 seen at 303, absent at 301: written after
  // 4 was, a violation although only 3 ms apart.
  h.handlings = {fenced_record(0, 0, 1, 100, 1), fenced_record(1, 0, 2, 110, 1),
                 fenced_record(3, 0, 4, 290, 1), fenced_record(4, 0, 5, 300, 1),
                 fenced_record(5, 0, 6, 310, 1), fenced_record(2, 1, 3, 303, 1)};
  h.handlings.back().absent_ms = 301;
  auto v = check(h, ordered_options());
  EXPECT_EQ(v.order_violations, 1u) << report(v);
  EXPECT_EQ(v.order_undecided, 0u) << report(v);
  // Absent only at 299: it may have been written before 4. Not judged, but counted.
  h.handlings.back().absent_ms = 299;
  v = check(h, ordered_options());
  EXPECT_EQ(v.order_violations, 0u) << report(v);
  EXPECT_EQ(v.order_undecided, 1u) << report(v);
}

TEST(Checker, ARecordWithoutAFencingTokenFails) {
  auto h = keyed();
  for (int64_t id = 0; id < 6; ++id)
    h.handlings.push_back(fenced_record(id, 0, uint64_t(id + 1), 100 + 10.0 * double(id), 1));
  EXPECT_TRUE(check(h, ordered_options()).pass);
  h.handlings[3].epoch.reset();
  const auto v = check(h, ordered_options());
  EXPECT_EQ(v.bad_fencing_tokens, 1u);
  EXPECT_FALSE(v.pass);
}

}  // namespace
}  // namespace natsfleet::chaos
