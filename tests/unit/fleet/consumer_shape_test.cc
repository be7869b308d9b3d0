#include "fleet/consumer_shape.h"

#include <gtest/gtest.h>

namespace natsfleet::fleet {
namespace {

WorkSpec spec() {
  WorkSpec s;
  s.name = "sync-listener";
  s.subject = "daemon.sync.complete";
  s.ack_wait = std::chrono::seconds(30);
  return s;
}

TEST(ConsumerShape, DesiredConfigIsASharedPullDurable) {
  auto c = desired_consumer_config(spec());
  EXPECT_EQ(c["durable_name"], "sync-listener");
  EXPECT_EQ(c["ack_policy"], "explicit");
  EXPECT_EQ(c["filter_subject"], "daemon.sync.complete");
  EXPECT_EQ(c["ack_wait"], 30'000'000'000LL);
  EXPECT_EQ(c["deliver_policy"], "all");
  EXPECT_FALSE(c.contains("deliver_subject"));
}

TEST(ConsumerShape, StartingAtSetsStartSequence) {
  auto c = config_starting_at(spec(), 201);
  EXPECT_EQ(c["deliver_policy"], "by_start_sequence");
  EXPECT_EQ(c["opt_start_seq"], 201);
}

TEST(ConsumerShape, MatchingConsumerNeedsNothing) {
  auto check = check_shape(spec(), desired_consumer_config(spec()));
  EXPECT_TRUE(check.compatible);
  EXPECT_FALSE(check.needs_update);
}

TEST(ConsumerShape, MutableDriftIsAnInPlaceUpdateKeepingImmutableFields) {
  auto existing = config_starting_at(spec(), 50);
  existing["ack_wait"] = 10'000'000'000LL;
  auto check = check_shape(spec(), existing);
  EXPECT_TRUE(check.compatible);
  EXPECT_TRUE(check.needs_update);
  EXPECT_EQ(check.updated["ack_wait"], 30'000'000'000LL);
  EXPECT_EQ(check.updated["deliver_policy"], "by_start_sequence");
  EXPECT_EQ(check.changes, "ack_wait 10s -> 30s");
}

TEST(ConsumerShape, PlainPushDurableIsTheWrongShape) {
  auto existing = desired_consumer_config(spec());
  existing["deliver_subject"] = "deliver.sync";
  auto check = check_shape(spec(), existing);
  EXPECT_FALSE(check.compatible);
  EXPECT_NE(check.problem.find("plain push durable"), std::string::npos);
}

TEST(ConsumerShape, OtherFilterIsTheWrongShape) {
  auto existing = desired_consumer_config(spec());
  existing["filter_subject"] = "daemon.>";
  EXPECT_FALSE(check_shape(spec(), existing).compatible);
}

}  // namespace
}  // namespace natsfleet::fleet
