// Shared work and broadcast on a healthy broker: the contract replicas rely on.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>

#include "base/child_process.h"
#include "consume/ack_metadata.h"
#include "consume/pull_status.h"
#include "fleet/consumer_shape.h"
#include "natsfleet/fleet.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/recorder.h"

namespace natsfleet::testing {
namespace {

TEST(WorkSharing, TwoReplicasShareTenThousandMessagesEachExactlyOnce) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Recorder seen;
  Fleet a(fast_options({server.url()}, "replica-a"));
  Fleet b(fast_options({server.url()}, "replica-b"));
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.flow.ack_wait = 30s;  // nothing should be redelivered: the count of duplicates must be zero
  // Handlers that take a moment, as real ones do: with instant ones, whichever replica's thread
  // the scheduler favours during the ~150 ms burst re-pulls first and takes nearly everything.
  ASSERT_TRUE(a.add_work(spec, [&](const Message& m) {
    seen.record("a", m);
    std::this_thread::sleep_for(200us);
    return Disposition::ack();
  }));
  ASSERT_TRUE(b.add_work(spec, [&](const Message& m) {
    seen.record("b", m);
    std::this_thread::sleep_for(200us);
    return Disposition::ack();
  }));
  ASSERT_TRUE(a.start());
  ASSERT_TRUE(b.start());
  ASSERT_TRUE(wait_for([&] { return a.health().ready && b.health().ready; }, 10s));

