// Consumer shapes on a real broker: a wrong shape is migrated to a successor without losing
// pending work, mutable drift is updated in place, push-queue fleets share a deliver group, and a
// JetStream broadcast misses nothing across a broker restart.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/child_process.h"
#include "consume/ack_metadata.h"
#include "fleet/consumer_shape.h"
#include "natsfleet/fleet.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/recorder.h"

namespace natsfleet::testing {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

// A plain durable push consumer, the shape an older release created: one subscriber only.
nats::ConsumerConfig plain_push(const std::string& name, const std::string& subject,
                                const std::string& deliver_subject) {
  return nats::parse_consumer_config({{"durable_name", name},
                                      {"deliver_subject", deliver_subject},
                                      {"ack_policy", "explicit"},
                                      {"ack_wait", 30 * kSecond},
                                      {"filter_subject", subject},
                                      {"deliver_policy", "all"},
                                      {"max_ack_pending", 1000},
                                      {"replay_policy", "instant"}});
}

bool consumer_exists(BrokerClient& admin, const std::string& stream, const std::string& name) {
  return admin.api().consumer_info(stream, name).ok();
}

std::set<std::string> consumers_of(BrokerClient& admin, const std::string& stream) {
  auto names = admin.api().consumer_names(stream);
  return names ? std::set<std::string>(names->begin(), names->end()) : std::set<std::string>{};
}

std::string bound_consumer(const Fleet& fleet) {
  auto health = fleet.health();
  return health.subscriptions.empty() ? std::string() : health.subscriptions.front().consumer;
}

// The incident's stream layout: the subject lives on DAEMON_SYNC, not on the service's own
// stream, and a plain push durable with 500 messages, the first 200 acked, is bound by nobody.
void replay_failure_a(BrokerClient& admin) {
  admin.create_stream("EMAIL_NOTIFICATIONS", {"email.>"});
  admin.create_stream("DAEMON_SYNC", {"daemon.sync.complete", "daemon.sync.started"});
  admin.publish_many("daemon.sync.complete", 500);
  ASSERT_TRUE(admin.api().create_consumer(
      "DAEMON_SYNC", plain_push("sync-listener", "daemon.sync.complete", "deliver.sync")));
  auto old_release =
      admin.connection().subscribe("deliver.sync", "", [&](nats::InboundMessage&& m) {
        auto delivery = consume::parse_ack_subject(m.reply);
        if (delivery && delivery->stream_seq <= 200)
          (void)admin.connection().publish(m.reply, std::string(consume::kAckBody));
      });
  ASSERT_TRUE(old_release);
  ASSERT_TRUE(wait_for(
      [&] {
        auto info = admin.consumer("DAEMON_SYNC", "sync-listener");
        return info.ack_floor_stream_seq == 200 && info.num_ack_pending == 300;
      },
      10s));
  old_release.value().reset();  // the old pod is gone: the consumer is bound by nobody
}

TEST(Migration, FailureAReplayedTwoReplicasConvergeOnOneSuccessorAndLoseNothing) {
  NatsServer server;
  BrokerClient admin(server.url());
  replay_failure_a(admin);
  if (HasFatalFailure()) return;
  const std::string successor = fleet::successor_name("sync-listener", "DAEMON_SYNC",
                                                      {"daemon.sync.complete"}, WorkShape::pull);

  Recorder seen;
  auto options = [&](const char* name) {
    auto o = fast_options({server.url()}, name);
    o.retire_grace = 1s;
    return o;
  };
  Fleet a(options("replica-a"));
  Fleet b(options("replica-b"));
  for (auto [fleet, name] : {std::pair{&a, "a"}, std::pair{&b, "b"}}) {
    ASSERT_TRUE(fleet->add_work(fast_work("sync-listener", "daemon.sync.complete"),
                                [&seen, name](const Message& m) {
                                  seen.record(name, m);
                                  return Disposition::ack();
                                }));
  }
  // Both replicas reconcile at the same moment.
  ASSERT_TRUE(a.start());
  ASSERT_TRUE(b.start());
  ASSERT_TRUE(wait_for([&] { return a.health().ready && b.health().ready; }, 15s));
  EXPECT_EQ(bound_consumer(a), successor);
  EXPECT_EQ(bound_consumer(b), successor);
  // A replica starting now asks by the work's name whether anyone is bound: bound to the
  // successor, they answer.
  auto peers = admin.connection().request("_NATSFLEET.peers.DAEMON_SYNC.sync-listener", "", 2s);
  EXPECT_TRUE(peers) << peers.error().describe();

  // Every message the old consumer had not acked is handled; nothing it acked comes back.
  ASSERT_TRUE(seen.wait_distinct(300, 30s)) << seen.locked([](auto& r) { return r.distinct(); });
  seen.locked([](const Recorder& r) {
    for (int i = 200; i < 500; ++i) EXPECT_TRUE(r.saw("m" + std::to_string(i))) << i;
    for (int i = 0; i < 200; ++i) EXPECT_FALSE(r.saw("m" + std::to_string(i))) << i;
    return 0;
  });
  auto info = admin.consumer("DAEMON_SYNC", successor);
  EXPECT_EQ(info.config.opt_start_seq, 201u);
  EXPECT_TRUE(info.is_pull());

  // The old consumer, bound by nobody, is retired; one successor remains; the service's own
  // stream is untouched.
  ASSERT_TRUE(
      wait_for([&] { return !consumer_exists(admin, "DAEMON_SYNC", "sync-listener"); }, 15s));
  EXPECT_EQ(consumers_of(admin, "DAEMON_SYNC"), std::set<std::string>{successor});
  EXPECT_TRUE(consumers_of(admin, "EMAIL_NOTIFICATIONS").empty());

  // New work flows through the successor, shared by both replicas.
  admin.publish_many("daemon.sync.complete", 100, "n");
  ASSERT_TRUE(seen.wait_distinct(400, 20s));
}

TEST(Migration, AnOldShapeConsumerIsNotDeletedWhileSomethingIsBoundToIt) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("DAEMON_SYNC", {"daemon.sync.complete"});
  ASSERT_TRUE(admin.api().create_consumer(
      "DAEMON_SYNC", plain_push("sync-listener", "daemon.sync.complete", "deliver.sync")));
  // An older release's pod still consumes the plain durable.
  std::atomic<int> old_release_got{0};
  auto old_release =
      admin.connection().subscribe("deliver.sync", "", [&](nats::InboundMessage&& m) {
        ++old_release_got;
        (void)admin.connection().publish(m.reply, std::string(consume::kAckBody));
      });
  ASSERT_TRUE(old_release);
  ASSERT_TRUE(
      wait_for([&] { return admin.consumer("DAEMON_SYNC", "sync-listener").push_bound; }, 5s));

