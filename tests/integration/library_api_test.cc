// The library's API as an application holds it (include/natsfleet/fleet.h): a Subscription
// handle stands for one subscription, draining, stopping and reporting that one alone, before or
// after start(), and answering errors once it is removed (even when the name was taken again) or
// the fleet is gone; FleetOptions::log_to receives the fleet's lines with their fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "natsfleet/fleet.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/wait_for.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

Disposition ack(const Message&) { return Disposition::ack(); }

TEST(Handles, EachStandsForItsOwnSubscriptionBeforeAndAfterStart) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto a = fleet.add_work(fast_work("a", "jobs.a"), ack);
  auto b = fleet.add_work(fast_work("b", "jobs.b"), ack);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->name(), "a");
  auto waiting = a->health();
  ASSERT_TRUE(waiting);
  EXPECT_EQ(waiting->state, SubscriptionState::binding) << "declared, not started";
  ASSERT_TRUE(a->drain(1s)) << "removed before start: it never binds";

  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  ASSERT_EQ(fleet.health().subscriptions.size(), 1u);
  auto gone = a->health();
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Errc::invalid_argument);

  // The name again, after start: a new subscription, which the old handle does not reach.
  auto again = fleet.add_work(fast_work("a", "jobs.a"), ack);
  ASSERT_TRUE(again);
  ASSERT_TRUE(wait_for(
      [&] {
        auto h = again->health();
        return h && h->state == SubscriptionState::bound;
      },
      10s));
  auto stale = a->stop();
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, Errc::invalid_argument);
  EXPECT_EQ(fleet.health().subscriptions.size(), 2u) << "the old handle stopped nothing";

  ASSERT_TRUE(again->stop());
  const auto left = fleet.health().subscriptions;
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].name, "b");
  EXPECT_EQ(b->health()->state, SubscriptionState::bound);

  Subscription none;
  EXPECT_EQ(none.health().error().code, Errc::invalid_argument);
}

TEST(Handles, DrainWaitsForDeferredVerdictsAndTheOthersGoOn) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Fleet fleet(fast_options({server.url()}, "replica"));
  std::mutex mu;
  std::optional<Message> kept;
  auto spec = fast_work("slow", "jobs.slow");
  spec.flow.ack_wait = 60s;  // an unacked message stays pending for the whole test
  auto slow = fleet.add_work(spec, [&](const Message& m) {
    std::lock_guard lock(mu);
    kept = m;
    return Disposition::later();
  });
  std::atomic<int> others{0};
  auto fast = fleet.add_work(fast_work("fast", "jobs.fast"), [&](const Message&) {
    ++others;
    return Disposition::ack();
  });
  ASSERT_TRUE(slow && fast);
  ASSERT_TRUE(fleet.start());
  admin.publish("jobs.slow", "x");
  ASSERT_TRUE(wait_for(
      [&] {
        std::lock_guard lock(mu);
        return kept.has_value();
      },
      20s));
  // The verdict comes once the drain has begun, as a batch writer flushing on a stop would.
  std::thread settler([&] {
    std::lock_guard lock(mu);
    wait_for([&] { return kept->stop_token().stop_requested(); }, 60s);
    EXPECT_TRUE(kept->ack());
  });
  const auto before = std::chrono::steady_clock::now();
  ASSERT_TRUE(slow->drain(30s));
  EXPECT_LT(std::chrono::steady_clock::now() - before, 15s) << "waited past the last verdict";
  settler.join();
  const auto c = admin.consumer("JOBS", "slow");
  EXPECT_EQ(c.ack_floor_stream_seq, 1u);
  EXPECT_EQ(c.num_ack_pending, 0u);

  admin.publish("jobs.fast", "y");
  ASSERT_TRUE(wait_for([&] { return others.load() == 1; }, 20s)) << "the other work goes on";
}

TEST(Handles, OnceTheFleetIsGoneCallsAnswerShuttingDown) {
  NatsServer server;
  std::optional<Subscription> handle;
  {
    Fleet fleet(fast_options({server.url()}, "replica"));
    auto added =
        fleet.add_broadcast({.name = "status", .subject = "status.*"}, [](const Message&) {});
    ASSERT_TRUE(added);
    handle = *added;
    ASSERT_TRUE(fleet.start());
    fleet.shutdown(2s);
    EXPECT_EQ(handle->drain(1s).error().code, Errc::shutting_down);
  }
  EXPECT_EQ(handle->health().error().code, Errc::shutting_down);
  EXPECT_EQ(handle->stop().error().code, Errc::shutting_down);
}

// What log_to received: each line's level, message and fields.
struct Captured {
  LogLevel level;
  std::string message;
  std::map<std::string, std::string> fields;
};

TEST(LogHook, TheFleetsLinesReachItWithTheirFieldsFromItsLevelUp) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  std::mutex mu;
  std::vector<Captured> lines;
  auto options = fast_options({server.url()}, "replica");
  options.log_level = LogLevel::info;
  options.log_to = [&](const LogLine& line) {
    Captured c{line.level, std::string(line.message), {}};
    for (const auto& [key, value] : line.fields) c.fields[std::string(key)] = value;
    std::lock_guard lock(mu);
    lines.push_back(std::move(c));
  };
  Fleet fleet(options);
  ASSERT_TRUE(fleet.add_work(fast_work("jobs", "jobs.run"), ack));
  ASSERT_TRUE(fleet.start());
  const auto bound = [&] {
    std::lock_guard lock(mu);
    return std::any_of(lines.begin(), lines.end(), [](const Captured& c) {
      auto to = c.fields.find("to");
      return to != c.fields.end() && to->second == "bound";
    });
  };
  ASSERT_TRUE(wait_for(bound, 10s));
  std::lock_guard lock(mu);
  for (const auto& c : lines) {
    EXPECT_GE(static_cast<int>(c.level), static_cast<int>(LogLevel::info)) << c.message;
    if (c.fields.count("to") && c.fields.at("to") == "bound") {
      EXPECT_EQ(c.level, LogLevel::info);
      EXPECT_EQ(c.fields.at("work"), "jobs");
      EXPECT_EQ(c.fields.at("from"), "binding");
      EXPECT_NE(c.message.find("binding -> bound"), std::string::npos) << c.message;
    }
  }
}

}  // namespace
}  // namespace natsfleet::testing