  admin.publish_many("jobs.run", 10'000);
  ASSERT_TRUE(seen.wait_distinct(10'000, 60s))
      << "handled " << seen.locked([](auto& r) { return r.distinct(); });
  ASSERT_TRUE(
      wait_for([&] { return admin.consumer("JOBS", "jobs-worker").num_ack_pending == 0; }, 10s));
  seen.locked([](const Recorder& r) {
    EXPECT_EQ(r.total(), 10'000u);
    EXPECT_EQ(r.duplicates(), 0u);
    EXPECT_EQ(r.redelivered(), 0u);
    // A real share: each replica handled a meaningful part, not a token message.
    EXPECT_GT(r.of("a"), 1'000u);
    EXPECT_GT(r.of("b"), 1'000u);
    return 0;
  });
  auto info = admin.consumer("JOBS", "jobs-worker");
  EXPECT_EQ(info.num_pending, 0u);
  EXPECT_EQ(info.ack_floor_stream_seq, 10'000u);
}

TEST(WorkSharing, SurvivorHandlesWorkOfAReplicaKilledMidFlight) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  char out_template[] = "/tmp/natsfleet-replica-XXXXXX";
  int fd = mkstemp(out_template);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string out = out_template;

  // The doomed replica holds every message it gets and never acks.
  std::string url = server.url();
  std::vector<std::string> args = {NATSFLEET_REPLICA_BIN,
                                   "--server",
                                   url,
                                   "--work",
                                   "jobs-worker",
                                   "--subject",
                                   "jobs.run",
                                   "--out",
                                   out,
                                   "--ack-wait-ms",
                                   "2000",
                                   "--hold"};
  auto doomed = base::ChildProcess::start(args, {.search_path = false});
  ASSERT_TRUE(doomed) << doomed.error().describe();

  auto held_lines = [&] {
    std::ifstream in(out);
    size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  };
  // Wait until the doomed replica has bound the consumer (it creates it), then publish.
  ASSERT_TRUE(wait_for([&] { return admin.api().consumer_info("JOBS", "jobs-worker").ok(); }, 10s));
  admin.publish_many("jobs.run", 50);
  ASSERT_TRUE(wait_for([&] { return held_lines() == 50; }, 10s)) << held_lines();
  doomed->kill();

  Recorder seen;
  Fleet survivor(fast_options({server.url()}, "survivor"));
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.flow.ack_wait = 2s;
  ASSERT_TRUE(survivor.add_work(spec, [&](const Message& m) {
    seen.record("survivor", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(survivor.start());
  const auto started = std::chrono::steady_clock::now();
  // Nothing is lost: every in-flight message comes back once ack_wait expires.
  ASSERT_TRUE(seen.wait_distinct(50, 15s));
  const auto took = std::chrono::steady_clock::now() - started;
  seen.locked([](const Recorder& r) {
    EXPECT_EQ(r.redelivered(), 50u) << "each was a redelivery of the killed replica's work";
    return 0;
  });
  EXPECT_LT(took, 10s);
  ASSERT_TRUE(
      wait_for([&] { return admin.consumer("JOBS", "jobs-worker").num_ack_pending == 0; }, 10s));
  std::remove(out.c_str());
}

// A running fleet takes new subscriptions and lets one go while the others run on: a removed
// work finishes and acks what it started, gives back what it had not, and the same work added
// again takes up the rest, each message handled once.
TEST(RuntimeSubscriptions, AddedToARunningFleetAndRemovedWithoutTouchingTheOthers) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  admin.create_stream("MAIL", {"mail.>"});
  Recorder seen;
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto jobs = fast_work("jobs-worker", "jobs.run");
  jobs.flow.ack_wait = 30s;  // a redelivery could only be an ack the removal lost
  jobs.flow.concurrency = 4;
  auto handle_jobs = [&](const Message& m) {
    std::this_thread::sleep_for(1ms);
    seen.record("jobs", m);
    return Disposition::ack();
  };
  ASSERT_TRUE(fleet.add_work(jobs, handle_jobs));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));

  // Added after start(): it binds at once, beside the running one.
  std::atomic<int> mail{0};
  ASSERT_TRUE(fleet.add_work(fast_work("mailer", "mail.send"), [&](const Message&) {
    ++mail;
    return Disposition::ack();
  }));
  ASSERT_TRUE(wait_for(
      [&] {
        auto h = fleet.health();
        return h.ready && h.subscriptions.size() == 2;
      },
      10s));
  admin.publish_many("mail.send", 100);
  ASSERT_TRUE(wait_for([&] { return mail == 100; }, 20s)) << mail;

  // Removed mid-backlog: the mailer keeps running.
  constexpr size_t kJobs = 3'000;
  admin.publish_many("jobs.run", kJobs);
  ASSERT_TRUE(seen.wait_until([](const Recorder& r) { return r.distinct() >= 300; }, 30s));
  ASSERT_TRUE(fleet.remove("jobs-worker", 5s));
  const size_t handled_before = seen.locked([](auto& r) { return r.total(); });
  EXPECT_LT(handled_before, kJobs) << "the backlog was done before the removal";
  auto h = fleet.health();
  ASSERT_EQ(h.subscriptions.size(), 1u);
  EXPECT_EQ(h.subscriptions[0].name, "mailer");
  EXPECT_EQ(h.subscriptions[0].state, SubscriptionState::bound);
  // What it handled was acked before remove() returned.
  auto info = admin.consumer("JOBS", "jobs-worker");
  EXPECT_EQ(info.ack_floor_stream_seq, handled_before);
  EXPECT_EQ(fleet.remove("jobs-worker", 1s).error().code, Errc::invalid_argument);

  // The same work again takes up the rest: what the removal gave back comes at once, well
  // within ack_wait.
  ASSERT_TRUE(fleet.add_work(jobs, handle_jobs));
  ASSERT_TRUE(seen.wait_distinct(kJobs, 20s)) << seen.locked([](auto& r) { return r.distinct(); });
  seen.locked([&](const Recorder& r) {
    EXPECT_EQ(r.duplicates(), 0u);
    EXPECT_EQ(r.total(), kJobs);
    return 0;
  });
  admin.publish_many("mail.send", 10);
  ASSERT_TRUE(wait_for([&] { return mail == 110; }, 20s)) << mail;
}

TEST(Broadcast, ReachesEveryReplica) {
  NatsServer server;
  BrokerClient admin(server.url());
  Recorder seen;
  std::vector<std::unique_ptr<Fleet>> replicas;
  for (const char* name : {"r1", "r2", "r3"}) {
    auto fleet = std::make_unique<Fleet>(fast_options({server.url()}, name));
    ASSERT_TRUE(fleet->add_broadcast(
        {.name = "status", .subject = "member.*.status"}, [&seen, name](const Message& m) {
          seen.record(name, Message(name + std::string(":") + m.subject(), m.data(), {}));
        }));
    ASSERT_TRUE(fleet->start());
    replicas.push_back(std::move(fleet));
  }
  ASSERT_TRUE(wait_for(
      [&] {
        for (auto& r : replicas)
          if (!r->health().ready) return false;
        return true;
      },
      10s));
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(admin.connection().publish("member." + std::to_string(i) + ".status", "synced"));
  ASSERT_TRUE(admin.connection().flush(2s));
  ASSERT_TRUE(seen.wait_until([](const Recorder& r) { return r.total() == 300; }, 10s));
  seen.locked([](const Recorder& r) {
    EXPECT_EQ(r.of("r1"), 100u);
    EXPECT_EQ(r.of("r2"), 100u);
    EXPECT_EQ(r.of("r3"), 100u);
    return 0;
  });
}

// A handler that owns what cannot be copied (a std::unique_ptr here) is moved in and called.
TEST(Handlers, OnesThatCannotBeCopiedAreMovedInAndCalled) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  auto work_count = std::make_unique<std::atomic<int>>(0);
  auto broadcast_count = std::make_unique<std::atomic<int>>(0);
  const std::atomic<int>& worked = *work_count;
  const std::atomic<int>& heard = *broadcast_count;
  Fleet fleet(fast_options({server.url()}, "replica-a"));
  auto work = [owned = std::move(work_count)](const Message&) {
    owned->fetch_add(1);
    return Disposition::ack();
  };
  static_assert(!std::is_copy_constructible_v<decltype(work)>);
  ASSERT_TRUE(fleet.add_work(fast_work("jobs-worker", "jobs.run"), std::move(work)));
  ASSERT_TRUE(fleet.add_broadcast(
      {.name = "status", .subject = "member.*.status"},
      [owned = std::move(broadcast_count)](const Message&) { owned->fetch_add(1); }));
  fleet.on_fatal([owned = std::make_unique<int>(70)](const FatalReport&) {});
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));

  admin.publish_many("jobs.run", 20);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(admin.connection().publish("member." + std::to_string(i) + ".status", "synced"));
  ASSERT_TRUE(admin.connection().flush(2s));
  EXPECT_TRUE(wait_for([&] { return worked.load() == 20 && heard.load() == 5; }, 10s))
      << worked.load() << " work, " << heard.load() << " broadcast";
  fleet.shutdown(2s);
}

// Nothing is added once a fleet has shut down, and both kinds of subscription say so alike.
TEST(RuntimeSubscriptions, AddedAfterShutdownAreRefusedAsShuttingDown) {
  NatsServer server;
  Fleet fleet(fast_options({server.url()}, "replica-a"));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().connected; }, 10s));
  fleet.shutdown(2s);
  auto late_work = fleet.add_work(fast_work("late", "jobs.late"),
                                  [](const Message&) { return Disposition::ack(); });
  ASSERT_FALSE(late_work);
  EXPECT_EQ(late_work.error().code, Errc::shutting_down);
  auto late_broadcast =
      fleet.add_broadcast({.name = "late", .subject = "late.*"}, [](const Message&) {});
  ASSERT_FALSE(late_broadcast);
  EXPECT_EQ(late_broadcast.error().code, Errc::shutting_down);
}

TEST(Binding, WaitsForTheBrokerAndThenForTheStream) {
  const int port = free_loopback_port();
  const std::string url = "nats://127.0.0.1:" + std::to_string(port);
  Recorder seen;
  Fleet fleet(fast_options({url}, "early"));
  ASSERT_TRUE(fleet.add_work(fast_work("late-worker", "late.jobs"), [&](const Message& m) {
    seen.record("early", m);
    return Disposition::ack();
  }));
  bool fatal = false;
  fleet.on_fatal([&](const FatalReport&) { fatal = true; });
  // start() must not block on a broker that is not there.
  const auto before = std::chrono::steady_clock::now();
  ASSERT_TRUE(fleet.start());
  EXPECT_LT(std::chrono::steady_clock::now() - before, 1s);
  std::this_thread::sleep_for(1500ms);  // long enough for several connect attempts to fail
  EXPECT_FALSE(fleet.health().ready);
  EXPECT_EQ(fleet.health().subscriptions.at(0).state, SubscriptionState::binding);

  NatsServerOptions options;
  options.port = port;
  NatsServer server(options);
  ASSERT_TRUE(wait_for([&] { return fleet.health().connected; }, 10s));
  // Connected, but no stream holds the subject yet: still binding, and saying why.
  std::this_thread::sleep_for(500ms);
  auto h = fleet.health().subscriptions.at(0);
  EXPECT_EQ(h.state, SubscriptionState::binding);
  EXPECT_NE(h.last_error.find("no stream"), std::string::npos) << h.last_error;

  BrokerClient admin(server.url());
  admin.create_stream("LATE", {"late.>"});
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  admin.publish_many("late.jobs", 20);
  EXPECT_TRUE(seen.wait_distinct(20, 10s));
  EXPECT_FALSE(fatal);
}

TEST(Handlers, ExceptionIsNakWithBackoffThenTermAfterMaxDeliver) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Fleet fleet(fast_options({server.url()}, "poison"));
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.failure.max_deliver = 3;
  std::atomic<int> attempts_on_poison{0};
  Recorder good;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) -> Disposition {
    if (m.data() == "poison") {
      ++attempts_on_poison;
      throw std::runtime_error("cannot parse");
    }
    good.record("r", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  admin.publish("jobs.run", "poison");
  admin.publish_many("jobs.run", 10);
  ASSERT_TRUE(good.wait_distinct(10, 10s));
  ASSERT_TRUE(wait_for(
      [&] {
        auto h = fleet.health().subscriptions.at(0);
        return h.counters.termed == 1;
      },
      10s));
  EXPECT_EQ(attempts_on_poison.load(), 3);
  auto h = fleet.health();
  EXPECT_TRUE(h.live);
  EXPECT_EQ(h.subscriptions.at(0).counters.handler_errors, 3u);
  EXPECT_EQ(h.subscriptions.at(0).counters.naked, 2u);
  ASSERT_TRUE(
      wait_for([&] { return admin.consumer("JOBS", "jobs-worker").num_ack_pending == 0; }, 5s));
}

// Takes the consumer's next message `times` times and naks each at once: the broker counts as
// many deliveries, none of which reached a replica (as nats-server before 2.9.22 counts a send
// that failed).
::testing::AssertionResult nak_deliveries(BrokerClient& admin, const std::string& consumer,
                                          int times) {
  for (int i = 0; i < times; ++i) {
    auto m = admin.connection().request("$JS.API.CONSUMER.MSG.NEXT.JOBS." + consumer,
                                        R"({"batch":1,"expires":5000000000})", 10s);
    if (!m) return ::testing::AssertionFailure() << "pull " << i << ": " << m.error().describe();
    if (m->reply.empty() || m->status != 0)
      return ::testing::AssertionFailure() << "pull " << i << " got no message: " << m->status;
    if (!admin.connection().publish(m->reply, "-NAK"))
      return ::testing::AssertionFailure() << "nak " << i << " not sent";
  }
  return ::testing::AssertionSuccess();
}

// Many deliveries with no verdict set a message aside only when it is old enough for that many
// to have been real (each takes ack_wait): a message the broker counted 8 deliveries of
// (max_deliver 3) is handled while younger than max_deliver x ack_wait (30 s), and set aside
// once older (3 s, with ack_wait 1 s).
TEST(Handlers, ManyDeliveriesWithNoVerdictSetAMessageAsideOnlyOnceItIsOldEnough) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.failure.max_deliver = 3;
  spec.flow.ack_wait = 10s;
  ASSERT_TRUE(admin.api().create_consumer("JOBS", fleet::desired_consumer_config(spec)));
  admin.publish("jobs.run", "young");
  ASSERT_TRUE(nak_deliveries(admin, "jobs-worker", 7));
  {
    Fleet fleet(fast_options({server.url()}, "young"));
    Recorder seen;
    std::atomic<uint64_t> delivered{0};
    ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
      delivered = m.delivered();
      seen.record("r", m);
      return Disposition::ack();
    }));
    ASSERT_TRUE(fleet.start());
    ASSERT_TRUE(seen.wait_distinct(1, 10s)) << fleet.health().subscriptions.at(0).last_error;
    EXPECT_EQ(delivered.load(), 8u);
    EXPECT_EQ(fleet.health().subscriptions.at(0).counters.termed, 0u);
  }
  admin.publish("jobs.run", "old");
  ASSERT_TRUE(nak_deliveries(admin, "jobs-worker", 7));
  // Older than max_deliver x ack_wait (3 s) by its stored time.
  std::this_thread::sleep_for(3500ms);
  spec.flow.ack_wait = 1s;  // updated in place on the consumer
  Fleet fleet(fast_options({server.url()}, "old"));
  std::atomic<int> handled{0};
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message&) {
    ++handled;
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(
      wait_for([&] { return fleet.health().subscriptions.at(0).counters.termed == 1; }, 10s))
      << fleet.health().subscriptions.at(0).last_error;
  EXPECT_EQ(handled.load(), 0);
}