  auto options = fast_options({server.url()}, "new-release");
  options.retire_grace = 300ms;
  Fleet fleet(options);
  Recorder seen;
  ASSERT_TRUE(
      fleet.add_work(fast_work("sync-listener", "daemon.sync.complete"), [&](const Message& m) {
        seen.record("new", m);
        return Disposition::ack();
      }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));

  // Well past the grace period, both shapes run side by side: nothing is lost meanwhile.
  admin.publish_many("daemon.sync.complete", 20);
  ASSERT_TRUE(seen.wait_distinct(20, 10s));
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(consumer_exists(admin, "DAEMON_SYNC", "sync-listener"));
  EXPECT_EQ(old_release_got.load(), 20);

  // Once the old pod is gone, the old consumer goes too.
  old_release.value().reset();
  EXPECT_TRUE(
      wait_for([&] { return !consumer_exists(admin, "DAEMON_SYNC", "sync-listener"); }, 10s));
}

TEST(Migration, MutableDriftIsUpdatedInPlaceNotMigrated) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("DAEMON_SYNC", {"daemon.sync.complete"});
  auto spec = fast_work("sync-listener", "daemon.sync.complete");
  auto drifted = fleet::desired_consumer_config(spec);
  drifted.ack_wait = std::chrono::seconds(10);
  drifted.max_deliver = 9;
  auto created = admin.api().create_consumer("DAEMON_SYNC", drifted);
  ASSERT_TRUE(created);
  admin.publish_many("daemon.sync.complete", 20);

  Fleet fleet(fast_options({server.url()}, "replica"));
  Recorder seen;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    seen.record("r", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(seen.wait_distinct(20, 10s));
  auto info = admin.consumer("DAEMON_SYNC", "sync-listener");
  EXPECT_EQ(info.config.ack_wait, spec.flow.ack_wait);
  EXPECT_EQ(info.config.max_deliver, fleet::kBrokerMaxDeliver);
  // The same consumer, not a new one: its creation time is unchanged and no successor exists.
  EXPECT_EQ(info.created, created->created);
  EXPECT_EQ(consumers_of(admin, "DAEMON_SYNC"), std::set<std::string>{"sync-listener"});
  EXPECT_EQ(bound_consumer(fleet), "sync-listener");
}

