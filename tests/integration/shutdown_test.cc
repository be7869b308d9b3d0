// Shutdown keeps its word (include/natsfleet/fleet.h): running handlers see their message's
// stop_token() requested and their verdicts count; a handler that ignores it is left to finish,
// ~Fleet returns by the deadline and what the handler uses is freed only once it returns.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include "fleet/ordered/partition_plan.h"
#include "natsfleet/fleet.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/wait_for.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// A shutdown whose deadline is this long would take all of it if no handler saw the stop.
constexpr auto kLongDeadline = 30s;

// A handler that holds its message until the stop is requested, then acks it.
struct StopWatcher {
  std::atomic<int> started{0};
  std::atomic<int> saw_stop{0};
  Disposition operator()(const Message& m) {
    ++started;
    if (!wait_for([&] { return m.stop_token().stop_requested(); }, 60s)) return Disposition::nak();
    ++saw_stop;
    return Disposition::ack();
  }
};

TEST(Shutdown, RunningHandlersSeeTheStopAndTheirAcksReachTheBroker) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  StopWatcher watcher;
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto spec = fast_work("jobs", "jobs.run");
  spec.flow.concurrency = 4;
  spec.flow.ack_wait = 60s;  // an unacked message stays pending for the whole test
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) { return watcher(m); }));
  ASSERT_TRUE(fleet.start());
  admin.publish_many("jobs.run", 4);
  ASSERT_TRUE(wait_for([&] { return watcher.started.load() == 4; }, 10s));

  const auto before = Steady::now();
  fleet.shutdown(kLongDeadline);
  EXPECT_LT(Steady::now() - before, kLongDeadline / 2) << "the handlers never saw the stop";
  EXPECT_EQ(watcher.saw_stop.load(), 4);
  const auto consumer = admin.consumer("JOBS", "jobs");
  EXPECT_EQ(consumer.num_ack_pending, 0u) << "the verdicts given after the stop were acked";
  EXPECT_EQ(consumer.ack_floor_stream_seq, 4u);
}

// A broker with orders.* mapped to `partitions` partitions and a stream for them, and the per-key
// work that reads it.
struct OrderedSetup {
  explicit OrderedSetup(int partitions)
      : plan(fleet::PartitionPlan::make("orders.*", 2, partitions).value()),
        server({.extra_config = plan.mappings_block()}),
        admin(server.url()) {
    admin.create_stream("ORDERS", {plan.stored_subjects()});
    spec.per_key.emplace();
    spec.per_key->key_token = 2;
    spec.per_key->partitions = partitions;
    spec.per_key->lease = 2s;
  }
  fleet::PartitionPlan plan;
  NatsServer server;
  BrokerClient admin;
  WorkSpec spec = fast_work("orders", "orders.*");
};

TEST(Shutdown, OrderedWorkHandlersSeeTheStop) {
  OrderedSetup b(4);
  BrokerClient& admin = b.admin;
  StopWatcher watcher;
  Fleet fleet(fast_options({b.server.url()}, "replica"));
  b.spec.flow.concurrency = 2;
  ASSERT_TRUE(fleet.add_work(b.spec, [&](const Message& m) { return watcher(m); }));
  ASSERT_TRUE(fleet.start());
  admin.publish("orders.a", "a:0");
  ASSERT_TRUE(wait_for([&] { return watcher.started.load() == 1; }, 20s));

  const auto before = Steady::now();
  fleet.shutdown(kLongDeadline);
  EXPECT_LT(Steady::now() - before, kLongDeadline / 2) << "the handler never saw the stop";
  EXPECT_EQ(watcher.saw_stop.load(), 1);
}