// A message held untried while the downstream is down (it came during the outage) and set aside
// by the rule above when its turn as a probe comes: the gate probes with the next held message.
// Before, the probe it was stayed counted as out, no other was tried again, and the held
// messages waited for ever.
TEST(Handlers, AMessageSetAsideWhileHeldForAnOutageLeavesTheOthersToBeTried) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.failure.max_deliver = 3;
  spec.flow.ack_wait = 1s;
  spec.failure.retry_min = 100ms;
  spec.failure.retry_max = 300ms;
  ASSERT_TRUE(admin.api().create_consumer("JOBS", fleet::desired_consumer_config(spec)));
  admin.publish("jobs.run", "old");
  ASSERT_TRUE(nak_deliveries(admin, "jobs-worker", 7));
  // Its ninth delivery comes in 3.5 s: older than max_deliver x ack_wait (3 s) by then, and after
  // the two below have brought the outage.
  auto eighth = admin.connection().request("$JS.API.CONSUMER.MSG.NEXT.JOBS.jobs-worker",
                                           R"({"batch":1,"expires":5000000000})", 10s);
  ASSERT_TRUE(eighth && eighth->status == 0 && !eighth->reply.empty());
  ASSERT_TRUE(admin.connection().publish(eighth->reply, consume::nak_body(3500ms)));
  admin.publish("jobs.run", "a1");
  admin.publish("jobs.run", "a2");

  Fleet fleet(fast_options({server.url()}, "held"));
  std::atomic<bool> down{true};
  Recorder handled;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    if (down) return Disposition::retry().because("the test's downstream is down");
    handled.record("r", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(
      wait_for([&] { return fleet.health().subscriptions.at(0).counters.termed == 1; }, 20s))
      << "the old message was never set aside";
  down = false;
  EXPECT_TRUE(handled.wait_distinct(2, 20s)) << "the held messages were not tried again";
  EXPECT_TRUE(wait_for([&] { return !fleet.health().subscriptions.at(0).downstream_down; }, 10s));
}

