// Verdicts given later, from any thread (Disposition::later, Message::settle): messages in flight
// are bounded by max_ack_pending, not by handler threads or the pull window; a message never
// settled goes back to the broker when its subscription stops; ordered work refuses them.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

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

// Keeps every message it is handed and defers its verdict.
struct Keeper {
  std::mutex mu;
  std::deque<Message> kept;
  std::atomic<int> calls{0};
  std::atomic<int> redelivered{0};
  Disposition operator()(const Message& m) {
    ++calls;
    if (m.delivered() > 1) ++redelivered;
    std::lock_guard lock(mu);
    kept.push_back(m);
    return Disposition::later();
  }
  size_t size() {
    std::lock_guard lock(mu);
    return kept.size();
  }
  // The next kept message, if any.
  std::optional<Message> take() {
    std::lock_guard lock(mu);
    if (kept.empty()) return std::nullopt;
    Message m = std::move(kept.front());
    kept.pop_front();
    return m;
  }
};

TEST(Deferred, TenThousandInFlightOnOneHandlerThreadAreSettledFromFourThreads) {
  constexpr int kMessages = 10'000;
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  admin.publish_many("jobs.run", kMessages);
  Keeper keeper;
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto spec = fast_work("jobs", "jobs.run");
  spec.flow.concurrency = 1;
  spec.flow.max_ack_pending = 2 * kMessages;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) { return keeper(m); }));
  ASSERT_TRUE(fleet.start());
  // All of them at once on one handler thread, their verdicts not given: what bounds them is
  // max_ack_pending, and in-progress acks keep them (ack_wait is 2 s).
  ASSERT_TRUE(wait_for([&] { return keeper.size() == kMessages; }, 60s)) << keeper.size();

  std::atomic<int> failed{0};
  std::vector<std::thread> settlers;
  for (int t = 0; t < 4; ++t)
    settlers.emplace_back([&] {
      while (auto m = keeper.take())
        if (!m->ack()) ++failed;
    });
  for (auto& t : settlers) t.join();
  EXPECT_EQ(failed.load(), 0);
  ASSERT_TRUE(wait_for(
      [&] {
        const auto c = admin.consumer("JOBS", "jobs");
        return c.ack_floor_stream_seq == kMessages && c.num_ack_pending == 0;
      },
      30s));
  EXPECT_EQ(keeper.calls.load(), kMessages) << "each handled once";
  EXPECT_EQ(keeper.redelivered.load(), 0);
  EXPECT_EQ(fleet.health().subscriptions[0].counters.acked, static_cast<uint64_t>(kMessages));
}

TEST(Deferred, AVerdictGivenTwiceIsRefusedAndTheFirstCounts) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Keeper keeper;
  Fleet fleet(fast_options({server.url()}, "replica"));
  ASSERT_TRUE(
      fleet.add_work(fast_work("jobs", "jobs.run"), [&](const Message& m) { return keeper(m); }));
  ASSERT_TRUE(fleet.start());
  admin.publish("jobs.run", "a");
  ASSERT_TRUE(wait_for([&] { return keeper.size() == 1; }, 20s));
  auto m = keeper.take();
  ASSERT_TRUE(m->ack());
  auto again = m->nak();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::already_settled);
  ASSERT_TRUE(
      wait_for([&] { return admin.consumer("JOBS", "jobs").ack_floor_stream_seq == 1; }, 10s));
  EXPECT_EQ(keeper.calls.load(), 1);
}

TEST(Deferred, AMessageNeverSettledGoesBackAtShutdownAndAnotherReplicaGetsItAtOnce) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  auto spec = fast_work("jobs", "jobs.run");
  spec.flow.ack_wait = 60s;  // a message left to ack_wait would not come back within the test
  Keeper first;
  auto a = std::make_unique<Fleet>(fast_options({server.url()}, "a"));
  ASSERT_TRUE(a->add_work(spec, [&](const Message& m) { return first(m); }));
  ASSERT_TRUE(a->start());
  admin.publish("jobs.run", "a");
  ASSERT_TRUE(wait_for([&] { return first.size() == 1; }, 20s));

  const auto before = Steady::now();
  a->shutdown(1s);
  EXPECT_LT(Steady::now() - before, 5s) << "shutdown waits for a verdict only until its deadline";
  auto late = first.take()->ack();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Errc::shutting_down);
  a.reset();

  AckingReplica b(server.url(), spec);
  ASSERT_TRUE(b.started());
  ASSERT_TRUE(wait_for([&] { return b.handled() > 0; }, 20s)) << "left to ack_wait";
}

TEST(Deferred, ShutdownReturnsOnceTheLastVerdictIsGiven) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Keeper keeper;
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto spec = fast_work("jobs", "jobs.run");
  spec.flow.ack_wait = 60s;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) { return keeper(m); }));
  ASSERT_TRUE(fleet.start());
  admin.publish_many("jobs.run", 3);
  ASSERT_TRUE(wait_for([&] { return keeper.size() == 3; }, 20s));
  // The settler acks once it sees the stop, as a batch writer flushing on shutdown would.
  std::thread settler([&] {
    auto m = keeper.take();
    wait_for([&] { return m->stop_token().stop_requested(); }, 60s);
    (void)m->ack();
    while (auto next = keeper.take()) (void)next->ack();
  });
  const auto before = Steady::now();
  fleet.shutdown(30s);
  EXPECT_LT(Steady::now() - before, 15s) << "shutdown waited past the last verdict";
  settler.join();
  const auto c = admin.consumer("JOBS", "jobs");
  EXPECT_EQ(c.ack_floor_stream_seq, 3u) << "the verdicts given during the shutdown were acked";
  EXPECT_EQ(c.num_ack_pending, 0u);
}

TEST(Deferred, OrderedWorkTakesLaterAsARejection) {
  const auto plan = fleet::PartitionPlan::make("orders.*", 2, 4).value();
  NatsServer server({.extra_config = plan.mappings_block()});
  BrokerClient admin(server.url());
  admin.create_stream("ORDERS", {plan.stored_subjects()});
  std::atomic<int> calls{0};
  std::mutex mu;
  std::optional<Message> first;
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto spec = fast_work("orders", "orders.*");
  spec.per_key.emplace();
  spec.per_key->key_token = 2;
  spec.per_key->partitions = 4;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    if (++calls == 1) {
      std::lock_guard lock(mu);
      first = m;
      return Disposition::later();
    }
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  admin.publish("orders.a", "a:0");
  ASSERT_TRUE(wait_for([&] { return calls.load() >= 2; }, 30s)) << "handed out again";
  std::lock_guard lock(mu);
  auto settled = first->ack();
  ASSERT_FALSE(settled);
  EXPECT_EQ(settled.error().code, Errc::invalid_argument);
}

}  // namespace
}  // namespace natsfleet::testing