// A replica in its own process, so the test can kill it.
class ReplicaProcess {
 public:
  ReplicaProcess(const std::string& url, const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        NATSFLEET_REPLICA_BIN, "--server", url,     "--work", "jobs-queue",
        "--subject",           "jobs.run", "--out", out};
    args.insert(args.end(), extra.begin(), extra.end());
    auto started = base::ChildProcess::start(args, {.search_path = false});
    EXPECT_TRUE(started) << started.error().describe();
    if (started) child_ = std::move(started.value());
  }
  bool running() const { return child_.pid() > 0; }
  void kill_now() { child_.kill(); }

 private:
  base::ChildProcess child_;  // killed and reaped when the test ends
};

std::set<std::string> lines_of(const std::string& path) {
  std::set<std::string> data;
  std::ifstream in(path);
  for (std::string seq, payload; in >> seq >> payload;) data.insert(payload);
  return data;
}

// How many subscriptions the broker holds in queue group `group` (from its /subsz monitor).
size_t queue_subscribers(const NatsServer& server, const std::string& group) {
  int status = 0;
  const auto subsz = nlohmann::json::parse(
      http_get(server.monitor_port(), "/subsz?subs=1&limit=1024", &status), nullptr, false);
  if (status != 200 || !subsz.is_object()) return 0;
  size_t n = 0;
  for (const auto& sub : subsz.value("subscriptions_list", nlohmann::json::array()))
    if (sub.value("qgroup", "") == group) ++n;
  return n;
}

class PushQueue : public ::testing::TestWithParam<OnMissing> {};

TEST_P(PushQueue, ReplicasShareADeliverGroupSurvivorTakesOverMissingRuleApplies) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  char out_template[] = "/tmp/natsfleet-queue-replica-XXXXXX";
  int fd = mkstemp(out_template);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string out = out_template;

  ReplicaProcess doomed(server.url(), out, {"--push-queue"});
  ASSERT_TRUE(doomed.running());
  std::atomic<int> fatals{0};
  Recorder seen;
  Fleet survivor(fast_options({server.url()}, "survivor"));
  auto spec = fast_work("jobs-queue", "jobs.run");
  spec.shape = WorkShape::push_queue;
  spec.failure.missing_consumer = GetParam();
  ASSERT_TRUE(survivor.add_work(spec, [&](const Message& m) {
    seen.record("survivor", m);
    return Disposition::ack();
  }));
  survivor.on_fatal([&](const FatalReport&) { ++fatals; });
  ASSERT_TRUE(survivor.start());
  ASSERT_TRUE(wait_for(
      [&] {
        auto info = admin.api().consumer_info("JOBS", "jobs-queue");
        return survivor.health().ready && info && info->push_bound;
      },
      10s));
  auto info = admin.consumer("JOBS", "jobs-queue");
  EXPECT_EQ(info.config.deliver_group, "jobs-queue");
  // The other process's queue subscription is registered too.
  ASSERT_TRUE(wait_for([&] { return queue_subscribers(server, "jobs-queue") == 2; }, 15s))
      << queue_subscribers(server, "jobs-queue") << " subscribers in the deliver group";

  // Shared: each message handled by one replica, both take part.
  admin.publish_many("jobs.run", 200);
  ASSERT_TRUE(wait_for(
      [&] {
        auto all = lines_of(out);
        seen.locked([&](const Recorder& r) {
          for (int i = 0; i < 200; ++i)
            if (r.saw("m" + std::to_string(i))) all.insert("m" + std::to_string(i));
          return 0;
        });
        return all.size() == 200;
      },
      15s));
  EXPECT_GT(lines_of(out).size(), 0u) << "the other replica took part";
  EXPECT_GT(seen.locked([](const Recorder& r) { return r.total(); }), 0u);

  // One replica dies: the survivor takes all new work.
  doomed.kill_now();
  admin.publish_many("jobs.run", 100, "n");
  ASSERT_TRUE(wait_for(
      [&] {
        return seen.locked([](const Recorder& r) {
          for (int i = 0; i < 100; ++i)
            if (!r.saw("n" + std::to_string(i))) return false;
          return true;
        });
      },
      15s));

  // The consumer is deleted on the broker: recreate or fatal, as configured.
  admin.delete_consumer("JOBS", "jobs-queue");
  if (GetParam() == OnMissing::exit) {
    ASSERT_TRUE(wait_for([&] { return fatals.load() == 1; }, 10s));
  } else {
    ASSERT_TRUE(wait_for([&] { return consumer_exists(admin, "JOBS", "jobs-queue"); }, 10s));
    admin.publish_many("jobs.run", 10, "r");
    ASSERT_TRUE(
        wait_for([&] { return seen.locked([](const Recorder& r) { return r.saw("r9"); }); }, 10s));
    EXPECT_EQ(fatals.load(), 0);
  }
  std::remove(out.c_str());
}

