// Failure B of CONTEXT.md and its relatives: the broker goes away, comes back empty, pauses, or
// loses the consumer; natsfleet recovers by itself or reports fatal exactly once.
#include <gtest/gtest.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "natsfleet/fleet.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/jobs_broker.h"
#include "support/nats_server.h"
#include "support/recorder.h"
#include "support/ring_log.h"

namespace natsfleet::testing {
namespace {

// One replica consuming "jobs.run" from stream JOBS, counting fatal reports.
struct Replica {
  explicit Replica(const std::string& url, WorkSpec spec = fast_work("jobs-worker", "jobs.run"),
                   FleetOptions options = {})
      : fleet(options.servers.empty() ? fast_options({url}, "replica") : options) {
    EXPECT_TRUE(fleet.add_work(spec, [this](const Message& m) {
      seen.record("replica", m);
      return Disposition::ack();
    }));
    fleet.on_fatal([this](const FatalReport& r) {
      std::lock_guard lock(mu);
      fatal_reason = r.reason;
      ++fatal_reports;
    });
    EXPECT_TRUE(fleet.start());
  }
  int fatals() {
    std::lock_guard lock(mu);
    return fatal_reports;
  }
  std::string reason() {
    std::lock_guard lock(mu);
    return fatal_reason;
  }
  SubscriptionHealth sub() { return fleet.health().subscriptions.at(0); }
  bool ready() {
    return wait_for([&] { return fleet.health().ready; }, 10s);
  }

