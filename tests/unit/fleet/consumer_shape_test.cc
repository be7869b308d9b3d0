#include "fleet/consumer_shape.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace natsfleet::fleet {
namespace {

WorkSpec spec() {
  WorkSpec s;
  s.name = "sync-listener";
  s.subject = "daemon.sync.complete";
  s.flow.ack_wait = std::chrono::seconds(30);
  return s;
}

TEST(ConsumerShape, DesiredConfigIsASharedPullDurable) {
  auto c = desired_consumer_config(spec());
  EXPECT_EQ(c.durable_name, "sync-listener");
  EXPECT_EQ(c.ack_policy, nats::AckPolicy::explicit_ack);
  EXPECT_EQ(c.filter_subject, "daemon.sync.complete");
  EXPECT_EQ(c.ack_wait, std::chrono::seconds(30));
  EXPECT_EQ(c.deliver_policy, nats::DeliverPolicy::all);
  EXPECT_TRUE(c.is_pull());
  // natsfleet enforces max_deliver: the broker's limit would drop a lost last delivery silently.
  EXPECT_EQ(c.max_deliver, -1);
}

TEST(ConsumerShape, StartingAtSetsStartSequence) {
  auto c = config_starting_at(spec(), 201);
  EXPECT_EQ(c.deliver_policy, nats::DeliverPolicy::by_start_sequence);
  EXPECT_EQ(c.opt_start_seq, 201u);
}

TEST(ConsumerShape, MatchingConsumerNeedsNothing) {
  auto check = check_shape(spec(), desired_consumer_config(spec()));
  EXPECT_TRUE(check.compatible);
  EXPECT_FALSE(check.needs_update);
}

TEST(ConsumerShape, MutableDriftIsAnInPlaceUpdateKeepingImmutableFields) {
  auto existing = config_starting_at(spec(), 50);
  existing.ack_wait = std::chrono::seconds(10);
  existing.other_fields["sample_freq"] = "\"50%\"";
  auto check = check_shape(spec(), existing);
  EXPECT_TRUE(check.compatible);
  EXPECT_TRUE(check.needs_update);
  EXPECT_EQ(check.updated.ack_wait, std::chrono::seconds(30));
  EXPECT_EQ(check.updated.deliver_policy, nats::DeliverPolicy::by_start_sequence);
  EXPECT_EQ(check.updated.opt_start_seq, 50u);
  EXPECT_EQ(check.updated.other_fields, existing.other_fields);
  EXPECT_EQ(check.changes, "ack_wait 10s -> 30s");
}

TEST(ConsumerShape, PlainPushDurableIsTheWrongShape) {
  auto existing = desired_consumer_config(spec());
  existing.deliver_subject = "deliver.sync";
  auto check = check_shape(spec(), existing);
  EXPECT_FALSE(check.compatible);
  EXPECT_NE(check.problem.find("plain push durable"), std::string::npos);
}

TEST(ConsumerShape, OtherFilterIsTheWrongShape) {
  auto existing = desired_consumer_config(spec());
  existing.filter_subject = "daemon.>";
  EXPECT_FALSE(check_shape(spec(), existing).compatible);
}

WorkSpec queue_spec() {
  WorkSpec s = spec();
  s.shape = WorkShape::push_queue;
  return s;
}

TEST(ConsumerShape, PushQueueIsADurableWithADeliverGroup) {
  auto c = desired_consumer_config(queue_spec());
  EXPECT_EQ(c.deliver_group, "sync-listener");
  EXPECT_EQ(c.deliver_subject, deliver_subject_for("sync-listener"));
  EXPECT_EQ(c.max_waiting, 0);  // a pull-only field the server refuses on push
  EXPECT_TRUE(check_shape(queue_spec(), c).compatible);
}

TEST(ConsumerShape, PushQueueFleetRefusesPullAndPlainPush) {
  auto pull = desired_consumer_config(spec());
  EXPECT_NE(check_shape(queue_spec(), pull).problem.find("is a pull consumer"), std::string::npos);
  auto plain = desired_consumer_config(spec());
  plain.deliver_subject = "deliver.sync";
  EXPECT_NE(check_shape(queue_spec(), plain).problem.find("plain push durable"), std::string::npos);
  // Another language's replicas may have created the group under any deliver subject.
  auto theirs = desired_consumer_config(queue_spec());
  theirs.deliver_subject = "their.inbox";
  theirs.deliver_group = "workers";
  EXPECT_TRUE(check_shape(queue_spec(), theirs).compatible);
}

TEST(ConsumerShape, PullFleetRefusesADeliverGroup) {
  auto queue = desired_consumer_config(queue_spec());
  auto check = check_shape(spec(), queue);
  EXPECT_FALSE(check.compatible);
  EXPECT_NE(check.problem.find("deliver group; this fleet pulls"), std::string::npos);
}

TEST(ConsumerShape, AckAndDeliverPoliciesThatLoseOrSlowWorkAreTheWrongShape) {
  using nats::DeliverPolicy;
  for (auto ack : {nats::AckPolicy::none, nats::AckPolicy::all}) {
    auto c = desired_consumer_config(spec());
    c.ack_policy = ack;
    EXPECT_FALSE(check_shape(spec(), c).compatible) << nats::to_string(ack);
  }
  for (auto deliver : {DeliverPolicy::last, DeliverPolicy::last_per_subject}) {
    auto c = desired_consumer_config(spec());
    c.deliver_policy = deliver;
    EXPECT_FALSE(check_shape(spec(), c).compatible) << nats::to_string(deliver);
  }
  for (auto deliver : {DeliverPolicy::all, DeliverPolicy::new_messages,
                       DeliverPolicy::by_start_sequence, DeliverPolicy::by_start_time}) {
    auto c = desired_consumer_config(spec());
    c.deliver_policy = deliver;
    EXPECT_TRUE(check_shape(spec(), c).compatible) << nats::to_string(deliver);
  }
  auto paced = desired_consumer_config(spec());
  paced.replay_policy = nats::ReplayPolicy::original;
  EXPECT_FALSE(check_shape(spec(), paced).compatible);
}

TEST(ConsumerShape, SuccessorStartsAfterTheOldFloorUnderItsOwnName) {
  const auto name =
      successor_name("sync-listener", "DAEMON_SYNC", {"daemon.sync.complete"}, WorkShape::pull);
  auto c = config_starting_at(spec(), 201, name);
  EXPECT_EQ(c.durable_name, name);
  EXPECT_EQ(c.opt_start_seq, 201u);
  EXPECT_TRUE(check_shape(spec(), c).compatible) << "a successor must satisfy its own fleet";
}

TEST(ConsumerShape, SuccessorNameIsTheSameForEveryReplicaAndDiffersByShapeAndPlace) {
  const auto a =
      successor_name("sync-listener", "DAEMON_SYNC", {"daemon.sync.complete"}, WorkShape::pull);
  EXPECT_EQ(
      a, successor_name("sync-listener", "DAEMON_SYNC", {"daemon.sync.complete"}, WorkShape::pull));
  EXPECT_EQ(a.rfind("sync-listener-pull-", 0), 0u) << a;
  EXPECT_EQ(a.size(), std::string("sync-listener-pull-").size() + 8);
  EXPECT_NE(a, successor_name("sync-listener", "OTHER", {"daemon.sync.complete"}, WorkShape::pull));
  EXPECT_NE(a, successor_name("sync-listener", "DAEMON_SYNC", {"daemon.sync.*"}, WorkShape::pull));
  EXPECT_EQ(successor_name("sync-listener", "DAEMON_SYNC", {"daemon.sync.complete"},
                           WorkShape::push_queue)
                .rfind("sync-listener-queue-", 0),
            0u);
  // Fixed across builds, platforms and releases: `natsfleet audit` from another build finds it.
  EXPECT_EQ(a, "sync-listener-pull-e1acf918");
  EXPECT_EQ(successor_name("orders", "ORDERS", {"orders.created", "orders.paid"}, WorkShape::pull),
            "orders-pull-ae56d1c7");
}

WorkSpec orders_spec() {
  WorkSpec s;
  s.name = "orders";
  s.subject = "orders.created";
  s.subjects = {"orders.created", "orders.paid"};
  return s;
}

TEST(ConsumerShape, SeveralSubjectsAreFilterSubjectsAndOneIsTheFilterSubject) {
  const auto several = desired_consumer_config(orders_spec());
  EXPECT_EQ(several.filter_subjects, orders_spec().subjects);
  EXPECT_TRUE(several.filter_subject.empty());
  const auto one = desired_consumer_config(spec());
  EXPECT_EQ(one.filter_subject, "daemon.sync.complete");
  EXPECT_TRUE(one.filter_subjects.empty());
  EXPECT_EQ(config_starting_at(orders_spec(), 7).filter_subjects, orders_spec().subjects);
  EXPECT_EQ(describe_subjects(filter_subjects(several)), "orders.created, orders.paid");
}

TEST(ConsumerShape, FilterSubjectsCompareAsASet) {
  auto existing = desired_consumer_config(orders_spec());
  std::reverse(existing.filter_subjects.begin(), existing.filter_subjects.end());
  EXPECT_TRUE(check_shape(orders_spec(), existing).compatible);

  existing.filter_subjects = {"orders.created"};
  auto check = check_shape(orders_spec(), existing);
  EXPECT_FALSE(check.compatible);
  EXPECT_EQ(check.problem, "filters orders.created, not orders.created, orders.paid");

  // What a server before 2.10 makes of them: no filter at all.
  existing.filter_subjects.clear();
  check = check_shape(orders_spec(), existing);
  EXPECT_FALSE(check.compatible);
  EXPECT_EQ(check.problem, "filters every subject, not orders.created, orders.paid");
}

TEST(ConsumerShape, CreatedConsumersNameWhatTheyServeInTheirMetadata) {
  EXPECT_EQ(desired_consumer_config(spec()).metadata.at(kWorkMetadataKey), "sync-listener");
  EXPECT_EQ(replica_consumer_config(spec(), "status-1", 0, std::chrono::seconds(60))
                .metadata.at(kBroadcastMetadataKey),
            "sync-listener");
  // Labels are not shape: a consumer without them (an earlier release's, a hand-made one) fits.
  auto existing = desired_consumer_config(spec());
  existing.metadata.clear();
  const auto check = check_shape(spec(), existing);
  EXPECT_TRUE(check.compatible);
  EXPECT_FALSE(check.needs_update);
}

TEST(ConsumerShape, ReplicaConsumerIsANamedEphemeralThatExpires) {
  auto c = replica_consumer_config(spec(), "status-0a1b2c3d", 0, std::chrono::seconds(60));
  EXPECT_TRUE(c.durable_name.empty());
  EXPECT_EQ(c.name, "status-0a1b2c3d");
  EXPECT_EQ(c.deliver_policy, nats::DeliverPolicy::new_messages);
  EXPECT_EQ(c.inactive_threshold, std::chrono::seconds(60));
  auto resumed = replica_consumer_config(spec(), "status-0a1b2c3d", 42, std::chrono::seconds(60));
  EXPECT_EQ(resumed.deliver_policy, nats::DeliverPolicy::by_start_sequence);
  EXPECT_EQ(resumed.opt_start_seq, 42u);
}

// The ratchet of CONTEXT.md failure A: no work shape natsfleet can be asked for reaches the
// broker as a plain push durable (a push consumer without a deliver group admits one subscriber).
// A new WorkShape must be listed here, or the switch below fails the build (-Wswitch).
std::vector<WorkShape> every_work_shape() {
  std::vector<WorkShape> all;
  for (WorkShape s : {WorkShape::pull, WorkShape::push_queue}) {
    switch (s) {
      case WorkShape::pull:
      case WorkShape::push_queue:
        all.push_back(s);
    }
  }
  return all;
}

TEST(ShapeRatchet, EveryWorkConsumerNatsfleetCreatesIsPullOrHasADeliverGroup) {
  int checked = 0;
  for (WorkShape shape : every_work_shape()) {
    for (StartAt start : {StartAt::all, StartAt::new_messages}) {
      WorkSpec s = spec();
      s.shape = shape;
      s.start = start;
      const auto successor = successor_name(s.name, "S", {s.subject}, shape);
      for (const auto& c :
           {desired_consumer_config(s), config_starting_at(s, 7),
            desired_consumer_config(s, successor), config_starting_at(s, 7, successor)}) {
        EXPECT_TRUE(c.is_pull() || !c.deliver_group.empty()) << c.consumer_name();
        ++checked;
      }
    }
  }
  EXPECT_TRUE(replica_consumer_config(spec(), "r", 0, std::chrono::seconds(1)).is_pull());
  EXPECT_TRUE(reader_consumer_config({.name = "w-p0-e1g0", .filter = "w.*.0"}).is_pull());
  EXPECT_EQ(checked, 16);
}

TEST(ShapeRatchet, OnlyTheFleetCreatesConsumersAndOnlyFromConsumerShape) {
  // Every consumer config that reaches the broker is built in fleet/consumer_shape.cc (checked
  // above); the callers of the create call are the consumer lifecycle and ordered work's reader
  // (`natsfleet audit`, for one, only reads).
  namespace fs = std::filesystem;
  const fs::path src = fs::path(NATSFLEET_SOURCE_DIR) / "src";
  std::vector<std::string> callers;
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find(".create_consumer(") != std::string::npos)
      callers.push_back(fs::relative(entry.path(), src).generic_string());
  }
  std::sort(callers.begin(), callers.end());
  EXPECT_EQ(callers, (std::vector<std::string>{"fleet/consumer_lifecycle.cc",
                                               "fleet/ordered/partition_reader.cc"}));
}

TEST(PeersQuestion, TheServedWindowReadsBackAndOtherBodiesAreNotIt) {
  using std::chrono::milliseconds;
  EXPECT_EQ(served_window(served_question(milliseconds(30'000))), milliseconds(30'000));
  EXPECT_EQ(served_window(""), std::nullopt) << "the older question: do you know it?";
  EXPECT_EQ(served_window("served-within"), std::nullopt);
  EXPECT_EQ(served_window("served-within -5"), std::nullopt);
  EXPECT_EQ(served_window("served-within 5x"), std::nullopt);
}

}  // namespace
}  // namespace natsfleet::fleet