INSTANTIATE_TEST_SUITE_P(OnMissing, PushQueue,
                         ::testing::Values(OnMissing::recreate, OnMissing::exit),
                         [](const auto& p) {
                           return p.param == OnMissing::recreate ? "Recreate" : "Exit";
                         });

BroadcastSpec jetstream_broadcast() {
  return {.name = "status",
          .subject = "member.*.status",
          .source = BroadcastSource::jetstream,
          .heartbeat = 250ms};
}

TEST(JetStreamBroadcast, EveryReplicaGetsEveryMessageAcrossABrokerRestart) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("STATUS", {"member.*.status"});
  admin.publish_many("member.x.status", 5, "before-start");  // not new: nobody gets these
  Recorder seen;
  std::vector<std::unique_ptr<Fleet>> replicas;
  for (const char* name : {"r1", "r2"}) {
    // Slow to reconnect: the broker is back and takes statuses while the replicas are away.
    auto options = fast_options({server.url()}, name);
    options.reconnect_wait_min = options.reconnect_wait_max = 1500ms;
    auto fleet = std::make_unique<Fleet>(options);
    ASSERT_TRUE(fleet->add_broadcast(jetstream_broadcast(), [&seen, name](const Message& m) {
      seen.record(name, Message(m.subject(), name + std::string(":") + m.data(), {}));
    }));
    ASSERT_TRUE(fleet->start());
    replicas.push_back(std::move(fleet));
  }
  ASSERT_TRUE(
      wait_for([&] { return replicas[0]->health().ready && replicas[1]->health().ready; }, 10s));
  admin.publish_many("member.alice.status", 50, "a");
  ASSERT_TRUE(seen.wait_distinct(100, 10s));

  // The broker restarts; statuses are published before the replicas are back.
  server.restart();
  admin.publish_many("member.bob.status", 50, "b");
  ASSERT_TRUE(seen.wait_distinct(200, 30s)) << seen.locked([](auto& r) { return r.distinct(); });
  seen.locked([](const Recorder& r) {
    for (const char* replica : {"r1", "r2"})
      for (const char* prefix : {"a", "b"})
        for (int i = 0; i < 50; ++i)
          EXPECT_TRUE(r.saw(std::string(replica) + ":" + prefix + std::to_string(i)))
              << replica << " missed " << prefix << i;
    EXPECT_FALSE(r.saw("r1:before-start0"));
    return 0;
  });
}

