// Which deliveries of per-key ordered work are repeats to ack without the handler: chaos seed
// 2601 had a message handled again after a later one of its key, once as a first delivery from a
// consumer leader resumed after a pause, once as a redelivery after a step-down.
#include "fleet/handled_messages.h"

#include <gtest/gtest.h>

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
  handled.remember(delivery(58120, 1'000, 1));
  handled.remember(delivery(59120, 2'000, 1));
  // A leader paused before it sent 58120 answers a pull with it once resumed: delivery 1.
  EXPECT_TRUE(is_repeat(handled, 59120, delivery(58120, 1'000, 1)));
}

TEST(HandledMessages, AHandledMessageRedeliveredIsARepeatWhateverTheFloor) {
  HandledMessages handled;
  handled.remember(delivery(63461, 5'000, 1));
  // Redelivered after a step-down, handled_to not (yet) past it.
  EXPECT_TRUE(is_repeat(handled, 0, delivery(63461, 5'000, 2)));
}

TEST(HandledMessages, ARedeliveryOlderThanTheNewestHandledIsARepeat) {
  HandledMessages handled;
  EXPECT_TRUE(is_repeat(handled, 100, delivery(90, 7'000, 2)));
  EXPECT_FALSE(is_repeat(handled, 100, delivery(101, 7'000, 2)));
}

TEST(HandledMessages, ALateFirstDeliveryNotHandledHereIsHandled) {
  HandledMessages handled;
  handled.remember(delivery(100, 9'000, 1));
  EXPECT_FALSE(is_repeat(handled, 100, delivery(90, 8'000, 1)));
}

TEST(HandledMessages, AnotherMessageAtASequenceHandedOutBeforeIsNotARepeat) {
  // The broker lost 74231 in a failover and stored the next message there, later.
  HandledMessages handled;
  handled.remember(delivery(74231, 10'000, 1));
  EXPECT_FALSE(is_repeat(handled, 74231, delivery(74231, 10'500, 1)));
}

TEST(HandledMessages, TheOldestAreForgottenBeyondTheBound) {
  HandledMessages handled;
  for (uint64_t seq = 1; seq <= HandledMessages::kRemembered + 1; ++seq)
    handled.remember(delivery(seq, static_cast<int64_t>(seq) * 10, 1));
  EXPECT_FALSE(handled.contains(delivery(1, 10, 1)));
  EXPECT_TRUE(handled.contains(delivery(2, 20, 1)));
  EXPECT_TRUE(
      handled.contains(delivery(HandledMessages::kRemembered + 1,
                                static_cast<int64_t>(HandledMessages::kRemembered + 1) * 10, 1)));
}

TEST(HandledMessages, AMessageWithoutItsStreamFactsIsNeverARepeat) {
  HandledMessages handled;
  handled.remember(Message("s", "x", {}));
  handled.remember(delivery(5, 0, 1));
  EXPECT_FALSE(handled.contains(Message("s", "x", {})));
  EXPECT_FALSE(is_repeat(handled, 0, delivery(5, 0, 1)));
}

}  // namespace
}  // namespace natsfleet::fleet