  Recorder seen;
  std::mutex mu;
  int fatal_reports = 0;
  std::string fatal_reason;
  Fleet fleet;
};

// Every test here starts from a broker of its own holding stream JOBS.
using ConfirmMissing = JobsBroker;
using FirstStart = JobsBroker;
using Health = JobsBroker;
using Outage = JobsBroker;
using Pause = JobsBroker;
using Reconnect = JobsBroker;
using RefilledStream = JobsBroker;
using Restart = JobsBroker;
using Shutdown = JobsBroker;
using Unserved = JobsBroker;

TEST_F(Reconnect, UnlimitedByDefaultSoALongOutageRecoversWithoutFatal) {
  auto options = fast_options({server.url()}, "patient");
  ASSERT_EQ(options.max_reconnect, -1);
  // Waits of at most 20 ms: a 4 s outage is well over 60 attempts (nats.c's default limit).
  options.reconnect_wait_min = 10ms;
  options.reconnect_wait_max = 20ms;
  options.connect_timeout = 200ms;
  Replica r(server.url(), fast_work("jobs-worker", "jobs.run"), options);
  ASSERT_TRUE(r.ready());
  admin.publish_many("jobs.run", 20, "before-");
  ASSERT_TRUE(r.seen.wait_distinct(20, 10s));

  server.kill();
  ASSERT_TRUE(wait_for([&] { return !r.fleet.health().connected; }, 5s));
  EXPECT_FALSE(r.fleet.health().ready) << "readiness must drop while the broker is gone";
  std::this_thread::sleep_for(4s);
  server.restart();
  ASSERT_TRUE(wait_for([&] { return r.fleet.health().ready; }, 10s)) << r.sub().last_error;
  admin.publish_many("jobs.run", 20, "after-");
  EXPECT_TRUE(r.seen.wait_distinct(40, 10s));
  EXPECT_EQ(r.fatals(), 0);
  EXPECT_TRUE(r.fleet.health().live);
  EXPECT_GE(r.fleet.health().reconnects, 1u);
}

TEST_F(Reconnect, ClosedConnectionAfterStartIsFatalExactlyOnce) {
  auto options = fast_options({server.url()}, "finite");
  options.max_reconnect = 3;  // the only way to make nats.c give up: the default never does
  Replica r(server.url(), fast_work("jobs-worker", "jobs.run"), options);
  ASSERT_TRUE(r.ready());
  server.kill();
  ASSERT_TRUE(wait_for([&] { return r.fatals() > 0; }, 10s));
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(r.fatals(), 1);
  EXPECT_NE(r.reason().find("closed"), std::string::npos) << r.reason();
  auto h = r.fleet.health();
  EXPECT_FALSE(h.live);
  EXPECT_FALSE(h.ready);
}

TEST_F(Reconnect, NothingIsReportedOnceShutdownHasBegun) {
  auto options = fast_options({server.url()}, "leaving");
  options.max_reconnect = 0;
  Replica r(server.url(), fast_work("jobs-worker", "jobs.run"), options);
  ASSERT_TRUE(r.ready());
  r.fleet.shutdown(2s);  // closes the connection: its closed callback must stay quiet
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(r.fatals(), 0);
  EXPECT_TRUE(r.fleet.health().live) << r.fleet.health().fatal_reason;
}

using ConsumerDeleted = JobsBrokerWith<OnMissing>;

TEST_P(ConsumerDeleted, WhileConsumingIsRecreatedOrFatalAsConfigured) {
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.failure.missing_consumer = GetParam();
  Replica r(server.url(), spec);
  ASSERT_TRUE(r.ready());
  admin.publish_many("jobs.run", 100, "first-");
  ASSERT_TRUE(r.seen.wait_distinct(100, 10s));
  // The replica has seen the ack floor move past the first hundred on the broker.
  ASSERT_TRUE(wait_for([&] { return r.sub().ack_floor == 100; }, 5s)) << r.sub().ack_floor;

  admin.delete_consumer("JOBS", "jobs-worker");
  if (GetParam() == OnMissing::exit) {
    ASSERT_TRUE(wait_for([&] { return r.fatals() > 0; }, 10s));
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(r.fatals(), 1);
    EXPECT_NE(r.reason().find("missing"), std::string::npos) << r.reason();
    EXPECT_EQ(r.sub().state, SubscriptionState::fatal);
    EXPECT_FALSE(admin.api().consumer_info("JOBS", "jobs-worker").ok())
        << "on_missing = exit must not recreate";
    return;
  }
  ASSERT_TRUE(wait_for([&] { return r.sub().counters.recoveries == 1; }, 10s))
      << r.sub().last_error;
  ASSERT_TRUE(r.ready());
  admin.publish_many("jobs.run", 100, "second-");
  ASSERT_TRUE(r.seen.wait_distinct(200, 10s));
  r.seen.locked([](const Recorder& rec) {
    // Recreated after the ack floor: the first hundred are not replayed.
    EXPECT_EQ(rec.duplicates(), 0u);
    return 0;
  });
  EXPECT_EQ(r.fatals(), 0);
}

INSTANTIATE_TEST_SUITE_P(OnMissing, ConsumerDeleted,
                         ::testing::Values(OnMissing::recreate, OnMissing::exit),
                         [](const auto& param_info) {
                           return param_info.param == OnMissing::recreate ? "Recreate" : "Exit";
                         });

using WipedStore = JobsBrokerWith<OnMissing>;

TEST_P(WipedStore, ConsumerMissingAfterTheBrokerReturnsIsRecreatedOrFatal) {
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.failure.missing_consumer = GetParam();
  // Slow reconnects: the deployment recreates the stream and new work arrives before the
  // replica is back, as when a broker is replaced under a busy system.
  auto options = fast_options({server.url()}, "replica");
  options.reconnect_wait_min = 2s;
  options.reconnect_wait_max = 2s;
  Replica r(server.url(), spec, options);
  ASSERT_TRUE(r.ready());
  admin.publish_many("jobs.run", 50, "old-");
  ASSERT_TRUE(r.seen.wait_distinct(50, 10s));
  // The replica has learnt the ack floor (50) before the broker forgets everything.
  ASSERT_TRUE(wait_for([&] { return r.sub().ack_floor == 50; }, 5s)) << r.sub().ack_floor;

  server.restart_wiped();
  admin.create_stream("JOBS", {"jobs.>"});
  // The new stream's sequences start again at 1, below the old ack floor: a consumer recreated
  // "after the floor" would skip all of these.
  admin.publish_many("jobs.run", 30, "new-");
  if (GetParam() == OnMissing::exit) {
    ASSERT_TRUE(wait_for([&] { return r.fatals() > 0; }, 10s));
    EXPECT_EQ(r.fatals(), 1);
    return;
  }
  ASSERT_TRUE(r.seen.wait_distinct(80, 15s)) << r.sub().last_error;
  EXPECT_EQ(r.sub().counters.recoveries, 1u);
  EXPECT_EQ(r.fatals(), 0);
}

// The recreated stream is refilled past the old ack floor before the replica is back: only its
// creation time tells it is a new stream (its sequences alone look like a continuation).
TEST_F(RefilledStream, PastTheOldFloorWhileTheReplicaWasAwayIsReadFromItsStart) {
  auto spec = fast_work("jobs-worker", "jobs.run");
  auto options = fast_options({server.url()}, "replica");
  options.reconnect_wait_min = 2s;
  options.reconnect_wait_max = 2s;
  Replica r(server.url(), spec, options);
  ASSERT_TRUE(r.ready());
  admin.publish_many("jobs.run", 20, "old-");
  ASSERT_TRUE(r.seen.wait_distinct(20, 10s));
  ASSERT_TRUE(wait_for([&] { return r.sub().ack_floor == 20; }, 5s)) << r.sub().ack_floor;

  server.restart_wiped();
  admin.create_stream("JOBS", {"jobs.>"});
  admin.publish_many("jobs.run", 60, "new-");
  ASSERT_TRUE(r.seen.wait_distinct(80, 15s))
      << r.seen.locked([](const Recorder& rec) { return rec.distinct(); }) << " distinct; "
      << r.sub().last_error;
  EXPECT_EQ(r.fatals(), 0);
}

INSTANTIATE_TEST_SUITE_P(OnMissing, WipedStore,
                         ::testing::Values(OnMissing::recreate, OnMissing::exit),
                         [](const auto& param_info) {
                           return param_info.param == OnMissing::recreate ? "Recreate" : "Exit";
                         });

// A work new to a stream that already holds messages: no live replica knew its consumer, so no
// replica can be about to recreate it after an ack floor, and it is created at once rather than
// after first_create_wait (missing_window plus a heartbeat).
TEST_F(FirstStart, AWorkNewToAStreamHoldingMessagesDoesNotWaitForPeersThatDoNotExist) {
  admin.publish_many("jobs.run", 10);
  auto options = fast_options({server.url()}, "replica");
  options.missing_window = 120s;  // the wait, were it taken: two minutes
  Replica r(server.url(), fast_work("jobs-worker", "jobs.run"), options);
  EXPECT_TRUE(r.seen.wait_distinct(10, 30s)) << r.seen.distinct();
  EXPECT_EQ(admin.consumer("JOBS", "jobs-worker").config.deliver_policy, nats::DeliverPolicy::all);
}

// The other side: a replica bound to the consumer says so to one that asks, until it stops; a
// replica that asks and hears it waits for the bound ones to recreate the consumer after their
// ack floor (tests/unit/fleet/consumer_lifecycle_test.cc).
TEST_F(FirstStart, AReplicaBoundToTheConsumerAnswersPeersUntilItStops) {
  auto r = std::make_unique<Replica>(server.url());
  ASSERT_TRUE(r->ready());
  const std::string asked = "_NATSFLEET.peers.JOBS.jobs-worker";
  auto answer = admin.connection().request(asked, "", 2s);
  EXPECT_TRUE(answer) << answer.error().describe();
  r->fleet.shutdown(5s);
  auto after = admin.connection().request(asked, "", 2s);
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, Errc::no_responders) << after.error().describe();
}

// Before deleting a consumer that serves nothing here, a replica asks whether it served a peer
// within that time (ConsumerWatch::still_served): only a replica it served answers.
TEST_F(Unserved, AReplicaTheConsumerServedSaysSoWithinTheWindowAskedOnly) {
  Replica r(server.url());
  ASSERT_TRUE(r.ready());
  admin.publish_many("jobs.run", 3);
  ASSERT_TRUE(r.seen.wait_distinct(3, 10s));
  const std::string asked = "_NATSFLEET.peers.JOBS.jobs-worker";
  // Its heartbeats (250 ms apart) keep it served.
  ASSERT_TRUE(wait_for(
      [&] { return admin.connection().request(asked, "served-within 30000", 1s).has_value(); },
      10s));
  auto answer = admin.connection().request(asked, "served-within 30000", 2s);
  ASSERT_TRUE(answer) << answer.error().describe();
  EXPECT_EQ(answer->data, "served");
  // Served nothing within no time at all: silent, so the asker hears nobody.
  auto silent = admin.connection().request(asked, "served-within 0", 500ms);
  ASSERT_FALSE(silent);
  EXPECT_EQ(silent.error().code, Errc::timeout) << silent.error().describe();
}

TEST_F(ConfirmMissing, AConsumerBackWithinTheWindowIsNotActedOn) {
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.failure.missing_consumer = OnMissing::exit;  // acting on a false "missing" would be fatal
  auto options = fast_options({server.url()}, "replica");
  options.missing_lookups = 3;
  options.missing_window = 2s;  // lookups about 1 s apart
  Replica r(server.url(), spec, options);
  ASSERT_TRUE(r.ready());
  auto config = admin.consumer("JOBS", "jobs-worker").config;

  // A new leader that briefly does not know the consumer looks like this from the outside.
  admin.delete_consumer("JOBS", "jobs-worker");
  ASSERT_TRUE(wait_for([&] { return r.sub().state == SubscriptionState::recovering; }, 5s));
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(admin.api().create_consumer("JOBS", config));

  ASSERT_TRUE(wait_for([&] { return r.fleet.health().ready; }, 10s)) << r.sub().last_error;
  EXPECT_EQ(r.fatals(), 0) << r.reason();
  admin.publish_many("jobs.run", 10);
  EXPECT_TRUE(r.seen.wait_distinct(10, 10s));
}

TEST_F(Restart, PullsResumeAfterABrokerRestartWithItsStore) {
  // Heartbeats and pull expiry far longer than the test: only the re-pull on reconnect can
  // bring the messages in time.
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.flow.ack_wait = 80s;  // a heartbeat is at most a quarter of it
  spec.flow.heartbeat = 20s;
  spec.flow.pull_expires = 120s;
  Replica r(server.url(), spec);
  ASSERT_TRUE(r.ready());
  admin.publish_many("jobs.run", 50, "before-");
  ASSERT_TRUE(r.seen.wait_distinct(50, 10s));

  server.kill();
  server.restart();
  admin.publish_many("jobs.run", 50, "after-");
  EXPECT_TRUE(r.seen.wait_distinct(100, 8s)) << r.sub().last_error;
  EXPECT_EQ(r.fatals(), 0);
}

// Handlers that finish while the broker is away free room in the pull window, and a pull sent
// then would wait in nats.c's reconnect buffer. After an outage longer than a gap, the engine
// listens on a fresh inbox; a pull for the old one, flushed once the broker is back, would have
// the broker hand the first new messages to nobody, to be redelivered only after ack_wait. No
// pull may leave while disconnected: every message published after the outage is handled on its
// first delivery.
TEST_F(Restart, WorkFinishedDuringALongOutageSendsNoFreshMessageToAForsakenInbox) {
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.flow.ack_wait = 3s;  // a gap: 1.5 s of silence
  spec.flow.batch = 4;      // a small window, so each handler's finish frees room for a pull
  spec.flow.concurrency =
      4;  // all four in handlers when the broker goes (none starts while it is away)
  std::atomic<bool> broker_down{false};
  std::atomic<int> entered{0};
  Recorder seen;
  Fleet fleet(fast_options({server.url()}, "replica"));
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    // The first messages are still in the handler when the broker goes.
    if (m.data().rfind("before-", 0) == 0) {
      ++entered;
      while (!broker_down) std::this_thread::sleep_for(5ms);
    }
    seen.record("replica", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  // Four in hand, four left on the broker for the next pull.
  admin.publish_many("jobs.run", 8, "before-");
  ASSERT_TRUE(wait_for([&] { return entered == 4; }, 10s));

  server.stop();
  broker_down = true;
  ASSERT_TRUE(seen.wait_distinct(4, 10s));  // handled; their acks wait for the broker
  std::this_thread::sleep_for(2500ms);      // the outage outlasts a gap
  server.restart();
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  admin.publish_many("jobs.run", 20, "after-");
  ASSERT_TRUE(seen.wait_distinct(28, 20s)) << fleet.health().subscriptions.at(0).last_error;
  EXPECT_EQ(seen.redelivered(), 0u) << "messages published after the outage reached a dead inbox";
}

// A message that waits for a handler thread while the broker is away is not started then: its
// ack could not reach the broker, which may hand it to another replica meanwhile. It starts once
// the connection is back, and is acked on its first delivery.
TEST_F(Reconnect, AWaitingMessageStartsOnlyOnceTheConnectionIsBack) {
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.flow.ack_wait = 30s;  // the outage is short next to it: a waiting message stays valid
  std::mutex mu;
  std::condition_variable changed;
  bool release = false;
  std::vector<std::string> started;
  auto let_go = [&] {
    {
      std::lock_guard lock(mu);
      release = true;
    }
    changed.notify_all();
  };
  Fleet fleet(fast_options({server.url()}, "replica"));
  // Destroyed before the fleet: a failed assertion never leaves the handler waiting.
  struct LetGo {
    std::function<void()> f;
    ~LetGo() { f(); }
  } guard{let_go};
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    std::unique_lock lock(mu);
    started.push_back(m.data());
    changed.notify_all();
    changed.wait(lock, [&] { return release; });  // the first holds the only handler thread
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  admin.publish_many("jobs.run", 3, "job-");
  auto count = [&] {
    std::lock_guard lock(mu);
    return started.size();
  };
  ASSERT_TRUE(wait_for([&] { return count() == 1; }, 10s));

  server.stop();
  ASSERT_TRUE(wait_for([&] { return !fleet.health().connected; }, 10s));
  let_go();
  // Without the rule the next waiting message starts at once; give it ample time to show.
  EXPECT_FALSE(wait_for([&] { return count() > 1; }, 1s)) << "a message started while offline";

  server.restart();
  ASSERT_TRUE(wait_for([&] { return count() == 3; }, 15s)) << count();
  ASSERT_TRUE(wait_for(
      [&] {
        const auto info = admin.consumer("JOBS", "jobs-worker");
        return info.num_ack_pending == 0 && info.num_pending == 0;
      },
      10s));
  EXPECT_EQ(fleet.health().subscriptions.at(0).counters.redelivered, 0u);
}

// The fleet's log lines while it lives: spdlog's default logger (which a fleet clones at
// construction) writes to a ring as well.
class LogRing {
 public:
  LogRing() : old_(spdlog::default_logger()) { spdlog::set_default_logger(ring_.shared()); }
  ~LogRing() { spdlog::set_default_logger(old_); }
  size_t lines_with(const std::string& text) const { return ring_.lines_with(text); }

 private:
  RingLog ring_;
  std::shared_ptr<spdlog::logger> old_;
};

// A broker that stops is an outage the connection saw: its cause is named in the health (and so
// in /status) and in a warning while it lasts; the silence it made is not called a pause.
TEST_F(Outage, ItsCauseIsNamedAndItsSilenceIsNotCalledAPause) {
  LogRing log;
  Replica r(server.url());
  ASSERT_TRUE(r.ready());
  EXPECT_TRUE(r.fleet.health().broker_error.empty());
  admin.publish_many("jobs.run", 10, "before-");
  ASSERT_TRUE(r.seen.wait_distinct(10, 10s));

  server.stop();
  ASSERT_TRUE(wait_for(
      [&] { return r.fleet.health().broker_error.find("Connection refused") != std::string::npos; },
      10s))
      << r.fleet.health().broker_error;
  EXPECT_NE(r.fleet.health().broker_error.find(server.url()), std::string::npos);
  // The first warning comes 5 s into the outage, which outlasts a gap (ack_wait 2 s).
  ASSERT_TRUE(wait_for([&] { return log.lines_with("no broker for") > 0; }, 15s));
  EXPECT_EQ(log.lines_with("Connection refused; still trying"), log.lines_with("no broker for"));
  server.restart();
  ASSERT_TRUE(wait_for([&] { return r.fleet.health().ready; }, 15s)) << r.sub().last_error;
  EXPECT_TRUE(r.fleet.health().broker_error.empty());
  admin.publish_many("jobs.run", 10, "after-");
  ASSERT_TRUE(r.seen.wait_distinct(20, 10s));
  EXPECT_EQ(log.lines_with("the broker answers again after"), 1u);
  EXPECT_EQ(log.lines_with("paused or its link cut"), 0u);
}

TEST_F(Pause, PausedBrokerIsAWarningNotFatalAndConsumptionResumes) {
  Replica r(server.url());
  ASSERT_TRUE(r.ready());
  admin.publish_many("jobs.run", 20, "before-");
  ASSERT_TRUE(r.seen.wait_distinct(20, 10s));

  server.pause();
  // Heartbeats (250 ms) are missed; the lookup cannot get an answer: a warning, not fatal.
  ASSERT_TRUE(wait_for([&] { return r.sub().state == SubscriptionState::recovering; }, 5s));
  EXPECT_FALSE(r.fleet.health().ready);
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(r.fatals(), 0);
  EXPECT_TRUE(r.fleet.health().live);
  server.resume();

  ASSERT_TRUE(wait_for([&] { return r.fleet.health().ready; }, 15s)) << r.sub().last_error;
  admin.publish_many("jobs.run", 20, "after-");
  EXPECT_TRUE(r.seen.wait_distinct(40, 10s));
  EXPECT_EQ(r.fatals(), 0);
}

TEST_F(Pause, ALookupOutlastingTheGapStillCountsTheMissedHeartbeats) {
  // Each consumer lookup against the paused broker blocks the supervisor for 2 s, longer than
  // the 1 s after which a silence is a gap; the missed heartbeats must still be seen. Looked up
  // every 100 ms, the first lookup after the pause starts before two heartbeats are missed.
  auto options = fast_options({server.url()}, "replica");
  options.request_timeout = 2s;
  options.info_interval = 100ms;
  Replica r(server.url(), fast_work("jobs-worker", "jobs.run"), options);
  ASSERT_TRUE(r.ready());
  admin.publish_many("jobs.run", 5, "before-");
  ASSERT_TRUE(r.seen.wait_distinct(5, 10s));

  server.pause();
  EXPECT_TRUE(wait_for([&] { return r.sub().state == SubscriptionState::recovering; }, 8s))
      << "state " << to_string(r.sub().state) << ": " << r.sub().last_error;
  server.resume();
  ASSERT_TRUE(wait_for([&] { return r.fleet.health().ready; }, 15s)) << r.sub().last_error;
  EXPECT_EQ(r.fatals(), 0);
}

TEST_F(Shutdown, InFlightHandlersFinishAndAreAckedTheRestGoesBackAtOnce) {
  std::atomic<int> started{0}, finished{0};
  Fleet leaving(fast_options({server.url()}, "leaving"));
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.flow.concurrency = 4;
  spec.flow.ack_wait = 30s;  // a message left unacked would come back only after 30 s
  ASSERT_TRUE(leaving.add_work(spec, [&](const Message&) {
    ++started;
    std::this_thread::sleep_for(700ms);
    ++finished;
    return Disposition::ack();
  }));
  ASSERT_TRUE(leaving.start());
  admin.publish_many("jobs.run", 20);
  ASSERT_TRUE(wait_for([&] { return started == 4; }, 10s));

  const auto before = std::chrono::steady_clock::now();
  leaving.shutdown(5s);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 5s);
  EXPECT_EQ(finished.load(), started.load()) << "shutdown returned before its handlers finished";
  const int done = finished.load();
  EXPECT_EQ(leaving.health().subscriptions.at(0).counters.acked, static_cast<uint64_t>(done));

  // The rest was nak'd, not abandoned: a new replica gets all of it long before ack_wait.
  Recorder seen;
  Fleet next(fast_options({server.url()}, "next"));
  ASSERT_TRUE(next.add_work(spec, [&](const Message& m) {
    seen.record("next", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(next.start());
  EXPECT_TRUE(seen.wait_distinct(20 - done, 10s));
  EXPECT_TRUE(wait_for(
      [&] { return admin.consumer("JOBS", "jobs-worker").ack_floor_stream_seq == 20; }, 5s));
}

TEST_F(Shutdown, DuringAReconnectClosesInsteadOfDrainingAndKeepsItsDeadline) {
  Replica r(server.url());
  ASSERT_TRUE(r.ready());
  server.kill();
  ASSERT_TRUE(wait_for([&] { return !r.fleet.health().connected; }, 5s));
  // Nothing can drain while the broker is gone: shutdown closes at once, long before its
  // deadline, where a drain attempt would use all of it or more.
  constexpr auto kDeadline = 20s;
  const auto before = std::chrono::steady_clock::now();
  r.fleet.shutdown(kDeadline);
  EXPECT_LT(std::chrono::steady_clock::now() - before, kDeadline / 2);
  EXPECT_EQ(r.fatals(), 0);
  EXPECT_EQ(r.sub().state, SubscriptionState::stopped);
}

}  // namespace
}  // namespace natsfleet::testing

namespace natsfleet::testing {
namespace {

TEST_F(Health, BoundConsumerWithPendingWorkAndNoProgressIsStalledThenRecovers) {
  auto options = fast_options({server.url()}, "stuck");
  options.stall_after = 1s;
  Fleet fleet(options);
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.flow.ack_wait = 30s;
  std::atomic<bool> release{false};
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message&) {
    while (!release) std::this_thread::sleep_for(10ms);  // a handler wedged on a dependency
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  admin.publish_many("jobs.run", 5);
  ASSERT_TRUE(wait_for(
      [&] { return fleet.health().subscriptions.at(0).state == SubscriptionState::stalled; }, 10s));
  auto h = fleet.health();
  EXPECT_FALSE(h.ready) << "a stalled subscription is not ready";
  EXPECT_TRUE(h.live);
  EXPECT_NE(h.subscriptions.at(0).last_error.find("no progress"), std::string::npos);

  release = true;
  EXPECT_TRUE(wait_for(
      [&] { return fleet.health().subscriptions.at(0).state == SubscriptionState::bound; }, 10s));
}

TEST_F(Health, WhileTheBrokerIsOutOfReachNoSubscriptionSaysBound) {
  Replica r(server.url());
  ASSERT_TRUE(r.ready());
  server.kill();
  FleetHealth h;
  ASSERT_TRUE(wait_for(
      [&] {
        h = r.fleet.health();
        return !h.connected;
      },
      5s));
  EXPECT_NE(h.subscriptions.at(0).state, SubscriptionState::bound);
  EXPECT_FALSE(h.subscriptions.at(0).last_error.empty()) << "no reason given";
  server.restart();
  EXPECT_TRUE(wait_for([&] { return r.sub().state == SubscriptionState::bound; }, 20s));
}

TEST_F(Health, IdleConsumerIsNotStalled) {
  auto options = fast_options({server.url()}, "idle");
  options.stall_after = 500ms;
  Fleet fleet(options);
  ASSERT_TRUE(fleet.add_work(fast_work("jobs-worker", "jobs.run"),
                             [](const Message&) { return Disposition::ack(); }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(fleet.health().subscriptions.at(0).state, SubscriptionState::bound);
}

}  // namespace
}  // namespace natsfleet::testing
