// How per-key ordered work maps subjects to partitions. That the broker computes the same
// mapping is tested against a real nats-server in tests/integration/ordering_test.cc.
#include "fleet/ordered/partition_plan.h"

#include <gtest/gtest.h>

#include <set>

#include "natsfleet/spec.h"
#include "natsfleet/validate.h"

namespace natsfleet::fleet {
namespace {

TEST(PartitionPlan, AppendsThePartitionToAPlainSubject) {
  auto plan = PartitionPlan::make("orders.*", 2, 16);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->destination(), "orders.{{wildcard(1)}}.{{partition(16,1)}}");
  EXPECT_EQ(plan->mapping_line(), "\"orders.*\": \"orders.{{wildcard(1)}}.{{partition(16,1)}}\"");
  EXPECT_EQ(plan->stored_subjects(), "orders.*.*");
  EXPECT_EQ(plan->filter(3), "orders.*.3");
  EXPECT_EQ(plan->mapped("orders.42"), "orders.42." + std::to_string(plan->partition_of("42")));
  EXPECT_EQ(plan->partition_in("orders.42.7"), 7);
}

TEST(PartitionPlan, PutsThePartitionBeforeATrailingWildcard) {
  auto plan = PartitionPlan::make("shop.*.orders.*.>", 4, 8);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->destination(),
            "shop.{{wildcard(1)}}.orders.{{wildcard(2)}}.{{partition(8,2)}}.>");
  EXPECT_EQ(plan->stored_subjects(), "shop.*.orders.*.*.>");
  EXPECT_EQ(plan->filter(0), "shop.*.orders.*.0.>");
  const int p = plan->partition_of("k9");
  EXPECT_EQ(plan->mapped("shop.eu.orders.k9.created.v2"),
            "shop.eu.orders.k9." + std::to_string(p) + ".created.v2");
  EXPECT_EQ(plan->partition_in("shop.eu.orders.k9." + std::to_string(p) + ".created"), p);
}

TEST(PartitionPlan, HashesKeysAsNatsServerDoes) {
  // fnv1a_32, as nats-server's partition(): "a" is 0xe40c292c.
  auto plan = PartitionPlan::make("k.*", 2, 1000);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->partition_of("a"), static_cast<int>(0xe40c292cu % 1000u));
  // Keys spread over every partition.
  auto sixteen = PartitionPlan::make("k.*", 2, 16);
  std::set<int> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(sixteen->partition_of(std::to_string(i)));
  EXPECT_EQ(seen.size(), 16u);
}

TEST(PartitionPlan, RejectsAKeyThatIsNotAWildcard) {
  auto plan = PartitionPlan::make("orders.created", 2, 16);
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("must be a '*' token"), std::string::npos);
  auto beyond = PartitionPlan::make("orders.*", 3, 16);
  ASSERT_FALSE(beyond);
  EXPECT_NE(beyond.error().message.find("one of the 2 tokens"), std::string::npos);
  auto tail = PartitionPlan::make("orders.>", 2, 16);
  ASSERT_FALSE(tail);
}

TEST(PartitionPlan, BoundsThePartitionCount) {
  EXPECT_FALSE(PartitionPlan::make("orders.*", 2, 0));
  EXPECT_FALSE(PartitionPlan::make("orders.*", 2, Limits::kMaxPartitions + 1));
  EXPECT_TRUE(PartitionPlan::make("orders.*", 2, Limits::kMaxPartitions));
}

TEST(PartitionPlan, ReadsNoPartitionFromAnUnmappedSubject) {
  auto plan = PartitionPlan::make("orders.*", 2, 16);
  EXPECT_EQ(plan->partition_in("orders.42"), -1);
  EXPECT_EQ(plan->partition_in("orders.42.x"), -1);
  EXPECT_EQ(plan->partition_in("orders.42.16"), -1);
}

TEST(PartitionPlan, ValidatesOrderedWorkSpecs) {
  WorkSpec spec{.name = "orders", .subject = "orders.*"};
  spec.per_key.emplace();
  spec.per_key->key_token = 2;
  EXPECT_TRUE(validate_work(spec));
  spec.per_key->key_token = 1;
  EXPECT_FALSE(validate_work(spec));
  spec.per_key->key_token = 0;  // per-key order needs its key's token
  EXPECT_FALSE(validate_work(spec));
  spec.per_key = PerKeyOrder{.key_token = 2, .partitions = 0};
  EXPECT_FALSE(validate_work(spec));
}

TEST(PartitionPlan, NamesEachPartitionsConsumer) {
  EXPECT_EQ(partition_consumer("orders", 0), "orders-p0");
  EXPECT_EQ(partition_consumer("orders", 15), "orders-p15");
}

}  // namespace
}  // namespace natsfleet::fleet
