// Which deliveries of per-key ordered work are repeats to ack without the handler: chaos seed
// 2601 had a message handled again after a later one of its key, once as a first delivery from a
// consumer leader resumed after a pause, once as a redelivery after a step-down, and (on its
// replay) three times on another replica than the one that had handled it.
#include "fleet/handled_messages.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

namespace natsfleet::fleet {
namespace {

Message delivery(uint64_t seq, int64_t stored_ns, uint64_t delivered) {
  Delivery d;
  d.stream = "CHAOS";
  d.consumer = "chaos-p12";
  d.stream_seq = seq;
  d.delivered = delivered;
  d.timestamp_ns = stored_ns;
  return Message("chaos.jobs.k461.12", "x", {}, d);
}

TEST(HandledMessages, AHandledMessageDeliveredAgainAsIfNewIsARepeat) {
  HandledMessages handled;
  handled.remember(delivery(58120, 1'000, 1), Handler::here);
  handled.remember(delivery(59120, 2'000, 1), Handler::here);
  // A leader paused before it sent 58120 answers a pull with it once resumed: delivery 1.
  EXPECT_EQ(is_repeat(handled, 59120, delivery(58120, 1'000, 1)), Repeat::handled_here);
}

TEST(HandledMessages, AHandledMessageRedeliveredIsARepeatWhateverTheFloor) {
  HandledMessages handled;
  handled.remember(delivery(63461, 5'000, 1), Handler::here);
  // Redelivered after a step-down, handled_to not (yet) past it.
  EXPECT_EQ(is_repeat(handled, 0, delivery(63461, 5'000, 2)), Repeat::handled_here);
}

TEST(HandledMessages, ARedeliveryOlderThanTheNewestHandledIsARepeat) {
  HandledMessages handled;
  EXPECT_EQ(is_repeat(handled, 100, delivery(90, 7'000, 2)), Repeat::settled_before);
  EXPECT_EQ(is_repeat(handled, 100, delivery(101, 7'000, 2)), Repeat::no);
}

TEST(HandledMessages, ALateFirstDeliveryNotHandledHereIsHandled) {
  HandledMessages handled;
  handled.remember(delivery(100, 9'000, 1), Handler::here);
  EXPECT_EQ(is_repeat(handled, 100, delivery(90, 8'000, 1)), Repeat::no);
}

TEST(HandledMessages, AnotherMessageAtASequenceHandedOutBeforeIsNotARepeat) {
  // The broker lost 74231 in a failover and stored the next message there, later.
  HandledMessages handled;
  handled.remember(delivery(74231, 10'000, 1), Handler::here);
  EXPECT_EQ(is_repeat(handled, 74231, delivery(74231, 10'500, 1)), Repeat::no);
}

TEST(HandledMessages, TheSameMessageUnderAnotherSequenceIsARepeat) {
  // Chaos seed 2604: a server whose copy of the stream lacked an earlier message numbered the
  // ones after it one lower; its consumer delivered a message handled at 47996 as 47994.
  HandledMessages handled;
  handled.remember(delivery(47996, 4'000, 1), Handler::peer);
  EXPECT_EQ(is_repeat(handled, 0, delivery(47994, 4'000, 1)), Repeat::handled_elsewhere);
}

TEST(HandledMessages, TheOldestAreForgottenBeyondTheBound) {
  HandledMessages handled;
  for (uint64_t seq = 1; seq <= HandledMessages::kRemembered + 1; ++seq)
    handled.remember(delivery(seq, static_cast<int64_t>(seq) * 10, 1), Handler::here);
  EXPECT_FALSE(handled.find(delivery(1, 10, 1)));
  EXPECT_TRUE(handled.find(delivery(2, 20, 1)));
  EXPECT_TRUE(
      handled.find(delivery(HandledMessages::kRemembered + 1,
                            static_cast<int64_t>(HandledMessages::kRemembered + 1) * 10, 1)));
}

TEST(HandledMessages, AMessageWithoutItsStreamFactsIsNeverARepeat) {
  HandledMessages handled;
  handled.remember(Message("s", "x", {}), Handler::here);
  handled.remember(delivery(5, 0, 1), Handler::here);
  EXPECT_FALSE(handled.find(Message("s", "x", {})));
  EXPECT_EQ(is_repeat(handled, 0, delivery(5, 0, 1)), Repeat::no);
}

TEST(HandledMessages, AMessageAnotherReplicaHandledIsARepeatHereWhateverItsDeliveryCount) {
  HandledMessages handled;
  // r1 handled 41207 and told the others; the broker lost r1's ack and gave 41207 to r2.
  HandledMessages::Key told;
  int partition = -1;
  ASSERT_TRUE(parse_handled_notice(handled_notice(12, {41207, 3'000}), partition, told));
  EXPECT_EQ(partition, 12);
  handled.remember(told, Handler::peer);
  EXPECT_EQ(is_repeat(handled, 0, delivery(41207, 3'000, 2)), Repeat::handled_elsewhere);
  EXPECT_EQ(is_repeat(handled, 0, delivery(41207, 3'000, 1)), Repeat::handled_elsewhere);
  // Another message the broker put at that sequence later is not the one r1 handled.
  EXPECT_EQ(is_repeat(handled, 0, delivery(41207, 3'500, 1)), Repeat::no);
}

TEST(HandledMessages, HandledHereStaysHandledHereWhenItsOwnNoticeComesBack) {
  HandledMessages handled;
  handled.remember(delivery(7, 70, 1), Handler::here);
  handled.remember(HandledMessages::Key{7, 70}, Handler::peer);
  EXPECT_EQ(handled.find(delivery(7, 70, 1)), Handler::here);
}

TEST(HandledMessages, NoticesThatDoNotParseAreRefused) {
  int partition = 0;
  HandledMessages::Key key;
  for (const char* bad : {"", "3", "3 5", "3 5 x", "-1 5 6", "3 0 6", "3 5 0", "3 5 6 7", "a b c"})
    EXPECT_FALSE(parse_handled_notice(bad, partition, key)) << bad;
  EXPECT_TRUE(parse_handled_notice("0 1 1", partition, key));
  EXPECT_EQ(key, (HandledMessages::Key{1, 1}));
}

TEST(HandOffs, EachHandOffOfAMessageIsCountedAndTheOldestAreForgotten) {
  HandOffs hand_offs;
  hand_offs.add({9, 90});
  hand_offs.add({9, 90});
  EXPECT_EQ(hand_offs.count({9, 90}), 2u);
  EXPECT_EQ(hand_offs.count({9, 91}), 0u) << "another message at that sequence";
  for (uint64_t s = 100; s < 100 + HandOffs::kRemembered; ++s)
    hand_offs.add({s, static_cast<int64_t>(s * 10)});
  EXPECT_EQ(hand_offs.count({9, 90}), 0u);
  EXPECT_EQ(hand_offs.count({100, 1000}), 1u);
}

TEST(HandOffs, ANoticeNamesItsReplicaAndIsNeverReadAsHandled) {
  const std::string notice = hand_off_notice(77, 3, {12, 120});
  uint64_t replica = 0;
  int partition = -1;
  HandledMessages::Key key;
  ASSERT_TRUE(parse_hand_off_notice(notice, replica, partition, key));
  EXPECT_EQ(replica, 77u);
  EXPECT_EQ(partition, 3);
  EXPECT_EQ(key, (HandledMessages::Key{12, 120}));
  EXPECT_FALSE(parse_handled_notice(notice, partition, key)) << "a handed message is not handled";
  for (const char* bad : {"", "77", "77 3 12", "x 3 12 120", "77 3 0 120"})
    EXPECT_FALSE(parse_hand_off_notice(bad, replica, partition, key)) << bad;
}

// A partition whose stream holds `stored` (sequence -> stored time) answers next_stored.
NextStored partition_holding(std::map<uint64_t, int64_t> stored, int* lookups = nullptr) {
  return [stored = std::move(stored), lookups](uint64_t after) -> Result<std::optional<Message>> {
    if (lookups) ++*lookups;
    auto it = stored.upper_bound(after);
    if (it == stored.end()) return std::optional<Message>();
    return std::optional<Message>(delivery(it->first, it->second, 1));
  };
}

// passed_over over one partition's memory, as OrderedWork calls it.
Result<std::vector<Message>> scan(const HandledMessages& handled, uint64_t after, uint64_t seq,
                                  const NextStored& next_stored, int limit = 100) {
  return passed_over(
      std::max(after, handled.oldest()), seq, next_stored,
      [&](const Message& m) { return handled.find(m).has_value(); }, limit);
}

std::vector<uint64_t> seqs(const std::vector<Message>& messages) {
  std::vector<uint64_t> out;
  for (const auto& m : messages) out.push_back(m.stream_seq());
  return out;
}

TEST(PassedOver, AMessageTheConsumerNeverDeliveredIsFound) {
  // Chaos seed 2604: the partition's consumer delivered 27819, then 27830; 27822 was stored in
  // the partition between them.
  HandledMessages handled;
  handled.remember(delivery(27806, 100, 1), Handler::peer);
  handled.remember(delivery(27819, 200, 1), Handler::here);
  auto missed = scan(handled, 27806, 27830,
                     partition_holding({{27806, 100}, {27819, 200}, {27822, 300}, {27830, 400}}));
  ASSERT_TRUE(missed) << missed.error().describe();
  EXPECT_EQ(seqs(*missed), (std::vector<uint64_t>{27822}));
}

TEST(PassedOver, NothingIsFoundWhenEveryMessageBetweenWasHandledHereOrElsewhere) {
  HandledMessages handled;
  handled.remember(delivery(10, 100, 1), Handler::here);
  handled.remember(delivery(14, 140, 1), Handler::peer);
  handled.remember(delivery(17, 170, 1), Handler::here);
  int lookups = 0;
  auto missed = scan(handled, 10, 20,
                     partition_holding({{10, 100}, {14, 140}, {17, 170}, {20, 200}}, &lookups));
  ASSERT_TRUE(missed);
  EXPECT_TRUE(missed->empty());
  EXPECT_EQ(lookups, 3) << "14, 17, then 20: the delivery at hand ends the scan";
}

TEST(PassedOver, AMessageStoredAgainAtAHandledSequenceIsFound) {
  // The stream renumbered: 14 now holds another message (stored later) than the one handled.
  HandledMessages handled;
  handled.remember(delivery(10, 100, 1), Handler::here);
  handled.remember(delivery(14, 140, 1), Handler::here);
  auto missed = scan(handled, 10, 20, partition_holding({{14, 150}, {20, 200}}));
  ASSERT_TRUE(missed);
  EXPECT_EQ(seqs(*missed), (std::vector<uint64_t>{14}));
}

TEST(PassedOver, NothingOlderThanWhatIsRememberedIsJudged) {
  HandledMessages handled;
  handled.remember(delivery(50, 500, 1), Handler::here);
  // 30 and 40 are older than anything remembered: handled long ago, or not, nobody can say.
  auto missed =
      scan(handled, 20, 60, partition_holding({{30, 300}, {40, 400}, {55, 550}, {60, 600}}));
  ASSERT_TRUE(missed);
  EXPECT_EQ(seqs(*missed), (std::vector<uint64_t>{55}));
}

TEST(PassedOver, TheScanIsBoundedAndAFailedLookupIsAnError) {
  HandledMessages handled;
  handled.remember(delivery(1, 10, 1), Handler::here);
  std::map<uint64_t, int64_t> many;
  for (uint64_t seq = 2; seq < 100; ++seq) many[seq] = static_cast<int64_t>(seq) * 10;
  int lookups = 0;
  auto missed = scan(handled, 1, 100, partition_holding(many, &lookups), 5);
  ASSERT_TRUE(missed);
  EXPECT_EQ(lookups, 5);
  EXPECT_EQ(missed->size(), 5u);
  auto failing = [](uint64_t) -> Result<std::optional<Message>> {
    return Error{make_error_code(Errc::timeout), "no answer"};
  };
  EXPECT_FALSE(scan(handled, 1, 100, failing, 5));
}

TEST(HandledMessages, TheNewestHandledBeforeAMomentIsKnown) {
  HandledMessages handled;
  const auto t0 = HandledMessages::Clock::time_point(std::chrono::seconds(100));
  handled.remember(delivery(5, 50, 1), Handler::here, t0);
  handled.remember(delivery(9, 90, 1), Handler::peer, t0 + std::chrono::seconds(1));
  handled.remember(delivery(7, 70, 1), Handler::here, t0 + std::chrono::seconds(2));
  EXPECT_EQ(handled.newest_before(t0 - std::chrono::seconds(1)), 0u);
  EXPECT_EQ(handled.newest_before(t0), 5u);
  EXPECT_EQ(handled.newest_before(t0 + std::chrono::seconds(5)), 9u);
  EXPECT_EQ(handled.oldest(), 5u);
  EXPECT_EQ(handled.oldest_since(t0 + std::chrono::seconds(1)), 7u);
  EXPECT_EQ(handled.oldest_since(t0 + std::chrono::seconds(3)), 0u);
  EXPECT_EQ(handled.newest_below(5), 0u);
  EXPECT_EQ(handled.newest_below(9), 7u);
  EXPECT_EQ(handled.newest_below(100), 9u);
}

TEST(HandledQuestion, CatchingUpAskedAndReadBack) {
  EXPECT_EQ(catch_up_question(5), "5 all");
  EXPECT_TRUE(is_catch_up_question("5 all"));
  EXPECT_FALSE(is_catch_up_question("5 17"));
  const std::string answer =
      catch_up_answer(5, {{17, 1700000000000000001}, {19, 1700000000000000002}});
  EXPECT_EQ(answer, "5 17 1700000000000000001 19 1700000000000000002");
  int partition = -1;
  std::vector<HandledMessages::Key> keys;
  ASSERT_TRUE(parse_catch_up_answer(answer, partition, keys));
  EXPECT_EQ(partition, 5);
  EXPECT_EQ(keys, (std::vector<HandledMessages::Key>{{17, 1700000000000000001},
                                                     {19, 1700000000000000002}}));
  ASSERT_TRUE(parse_catch_up_answer("5", partition, keys)) << "a peer that remembers nothing";
  EXPECT_TRUE(keys.empty());
  EXPECT_FALSE(parse_catch_up_answer("5 17", partition, keys)) << "half a pair";
  EXPECT_FALSE(parse_catch_up_answer("5 0 12", partition, keys));
  EXPECT_FALSE(parse_catch_up_answer("-1", partition, keys));
}

TEST(HandledQuestion, AskedAndReadBack) {
  EXPECT_EQ(handled_question(3, {1700000000000000001, 42}), "3 1700000000000000001 42");
  EXPECT_EQ(parse_number_list("3 1700000000000000001 42"),
            (std::vector<int64_t>{3, 1700000000000000001, 42}));
  EXPECT_EQ(parse_number_list("7"), (std::vector<int64_t>{7}));
  EXPECT_EQ(parse_number_list(""), (std::vector<int64_t>{})) << "a peer that knows none of them";
  EXPECT_FALSE(parse_number_list("3  4"));
  EXPECT_FALSE(parse_number_list("3 x"));
  EXPECT_FALSE(parse_number_list("-"));
}

// A message of key `key` at `seq`, stored at `stored_ns`.
Message of_key(const std::string& key, uint64_t seq, int64_t stored_ns) {
  Delivery d;
  d.stream = "CHAOS";
  d.consumer = "chaos-p12";
  d.stream_seq = seq;
  d.delivered = 1;
  d.timestamp_ns = stored_ns;
  return Message("chaos.jobs." + key + ".12", "x", {}, d);
}

TEST(PassedOver, UnknownMessagesFollowedByAHandledOneOfTheirKeyAreTakenAsMovedOn) {
  // Walked: a:11 and b:12 unknown, a:13 handled, c:14 unknown, then c:15 handled; b never again.
  const std::map<uint64_t, Message> stored{{11, of_key("a", 11, 110)}, {12, of_key("b", 12, 120)},
                                           {13, of_key("a", 13, 130)}, {14, of_key("c", 14, 140)},
                                           {15, of_key("c", 15, 150)}, {20, of_key("d", 20, 200)}};
  NextStored walk = [&](uint64_t after) -> Result<std::optional<Message>> {
    auto it = stored.upper_bound(after);
    if (it == stored.end()) return std::optional<Message>();
    return std::optional<Message>(it->second);
  };
  KeyProgress progress(
      [](const Message& m) { return m.stream_seq() == 13 || m.stream_seq() == 15; });
  auto missed = passed_over(10, 20, walk, std::ref(progress), 100);
  ASSERT_TRUE(missed);
  EXPECT_EQ(seqs(*missed), (std::vector<uint64_t>{11, 12, 14}));
  EXPECT_EQ(seqs(progress.take_moved_on(*missed)), (std::vector<uint64_t>{11, 14}));
  EXPECT_EQ(seqs(*missed), (std::vector<uint64_t>{12})) << "b has not moved on";
}

}  // namespace
}  // namespace natsfleet::fleet