// What the replacement of an unserved consumer asks before it deletes one (see
// ConsumerWatch::unserved): a pull of one message of at most 1 byte, no wait,
// is answered by the consumer's leader and takes nothing; with no consumer to serve it, nobody
// answers.
TEST(BrokerPull, ALeaderProbeIsAnsweredAndTakesNothing) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  auto spec = fast_work("jobs-worker", "jobs.run");
  ASSERT_TRUE(admin.api().create_consumer("JOBS", fleet::desired_consumer_config(spec)));
  auto probe = [&](const std::string& consumer) {
    return admin.connection().request("$JS.API.CONSUMER.MSG.NEXT.JOBS." + consumer,
                                      consume::kLeaderProbeBody, 2s);
  };
  auto idle = probe("jobs-worker");
  ASSERT_TRUE(idle) << idle.error().describe();
  EXPECT_EQ(idle->status, 404);
  admin.publish("jobs.run", "a message longer than one byte");
  auto busy = probe("jobs-worker");
  ASSERT_TRUE(busy) << busy.error().describe();
  EXPECT_NE(busy->status, 0) << "a message was delivered: " << busy->data;
  auto info = admin.consumer("JOBS", "jobs-worker");
  EXPECT_EQ(info.num_ack_pending, 0u);
  EXPECT_EQ(info.num_pending, 1u) << "the probe took the message";
  // 2.10 says no responders; 2.9 leaves the request unanswered.
  auto none = probe("nobody");
  ASSERT_FALSE(none);
  EXPECT_TRUE(none.error().code == Errc::no_responders || none.error().code == Errc::timeout)
      << none.error().describe();
}

