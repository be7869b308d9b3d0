#include "fleet/ordered/key_lanes.h"

#include <gtest/gtest.h>

namespace natsfleet::fleet {
namespace {

KeyLanes::Item item(uint64_t seq) {
  Delivery d;
  d.stream_seq = seq;
  return KeyLanes::Item{.message = Message("orders.k.0", std::to_string(seq), {}, d)};
}

TEST(KeyLanes, AKeysMessagesWaitInStreamOrderBehindTheFirst) {
  KeyLanes lanes(0);
  EXPECT_TRUE(lanes.push("a", item(1))) << "a new lane is ready";
  EXPECT_FALSE(lanes.push("a", item(3))) << "a lane with a message waiting is not ready again";
  EXPECT_TRUE(lanes.push("b", item(2)));
  EXPECT_EQ(lanes.front("a").message.stream_seq(), uint64_t{1});
  EXPECT_TRUE(lanes.pop("a")) << "a's next message waits";
  EXPECT_EQ(lanes.front("a").message.stream_seq(), uint64_t{3});
  EXPECT_FALSE(lanes.pop("a"));
  EXPECT_FALSE(lanes.has("a"));
}

TEST(KeyLanes, TheCheckpointIsBelowTheOldestMessageNotDone) {
  KeyLanes lanes(10);
  EXPECT_EQ(lanes.checkpoint(), uint64_t{10});
  lanes.push("a", item(12));
  lanes.push("b", item(15));
  lanes.push("a", item(17));
  EXPECT_EQ(lanes.checkpoint(), uint64_t{11});
  lanes.pop("b");  // 15 done before 12: the checkpoint waits for 12
  EXPECT_EQ(lanes.checkpoint(), uint64_t{11});
  lanes.pop("a");
  EXPECT_EQ(lanes.checkpoint(), uint64_t{16});
  lanes.pop("a");
  EXPECT_EQ(lanes.checkpoint(), uint64_t{17});
  EXPECT_EQ(lanes.read_to(), uint64_t{17});
}

TEST(KeyLanes, ClearingKeepsTheCheckpoint) {
  KeyLanes lanes(0);
  lanes.push("a", item(1));
  lanes.push("a", item(2));
  lanes.pop("a");
  lanes.clear();
  EXPECT_TRUE(lanes.empty());
  EXPECT_EQ(lanes.checkpoint(), uint64_t{1}) << "what was not done is read again by the next owner";
}

}  // namespace
}  // namespace natsfleet::fleet