TEST(Shutdown, OrderedWorkKeepsItsDeadlineWhenTheBrokerStopsAnswering) {
  OrderedSetup b(16);
  NatsServer& server = b.server;
  Fleet fleet(fast_options({server.url()}, "replica"));
  ASSERT_TRUE(fleet.add_work(b.spec, [](const Message&) { return Disposition::ack(); }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for(
      [&] {
        const auto h = fleet.health();
        return !h.subscriptions.empty() && h.subscriptions[0].partitions_owned.size() == 16;
      },
      20s));
  // Each lease renewal and release would wait out its request timeout, one after another.
  server.pause();
  constexpr auto kDeadline = 2s;
  constexpr auto kLeaseRequest = 5s;  // a lease-bucket request under way may add this much
  const auto before = Steady::now();
  fleet.shutdown(kDeadline);
  EXPECT_LT(Steady::now() - before, kDeadline + kLeaseRequest + 2s)
      << "the lease round or the releases outlasted the deadline";
  server.resume();
}

TEST(Shutdown, BroadcastHandlersSeeTheStop) {
  NatsServer server;
  BrokerClient admin(server.url());
  std::atomic<int> started{0}, saw_stop{0};
  Fleet fleet(fast_options({server.url()}, "replica"));
  BroadcastSpec spec;
  spec.name = "status";
  spec.subject = "status.>";
  ASSERT_TRUE(fleet.add_broadcast(spec, [&](const Message& m) {
    ++started;
    if (wait_for([&] { return m.stop_token().stop_requested(); }, 60s)) ++saw_stop;
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for(
      [&] {
        if (started.load() > 0) return true;
        (void)admin.connection().publish("status.one", "up");  // core: again until it is heard
        return false;
      },
      10s));

  const auto before = Steady::now();
  fleet.shutdown(kLongDeadline);
  EXPECT_LT(Steady::now() - before, kLongDeadline / 2) << "the handler never saw the stop";
  EXPECT_EQ(saw_stop.load(), 1);
}

// Whether the handler's state was freed: set by the destructor of what the handler owns.
struct FreedFlag {
  std::atomic<bool>* freed;
  ~FreedFlag() { *freed = true; }
};

// A handler that ignores the stop until the test lets it go, then uses the Message it kept.
struct Overrunner {
  std::unique_ptr<FreedFlag> owned;  // freed with the fleet's state: a move-only handler
  std::atomic<bool>* running;
  std::atomic<bool>* released;
  std::atomic<bool>* finished;
  std::optional<Result<void>>* late_in_progress;
  Disposition operator()(const Message& m) {
    *running = true;
    wait_for([&] { return released->load(); }, 60s);
    // Its fleet is gone by now: the Message answers with an error, never touches freed state.
    late_in_progress->emplace(m.in_progress());
    *finished = true;
    return Disposition::ack();
  }
};

void overrun_the_deadline(bool ask_for_shutdown) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  std::atomic<bool> running{false}, released{false}, finished{false}, freed{false};
  std::optional<Result<void>> late;
  auto fleet = std::make_unique<Fleet>(fast_options({server.url()}, "replica"));
  ASSERT_TRUE(fleet->add_work(fast_work("jobs", "jobs.run"),
                              Overrunner{std::unique_ptr<FreedFlag>(new FreedFlag{&freed}),
                                         &running, &released, &finished, &late}));
  ASSERT_TRUE(fleet->start());
  admin.publish("jobs.run", "slow");
  ASSERT_TRUE(wait_for([&] { return running.load(); }, 10s));
  if (ask_for_shutdown) fleet->shutdown(100ms);
  fleet.reset();  // returns with the handler still held: ~Fleet does not wait for it
  EXPECT_FALSE(finished.load());
  EXPECT_FALSE(freed.load()) << "the fleet's state was freed under a running handler";
  released = true;
  ASSERT_TRUE(wait_for([&] { return freed.load(); }, 20s)) << "never freed";
  EXPECT_TRUE(finished.load());
  ASSERT_TRUE(late.has_value());
  EXPECT_FALSE(late->has_value()) << "in_progress() after the fleet is gone is an error";
}

TEST(Shutdown, AHandlerThatOverrunsTheDeadlineIsLeftToFinishAndFreedAfter) {
  overrun_the_deadline(true);
}

TEST(Shutdown, TheDestructorAloneKeepsItsOwnDeadline) { overrun_the_deadline(false); }

}  // namespace
}  // namespace natsfleet::testing