TEST(JetStreamBroadcast, ALostReplicaConsumerIsRecreatedAfterTheLastMessageSeen) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("STATUS", {"member.*.status"});
  Recorder seen;
  Fleet fleet(fast_options({server.url()}, "relay"));
  ASSERT_TRUE(fleet.add_broadcast(jetstream_broadcast(),
                                  [&](const Message& m) { seen.record("relay", m); }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  admin.publish_many("member.alice.status", 10, "a");
  ASSERT_TRUE(seen.wait_distinct(10, 10s));

  // Its consumer vanishes (inactivity, a lost store); statuses keep coming meanwhile.
  const std::string mine = bound_consumer(fleet);
  ASSERT_FALSE(mine.empty());
  admin.delete_consumer("STATUS", mine);
  admin.publish_many("member.alice.status", 10, "b");
  ASSERT_TRUE(seen.wait_distinct(20, 15s)) << seen.locked([](auto& r) { return r.distinct(); });
  seen.locked([](const Recorder& r) {
    EXPECT_EQ(r.duplicates(), 0u);
    return 0;
  });
  EXPECT_TRUE(consumer_exists(admin, "STATUS", mine));
}

// nats-server 2.10 holds a consumer create to creating and an update to updating: a replica
// that recreates a consumer a peer made a moment before gets an error (and then uses the
// peer's), never a rewrite of it; an update of a consumer that is gone makes none.
TEST(ConsumerActions, OnBroker210ACreateNeverRewritesAndAnUpdateNeverCreates) {
  if (nats_server_version() < std::pair{2, 10})
    GTEST_SKIP() << "nats-server 2.9 ignores the action: a create or an update is an upsert";
  NatsServer server;
  BrokerClient admin{server.url()};
  admin.create_stream("ACTIONS", {"actions.>"});
  const auto config = nats::parse_consumer_config({{"durable_name", "mover"},
                                                   {"ack_policy", "explicit"},
                                                   {"ack_wait", 30 * kSecond},
                                                   {"filter_subject", "actions.a"},
                                                   {"deliver_policy", "all"}});
  ASSERT_TRUE(admin.api().create_consumer("ACTIONS", config));
  auto changed = config;
  changed.ack_wait = std::chrono::seconds(10);
  EXPECT_FALSE(admin.api().create_consumer("ACTIONS", changed));
  EXPECT_EQ(admin.api().consumer_info("ACTIONS", "mover")->config.ack_wait,
            std::chrono::seconds(30));
  EXPECT_TRUE(admin.api().create_consumer("ACTIONS", config));  // the same config: its info
  ASSERT_TRUE(admin.api().update_consumer("ACTIONS", changed));
  EXPECT_EQ(admin.api().consumer_info("ACTIONS", "mover")->config.ack_wait,
            std::chrono::seconds(10));
  auto gone = config;
  gone.durable_name = "gone";
  EXPECT_FALSE(admin.api().update_consumer("ACTIONS", gone));
  EXPECT_FALSE(consumer_exists(admin, "ACTIONS", "gone"));
}

// One consumer filtering several subjects (nats-server 2.10): the work gets those and nothing
// else of its stream, and the consumer says on the broker which work it serves.
TEST(SeveralSubjects, OnBroker210OneConsumerFiltersThemAllAndNothingElse) {
  if (nats_server_version() < std::pair{2, 10})
    GTEST_SKIP() << "nats-server 2.9 has no filter_subjects (the next test covers it)";
  NatsServer server;
  BrokerClient admin{server.url()};
  admin.create_stream("ORDERS", {"orders.>"});
  std::mutex mu;
  std::map<std::string, int> by_subject;
  Recorder seen;
  Fleet fleet(fast_options({server.url()}, "billing"));
  WorkSpec spec = fast_work("orders", "");
  spec.subjects = {"orders.created", "orders.paid"};
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    {
      std::lock_guard lock(mu);
      ++by_subject[m.subject()];
    }
    seen.record("billing", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s))
      << fleet.health().subscriptions.at(0).last_error;
  admin.publish_many("orders.audit", 10, "audit-");
  admin.publish_many("orders.created", 10, "created-");
  admin.publish_many("orders.paid", 10, "paid-");
  ASSERT_TRUE(seen.wait_distinct(20, 10s));
  fleet.shutdown(5s);
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(by_subject,
              (std::map<std::string, int>{{"orders.created", 10}, {"orders.paid", 10}}));
  }
  const auto info = admin.api().consumer_info("ORDERS", "orders");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->config.filter_subjects, spec.subjects);
  EXPECT_EQ(info->config.metadata.at(fleet::kWorkMetadataKey), "orders");
  EXPECT_EQ(info->num_pending, 0u) << "orders.audit is not the consumer's";
  EXPECT_EQ(fleet.health().subscriptions.at(0).subject, "orders.created, orders.paid");
}

TEST(SeveralSubjects, OnBroker29TheWorkIsFatalNamesTheVersionAndMakesNoConsumer) {
  if (nats_server_version() >= std::pair{2, 10})
    GTEST_SKIP() << "2.10 and later have filter_subjects";
  NatsServer server;
  BrokerClient admin{server.url()};
  admin.create_stream("ORDERS", {"orders.>"});
  WorkSpec spec = fast_work("orders", "");
  spec.subjects = {"orders.created", "orders.paid"};
  std::mutex mu;
  std::string reason;
  Fleet fleet(fast_options({server.url()}, "billing"));
  ASSERT_TRUE(fleet.add_work(spec, [](const Message&) { return Disposition::ack(); }));
  fleet.on_fatal([&](const FatalReport& report) {
    std::lock_guard lock(mu);
    reason = report.reason;
  });
  ASSERT_TRUE(fleet.start());
  auto fatal_reason = [&] {
    std::lock_guard lock(mu);
    return reason;
  };
  ASSERT_TRUE(wait_for([&] { return !fatal_reason().empty(); }, 10s))
      << fleet.health().subscriptions.at(0).last_error;
  EXPECT_NE(fatal_reason().find("needs nats-server 2.10 or newer"), std::string::npos)
      << fatal_reason();
  EXPECT_NE(fatal_reason().find("runs 2.9."), std::string::npos) << fatal_reason();
  EXPECT_FALSE(fleet.health().ready);
  EXPECT_TRUE(consumers_of(admin, "ORDERS").empty());
}

}  // namespace
}  // namespace natsfleet::testing