TEST(Handlers, InProgressKeepsALongHandlerFromBeingRedelivered) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Recorder seen;
  Fleet a(fast_options({server.url()}, "slow-a"));
  Fleet b(fast_options({server.url()}, "slow-b"));
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.flow.ack_wait = 500ms;
  spec.flow.heartbeat = 0ms;  // a quarter of ack_wait
  for (auto* fleet : {&a, &b})
    ASSERT_TRUE(fleet->add_work(spec, [&](const Message& m) {
      for (int i = 0; i < 8; ++i) {  // 1.6 s of work, more than three times ack_wait
        std::this_thread::sleep_for(200ms);
        EXPECT_TRUE(m.in_progress());
      }
      seen.record("any", m);
      return Disposition::ack();
    }));
  ASSERT_TRUE(a.start());
  ASSERT_TRUE(b.start());
  ASSERT_TRUE(wait_for([&] { return a.health().ready && b.health().ready; }, 10s));
  admin.publish("jobs.run", "long");
  ASSERT_TRUE(seen.wait_distinct(1, 10s));
  std::this_thread::sleep_for(1s);
  seen.locked([](const Recorder& r) {
    EXPECT_EQ(r.total(), 1u);
    EXPECT_EQ(r.redelivered(), 0u);
    return 0;
  });
}

