// Each audit rule fires on the two samples that show its problem and stays quiet on the nearby
// healthy cases: progress between the samples, a subscriber, a waiting pull, one sample only.
#include "audit/findings.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "fleet/consumer_shape.h"
#include "fleet/ordered/partition_plan.h"

namespace natsfleet::audit {
namespace {

using std::chrono::seconds;

// A consumer info as the broker answers it: a caught-up durable pull consumer unless changed.
class Consumer {
 public:
  Consumer(const std::string& stream, const std::string& name, const std::string& filter = "") {
    j_ = {{"stream_name", stream},
          {"name", name},
          {"config",
           {{"durable_name", name},
            {"ack_policy", "explicit"},
            {"max_ack_pending", 1000},
            {"filter_subject", filter}}},
          {"delivered", {{"consumer_seq", 0}, {"stream_seq", 0}}},
          {"ack_floor", {{"consumer_seq", 0}, {"stream_seq", 0}}},
          {"num_pending", 0},
          {"num_ack_pending", 0},
          {"num_redelivered", 0},
          {"num_waiting", 1}};
  }
  Consumer& push(const std::string& deliver_subject, const std::string& group = "") {
    j_["config"]["deliver_subject"] = deliver_subject;
    if (!group.empty()) j_["config"]["deliver_group"] = group;
    j_.erase("num_waiting");
    j_["push_bound"] = true;
    return *this;
  }
  Consumer& ephemeral() {
    j_["config"].erase("durable_name");
    return *this;
  }
  Consumer& config(const std::string& key, const nlohmann::json& value) {
    j_["config"][key] = value;
    return *this;
  }
  Consumer& set(const std::string& key, const nlohmann::json& value) {
    j_[key] = value;
    return *this;
  }
  Consumer& delivered(uint64_t stream_seq, uint64_t consumer_seq) {
    j_["delivered"] = {{"consumer_seq", consumer_seq}, {"stream_seq", stream_seq}};
    return *this;
  }
  Consumer& ack_floor(uint64_t stream_seq) {
    j_["ack_floor"] = {{"consumer_seq", stream_seq}, {"stream_seq", stream_seq}};
    return *this;
  }
  nats::ConsumerInfo info() const { return nats::parse_consumer_info(j_); }