// The handler thread reads the inbox only when idle: what reaches this replica while its one
// handler runs past ack_wait waits unread in nats.c, and is still read, stamped and kept alive
// (the supervisor's drain), so the broker never redelivers it.
TEST(Handlers, MessagesWaitingBehindAHandlerPastAckWaitAreKeptAliveNotRedelivered) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Recorder seen;
  Fleet fleet(fast_options({server.url()}, "serial"));
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.flow.ack_wait = 1s;
  spec.flow.concurrency = 1;
  spec.flow.batch = 8;
  std::mutex mu;
  std::condition_variable cv;
  bool first_started = false;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    if (m.data() == "first") {
      {
        std::lock_guard lock(mu);
        first_started = true;
      }
      cv.notify_all();
      std::this_thread::sleep_for(3500ms);  // the fault: three and a half times ack_wait
    }
    seen.record("serial", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  admin.publish("jobs.run", "first");
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return first_started; }));
  }
  admin.publish("jobs.run", "second");
  admin.publish("jobs.run", "third");
  ASSERT_TRUE(seen.wait_distinct(3, 20s));
  ASSERT_TRUE(
      wait_for([&] { return admin.consumer("JOBS", "jobs-worker").num_ack_pending == 0; }, 10s));
  seen.locked([](const Recorder& r) {
    EXPECT_EQ(r.total(), 3u);
    EXPECT_EQ(r.redelivered(), 0u);
    return 0;
  });
}

}  // namespace
}  // namespace natsfleet::testing

namespace natsfleet::testing {
namespace {

// A Message is a value: a copy kept after its handler returned, used once its Fleet is gone,
// answers with an error (it held a reference to the connection and crashed the process).
TEST(Handlers, AMessageKeptBeyondItsFleetAnswersInProgressWithAnError) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  std::mutex mu;
  std::optional<Message> kept;
  {
    Fleet fleet(fast_options({server.url()}, "keeper"));
    ASSERT_TRUE(fleet.add_work(fast_work("jobs-worker", "jobs.run"), [&](const Message& m) {
      std::lock_guard lock(mu);
      kept = m;
      return Disposition::ack();
    }));
    ASSERT_TRUE(fleet.start());
    admin.publish("jobs.run", "kept");
    ASSERT_TRUE(wait_for(
        [&] {
          std::lock_guard lock(mu);
          return kept.has_value();
        },
        10s));
    EXPECT_TRUE(kept->in_progress()) << "the fleet still runs";
    fleet.shutdown(2s);
    // Shut down but not destroyed: the connection is closed.
    EXPECT_FALSE(kept->in_progress());
  }
  auto late = kept->in_progress();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Errc::shutting_down) << late.error().describe();
  EXPECT_EQ(kept->data(), "kept");
}

TEST(Publish, ToStreamWithAMessageIdStoresItOnceAndNamesAMissingStream) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("SENT", {"mail.sent"});
  Fleet fleet(fast_options({server.url()}, "publisher"));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().connected; }, 10s));

  auto first = fleet.publish_to_stream("mail.sent", "hello", "MAIL:42:0", 2s);
  ASSERT_TRUE(first) << first.error().describe();
  // A redelivered message republishing with the same id is dropped by the stream.
  auto again = fleet.publish_to_stream("mail.sent", "hello", "MAIL:42:0", 2s);
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_EQ(*again, *first);
  auto other = fleet.publish_to_stream("mail.sent", "hello", "MAIL:43:0", 2s);
  ASSERT_TRUE(other);
  EXPECT_EQ(*other, *first + 1);
  EXPECT_EQ(admin.api().stream_info("SENT")->messages, 2u);

  auto nowhere = fleet.publish_to_stream("no.stream.here", "x", "", 1s);
  ASSERT_FALSE(nowhere);
  EXPECT_EQ(nowhere.error().code, Errc::no_stream_for_subject) << nowhere.error().describe();
}

}  // namespace
}  // namespace natsfleet::testing