 private:
  nlohmann::json j_;
};

nats::StreamInfo stream(const std::string& name, const std::vector<std::string>& subjects) {
  return nats::parse_stream_info({{"config", {{"name", name}, {"subjects", subjects}}}});
}

BrokerSnapshot snapshot(const std::vector<Consumer>& consumers,
                        std::vector<nats::StreamInfo> streams = {}) {
  BrokerSnapshot s;
  s.streams = std::move(streams);
  for (const auto& c : consumers) s.consumers.push_back(c.info());
  return s;
}

std::vector<Finding> judge(const Consumer& before, const Consumer& now) {
  return consumer_findings(snapshot({before}), snapshot({now}), seconds(3));
}

std::vector<std::string> rules(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(f.finding);
  return out;
}

using Rules = std::vector<std::string>;

TEST(ConsumerFindings, CaughtUpConsumersHaveNone) {
  Consumer pull("JOBS", "jobs-worker");
  Consumer push = Consumer("JOBS", "jobs-push").push("deliver.jobs", "jobs-push");
  EXPECT_TRUE(
      consumer_findings(snapshot({pull, push}), snapshot({pull, push}), seconds(3)).empty());
}

TEST(ConsumerFindings, UnboundPushWithPendingMessages) {
  Consumer c = Consumer("PUSH", "legacy").push("deliver.legacy").set("push_bound", false);
  c.set("num_pending", 3);
  auto findings = judge(c, c);
  ASSERT_EQ(rules(findings), Rules{"unbound-push"});
  EXPECT_EQ(findings[0].stream, "PUSH");
  EXPECT_EQ(findings[0].consumer, "legacy");
  EXPECT_NE(findings[0].evidence.find("'deliver.legacy'"), std::string::npos);
  EXPECT_NE(findings[0].evidence.find("3 pending"), std::string::npos);
}

TEST(ConsumerFindings, UnboundPushNeedsNoSubscriberInBothSamplesAndSomethingWaiting) {
  Consumer unbound = Consumer("PUSH", "legacy").push("deliver.legacy").set("push_bound", false);
  Consumer bound = Consumer("PUSH", "legacy").push("deliver.legacy");
  EXPECT_TRUE(judge(unbound, unbound).empty()) << "nothing pending";
  unbound.set("num_ack_pending", 2);
  bound.set("num_ack_pending", 2);
  EXPECT_EQ(rules(judge(unbound, unbound)), Rules{"unbound-push"}) << "unacked counts too";
  EXPECT_TRUE(judge(bound, unbound).empty()) << "a subscriber in the first sample";
  EXPECT_TRUE(judge(unbound, bound).empty()) << "a subscriber in the second sample";
}

TEST(ConsumerFindings, IdlePullHasPendingWorkNobodyPullsAndNoProgress) {
  Consumer c = Consumer("JOBS", "jobs-worker").set("num_waiting", 0).set("num_pending", 5);
  c.delivered(10, 10).ack_floor(10);
  auto findings = judge(c, c);
  ASSERT_EQ(rules(findings), Rules{"idle-pull"});
  EXPECT_NE(findings[0].evidence.find("5 pending"), std::string::npos);
  EXPECT_NE(findings[0].evidence.find("over 3s"), std::string::npos);
}

TEST(ConsumerFindings, AnIdlePullNatsfleetMadeNamesItsWork) {
  Consumer c = Consumer("JOBS", "jobs-worker").set("num_waiting", 0).set("num_pending", 5);
  c.delivered(10, 10).ack_floor(10);
  Consumer labelled = c;
  labelled.config("metadata", nlohmann::json{{"natsfleet.work", "jobs-worker"}});
  auto findings = judge(labelled, labelled);
  ASSERT_EQ(rules(findings), Rules{"idle-pull"});
  EXPECT_NE(findings[0].evidence.find("natsfleet created it for work 'jobs-worker'"),
            std::string::npos)
      << findings[0].evidence;
  EXPECT_EQ(findings[0].action.rfind("no replica of work 'jobs-worker' runs", 0), 0u)
      << findings[0].action;
  EXPECT_EQ(judge(c, c)[0].evidence.find("natsfleet created"), std::string::npos);
}

TEST(ConsumerFindings, IdlePullNeedsNoWaitingPullAndNoProgressAndADurable) {
  Consumer before = Consumer("JOBS", "jobs-worker").set("num_waiting", 0).set("num_pending", 5);
  before.delivered(10, 10).ack_floor(10);

  Consumer pulled = before;
  pulled.set("num_waiting", 1);
  EXPECT_TRUE(judge(before, pulled).empty()) << "a pull waiting";
  Consumer acked = before;
  acked.ack_floor(11);
  EXPECT_TRUE(judge(before, acked).empty()) << "the ack floor moved";
  Consumer delivered = before;
  delivered.delivered(11, 11);
  EXPECT_TRUE(judge(before, delivered).empty()) << "a message was delivered";
  Consumer drained = before;
  drained.set("num_pending", 0);
  EXPECT_TRUE(judge(before, drained).empty()) << "nothing pending any more";
  Consumer ephemeral = before;
  ephemeral.ephemeral();
  EXPECT_TRUE(judge(ephemeral, ephemeral).empty()) << "an ephemeral goes away by itself";
}

TEST(ConsumerFindings, StalledAtMaxAckPendingWithAStillAckFloor) {
  Consumer c = Consumer("STALL", "stuck").config("max_ack_pending", 2).set("num_ack_pending", 2);
  c.set("num_pending", 3).set("num_waiting", 0).delivered(2, 2);
  auto findings = judge(c, c);
  // Not idle-pull as well: at the limit nobody could get more, pulling or not.
  ASSERT_EQ(rules(findings), Rules{"stalled"});
  EXPECT_NE(findings[0].evidence.find("2 unacked, max_ack_pending 2"), std::string::npos);
  EXPECT_NE(findings[0].evidence.find("ack floor 0 unchanged over 3s"), std::string::npos);
}

TEST(ConsumerFindings, NotStalledWhenTheFloorMovesOrBelowTheLimitOrUnlimited) {
  Consumer before = Consumer("STALL", "stuck").config("max_ack_pending", 2);
  before.set("num_ack_pending", 2).delivered(2, 2);
  Consumer moved = before;
  moved.delivered(3, 3).ack_floor(1);
  EXPECT_TRUE(judge(before, moved).empty());
  Consumer below = before;
  below.set("num_ack_pending", 1);
  EXPECT_TRUE(judge(before, below).empty());
  EXPECT_TRUE(judge(below, before).empty());
  Consumer unlimited = before;
  unlimited.config("max_ack_pending", -1);
  EXPECT_TRUE(judge(unlimited, unlimited).empty());
}

TEST(ConsumerFindings, RedeliveryStormInBothSamples) {
  Consumer c = Consumer("STORM", "flaky").set("num_ack_pending", 12).set("num_redelivered", 12);
  c.delivered(12, 36);
  auto findings = judge(c, c);
  ASSERT_EQ(rules(findings), Rules{"redelivery-storm"});
  EXPECT_NE(findings[0].evidence.find("12 of 12 unacked"), std::string::npos);
  EXPECT_NE(findings[0].evidence.find("36 deliveries up to stream seq 12"), std::string::npos);
}

TEST(ConsumerFindings, NoStormBelowTheThresholdsOrInOneSampleOnly) {
  Consumer storm = Consumer("STORM", "flaky").set("num_ack_pending", 12);
  storm.set("num_redelivered", 12);
  Consumer few = storm;
  few.set("num_redelivered", 9);
  EXPECT_TRUE(judge(few, few).empty()) << "below min_redelivered";
  Consumer diluted = storm;
  diluted.set("num_ack_pending", 30);
  EXPECT_TRUE(judge(diluted, diluted).empty()) << "under half of the unacked messages";
  Consumer calm = storm;
  calm.set("num_redelivered", 0).set("num_ack_pending", 0);
  EXPECT_TRUE(judge(storm, calm).empty()) << "taken-over work acked before the second sample";
  EXPECT_TRUE(judge(calm, storm).empty());
  StormThresholds strict{.min_redelivered = 20, .min_share = 0.5};
  EXPECT_TRUE(consumer_findings(snapshot({storm}), snapshot({storm}), seconds(3), strict).empty());
}

TEST(ConsumerFindings, ConsumerInOneSampleOnlyIsNotJudged) {
  Consumer idle = Consumer("JOBS", "new-worker").set("num_waiting", 0).set("num_pending", 5);
  EXPECT_TRUE(consumer_findings(snapshot({}), snapshot({idle}), seconds(3)).empty());
}

// An old push durable and the pull consumer a migration created for it.
struct Migration {
  Consumer old_push = Consumer("MIG", "orders", "mig.orders").push("deliver.orders");
  Consumer successor = Consumer(
      "MIG", fleet::successor_name("orders", "MIG", {"mig.orders"}, WorkShape::pull), "mig.orders");
};

TEST(ConsumerFindings, UnboundPredecessorIsLeftOverAndSafeToDelete) {
  Migration m;
  m.old_push.set("push_bound", false).set("num_pending", 4);
  const auto s = snapshot({m.old_push, m.successor});
  auto findings = consumer_findings(s, s, seconds(3));
  // Only predecessor-left: its pending messages are the successor's now, not unbound-push.
  ASSERT_EQ(rules(findings), Rules{"predecessor-left"});
  EXPECT_EQ(findings[0].consumer, "orders");
  EXPECT_NE(findings[0].evidence.find(m.successor.info().name), std::string::npos);
  EXPECT_NE(findings[0].action.find("nats consumer rm MIG orders"), std::string::npos);
}

TEST(ConsumerFindings, BoundPredecessorGetsNoFindingAtAll) {
  Migration m;
  m.old_push.set("num_pending", 4).set("num_ack_pending", 1000).ack_floor(3);
  const auto s = snapshot({m.old_push, m.successor});
  EXPECT_TRUE(consumer_findings(s, s, seconds(3)).empty());
}

TEST(ConsumerFindings, PullPredecessorOfAQueueSuccessor) {
  Consumer old_pull = Consumer("MIG", "orders", "mig.orders").set("num_waiting", 0);
  const std::string name =
      fleet::successor_name("orders", "MIG", {"mig.orders"}, WorkShape::push_queue);
  Consumer queue = Consumer("MIG", name, "mig.orders").push("deliver.q", name);
  auto s = snapshot({old_pull, queue});
  EXPECT_EQ(rules(consumer_findings(s, s, seconds(3))), Rules{"predecessor-left"});
  old_pull.set("num_waiting", 2);
  s = snapshot({old_pull, queue});
  EXPECT_TRUE(consumer_findings(s, s, seconds(3)).empty()) << "a replica still pulls from it";
}

TEST(ConsumerFindings, ANameOfTheRightFormForAnotherSubjectIsNoSuccessor) {
  Migration m;
  m.old_push.set("push_bound", false).set("num_pending", 4);
  m.successor.config("filter_subject", "mig.other");
  const auto s = snapshot({m.old_push, m.successor});
  EXPECT_EQ(rules(consumer_findings(s, s, seconds(3))), Rules{"unbound-push"});
}

// Config rules: a daemon config judged against the broker's streams and consumers.
config::DaemonConfig daemon_config(const std::string& work) {
  return config::parse_config("name = \"svc\"\n" + work, "svc.toml").value();
}

std::string work_entry(const std::string& name, const std::string& subject,
                       const std::string& extra = "") {
  return "[[work]]\nname = \"" + name + "\"\nsubject = \"" + subject + "\"\n" + extra +
         "sink = { type = \"file\", path = \"out.jsonl\" }\n";
}

// A consumer exactly as natsfleet run creates it for a [[work]].
Consumer created_for(const config::DaemonConfig& cfg, const std::string& stream, size_t i = 0) {
  Consumer c(stream, cfg.work[i].spec.name);
  const nlohmann::json desired = nats::to_json(fleet::desired_consumer_config(cfg.work[i].spec));
  for (const auto& [key, value] : desired.items()) c.config(key, value);
  return c;
}

TEST(WorkFindings, DeclaredWorkThatIsInPlaceHasNone) {
  auto cfg = daemon_config(work_entry("jobs-worker", "jobs.run"));
  auto s = snapshot({created_for(cfg, "JOBS")}, {stream("JOBS", {"jobs.>"})});
  EXPECT_TRUE(work_findings(cfg, s).empty());
}

TEST(WorkFindings, NoStreamHoldsTheSubject) {
  auto cfg = daemon_config(work_entry("jobs-worker", "jobs.run"));
  auto findings = work_findings(cfg, snapshot({}, {stream("MAIL", {"mail.*"})}));
  ASSERT_EQ(rules(findings), Rules{"work-no-stream"});
  EXPECT_EQ(findings[0].stream, "");
  EXPECT_EQ(findings[0].consumer, "jobs-worker");
  EXPECT_NE(findings[0].evidence.find("svc.toml:2"), std::string::npos);
  EXPECT_NE(findings[0].evidence.find("'jobs.run'"), std::string::npos);
}

// A work that declares its stream: its absence is run's to fix; a difference is the operator's.
TEST(WorkFindings, ADeclaredStreamThatDiffersIsReportedAndAMissingOneIsRunsToCreate) {
  auto cfg = daemon_config(work_entry(
      "jobs-worker", "jobs.run",
      "stream = { name = \"JOBS\", max_age = \"1h\", replicas = 1, max_msgs = 1000 }\n"));
  auto missing = work_findings(cfg, snapshot({}, {}));
  ASSERT_EQ(rules(missing), Rules{"work-no-stream"});
  EXPECT_EQ(missing[0].action, "natsfleet run creates the declared stream when it starts");

  auto as_declared = nats::parse_stream_info({{"config",
                                               {{"name", "JOBS"},
                                                {"subjects", {"jobs.run"}},
                                                {"storage", "file"},
                                                {"retention", "limits"},
                                                {"num_replicas", 1},
                                                {"max_age", 3'600'000'000'000LL},
                                                {"max_msgs", 1000},
                                                {"max_bytes", -1},
                                                {"duplicate_window", 120'000'000'000LL}}}});
  EXPECT_TRUE(work_findings(cfg, snapshot({created_for(cfg, "JOBS")}, {as_declared})).empty());

  auto findings =
      work_findings(cfg, snapshot({created_for(cfg, "JOBS")}, {stream("JOBS", {"jobs.>"})}));
  ASSERT_EQ(rules(findings), Rules{"stream-differs"});
  EXPECT_EQ(findings[0].stream, "JOBS");
  EXPECT_NE(findings[0].evidence.find("max_age: 1h declared, none on the broker; max_msgs: 1000 "
                                      "declared, none on the broker"),
            std::string::npos)
      << findings[0].evidence;
  EXPECT_NE(findings[0].action.find("nats stream edit JOBS"), std::string::npos);
}

TEST(WorkFindings, TheSubjectDecidesTheStream) {
  auto cfg = daemon_config(work_entry("jobs-worker", "jobs.run", "stream = \"MAIL\"\n"));
  auto s = snapshot({created_for(cfg, "JOBS")},
                    {stream("MAIL", {"mail.*"}), stream("JOBS", {"jobs.*"})});
  auto findings = work_findings(cfg, s);
  ASSERT_EQ(rules(findings), Rules{"work-wrong-stream"});
  EXPECT_EQ(findings[0].stream, "JOBS");
  EXPECT_NE(findings[0].action.find("stream = \"JOBS\""), std::string::npos);
}

TEST(WorkFindings, EveryFilterSubjectMustBeInTheFirstOnesStream) {
  auto cfg = daemon_config(
      "[[work]]\nname = \"orders\"\n"
      "subjects = [\"orders.created\", \"orders.paid\", \"mail.sent\", \"nowhere.x\"]\n"
      "sink = { type = \"file\", path = \"out.jsonl\" }\n");
  auto s = snapshot({created_for(cfg, "ORDERS")},
                    {stream("ORDERS", {"orders.*"}), stream("MAIL", {"mail.*"})});
  auto findings = work_findings(cfg, s);
  ASSERT_EQ(rules(findings), (Rules{"work-wrong-stream", "work-no-stream"}));
  EXPECT_EQ(findings[0].stream, "ORDERS");
  EXPECT_NE(findings[0].evidence.find("'mail.sent' in stream 'MAIL'"), std::string::npos)
      << findings[0].evidence;
  EXPECT_NE(findings[1].evidence.find("no stream holds 'nowhere.x'"), std::string::npos)
      << findings[1].evidence;
  EXPECT_NE(findings[1].action.find("add 'nowhere.x' to stream 'ORDERS'"), std::string::npos);

  auto all_in_one = daemon_config(
      "[[work]]\nname = \"orders\"\n"
      "subjects = [\"orders.created\", \"orders.paid\"]\n"
      "sink = { type = \"file\", path = \"out.jsonl\" }\n");
  EXPECT_TRUE(work_findings(all_in_one, snapshot({created_for(all_in_one, "ORDERS")},
                                                 {stream("ORDERS", {"orders.*"})}))
                  .empty());
}

TEST(WorkFindings, MissingConsumerIsCreatedByRunUnlessASuccessorExists) {
  auto cfg = daemon_config(work_entry("jobs-worker", "jobs.run"));
  const auto streams = std::vector{stream("JOBS", {"jobs.>"})};
  auto findings = work_findings(cfg, snapshot({}, streams));
  ASSERT_EQ(rules(findings), Rules{"work-missing"});
  EXPECT_NE(findings[0].action.find("natsfleet run creates it"), std::string::npos);

  Consumer successor = created_for(cfg, "JOBS");
  const std::string name =
      fleet::successor_name("jobs-worker", "JOBS", {"jobs.run"}, WorkShape::pull);
  successor.set("name", name).config("durable_name", name);
  EXPECT_TRUE(work_findings(cfg, snapshot({successor}, streams)).empty())
      << "migrated: the old consumer is gone";
}

TEST(WorkFindings, WrongShapeUnlessACompatibleSuccessorExists) {
  auto cfg = daemon_config(work_entry("jobs-worker", "jobs.run"));
  const auto streams = std::vector{stream("JOBS", {"jobs.>"})};
  Consumer plain_push = Consumer("JOBS", "jobs-worker", "jobs.run").push("deliver.jobs");
  auto findings = work_findings(cfg, snapshot({plain_push}, streams));
  ASSERT_EQ(rules(findings), Rules{"work-wrong-shape"});
  const fleet::ShapeCheck check = fleet::check_shape(cfg.work[0].spec, plain_push.info().config);
  EXPECT_NE(findings[0].evidence.find(check.problem), std::string::npos);
  const std::string name =
      fleet::successor_name("jobs-worker", "JOBS", {"jobs.run"}, WorkShape::pull);
  EXPECT_NE(findings[0].action.find(name), std::string::npos);

  Consumer successor = created_for(cfg, "JOBS");
  successor.set("name", name).config("durable_name", name);
  EXPECT_TRUE(work_findings(cfg, snapshot({plain_push, successor}, streams)).empty());
  successor.config("filter_subject", "jobs.other");
  EXPECT_EQ(rules(work_findings(cfg, snapshot({plain_push, successor}, streams))),
            Rules{"work-wrong-shape"})
      << "a successor of the wrong shape is no migration";
}

TEST(WorkFindings, EachWorkIsJudgedInConfigOrder) {
  auto cfg = daemon_config(work_entry("a", "nowhere.a") + work_entry("b", "jobs.b"));
  auto findings = work_findings(cfg, snapshot({}, {stream("JOBS", {"jobs.>"})}));
  EXPECT_EQ(rules(findings), (Rules{"work-no-stream", "work-missing"}));
}

}  // namespace
}  // namespace natsfleet::audit

namespace natsfleet::audit {
namespace {

BrokerSnapshot counted(std::vector<nats::StreamInfo> streams,
                       std::map<std::string, uint64_t> subjects) {
  BrokerSnapshot s;
  s.streams = std::move(streams);
  s.subject_messages = std::move(subjects);
  return s;
}

TEST(DeadLetterFindings, HeldMessagesAreReportedAndGrowingWhenTheCountRose) {
  auto cfg = config::parse_config(
                 "name = \"svc\"\n[[work]]\nname = \"mail-relay\"\nsubject = \"mail.outgoing\"\n"
                 "dead_letter = \"mail.dead\"\nsink = { type = \"stdout\" }\n",
                 "svc.toml")
                 .value();
  const auto streams = std::vector{stream("DEAD", {"mail.dead"})};
  auto steady = dead_letter_findings(cfg, counted(streams, {{"mail.dead", 3}}),
                                     counted(streams, {{"mail.dead", 3}}));
  ASSERT_EQ(steady.size(), 1u);
  EXPECT_EQ(steady[0].finding, "dead-letters");
  EXPECT_EQ(steady[0].stream, "DEAD");
  EXPECT_EQ(steady[0].consumer, "mail-relay");
  EXPECT_NE(steady[0].evidence.find("svc.toml:2: 'mail.dead' holds 3 dead letters"),
            std::string::npos)
      << steady[0].evidence;
  EXPECT_EQ(steady[0].evidence.find("growing"), std::string::npos);
  EXPECT_NE(steady[0].action.find("natsfleet dead-letters list"), std::string::npos);

  auto growing = dead_letter_findings(cfg, counted(streams, {{"mail.dead", 1}}),
                                      counted(streams, {{"mail.dead", 4}}));
  ASSERT_EQ(growing.size(), 1u);
  EXPECT_NE(growing[0].evidence.find("growing (1 at the first sample)"), std::string::npos)
      << growing[0].evidence;

  EXPECT_TRUE(dead_letter_findings(cfg, counted(streams, {{"mail.dead", 2}}),
                                   counted(streams, {{"mail.dead", 0}}))
                  .empty());
}

TEST(DeadLetterFindings, NoStreamHoldsTheSubjectAndWorksWithoutOneAreSkipped) {
  auto cfg =
      config::parse_config(
          "name = \"svc\"\n[[work]]\nname = \"plain\"\nsubject = \"a.b\"\nsink = { type = "
          "\"stdout\" }\n[[work]]\nname = \"kept\"\nsubject = \"a.c\"\ndead_letter = \"dead.c\"\n"
          "sink = { type = \"stdout\" }\n",
          "svc.toml")
          .value();
  const auto none = counted({stream("A", {"a.>"})}, {});
  auto findings = dead_letter_findings(cfg, none, none);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].finding, "dead-letter-stream-missing");
  EXPECT_EQ(findings[0].stream, "");
  EXPECT_EQ(findings[0].consumer, "kept");
  EXPECT_NE(findings[0].evidence.find("svc.toml:6: no stream holds dead_letter subject 'dead.c'"),
            std::string::npos)
      << findings[0].evidence;
}

}  // namespace
}  // namespace natsfleet::audit
