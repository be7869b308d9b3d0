// The library when a handler's downstream fails: Disposition::retry holds messages without
// using deliveries, a message that fails alone is rejected and dead-lettered with its origin, and
// a core broadcast's queue is bounded.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "natsfleet/dead_letter.h"
#include "natsfleet/fleet.h"
#include "natsfleet/validate.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/recorder.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

// Dead letters as a core subscriber on the dead-letter subject sees them (with headers).
class DeadLetters {
 public:
  DeadLetters(BrokerClient& client, const std::string& subject) {
    auto sub = client.connection().subscribe(subject, "", [this](nats::InboundMessage&& m) {
      std::lock_guard lock(mu_);
      seen_.push_back(std::move(m));
    });
    if (!sub) throw std::runtime_error(sub.error().describe());
    sub_ = std::move(sub.value());
    (void)client.connection().flush(2s);
  }
  std::vector<nats::InboundMessage> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<nats::InboundMessage> seen_;
  std::unique_ptr<nats::Subscription> sub_;
};

std::string header(const nats::InboundMessage& m, const std::string& key) {
  auto it = m.headers.find(key);
  return it == m.headers.end() || it->second.empty() ? std::string() : it->second.front();
}

// A copy of one subscription's health (a default one, with an empty name, when absent).
SubscriptionHealth sub_of(const Fleet& fleet, const std::string& name) {
  for (auto& s : fleet.health().subscriptions)
    if (s.name == name) return s;
  return {};
}

TEST(DownstreamFaults, RetryHoldsMessagesPastAckWaitWithoutUsingDeliveries) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto spec = fast_work("jobs", "jobs.run");
  spec.flow.ack_wait = 1s;  // held far longer than this: in-progress acks keep them here
  spec.failure.max_deliver = 2;
  spec.failure.retry_min = 100ms;
  spec.failure.retry_max = 400ms;
  spec.flow.concurrency = 2;
  std::atomic<bool> down{true};
  Recorder seen;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    if (down) return Disposition::retry().because("database unavailable");
    seen.record("r", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  admin.publish_many("jobs.run", 20);
  ASSERT_TRUE(wait_for(
      [&] { return sub_of(fleet, "jobs").downstream_down && !fleet.health().ready; }, 10s));
  EXPECT_NE(sub_of(fleet, "jobs").downstream_error.find("database unavailable"), std::string::npos);
  std::this_thread::sleep_for(4s);  // four ack_waits
  down = false;
  ASSERT_TRUE(seen.wait_distinct(20, 20s));
  seen.locked([](const Recorder& r) {
    EXPECT_EQ(r.redelivered(), 0u) << "the outage used deliveries";
    EXPECT_EQ(r.duplicates(), 0u);
    return 0;
  });
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  const auto after = sub_of(fleet, "jobs");
  EXPECT_EQ(after.counters.termed, 0u);
  EXPECT_GT(after.counters.retried, 0u);
  fleet.shutdown(5s);
}

TEST(DownstreamFaults, AMessageThatFailsAloneIsDeadLetteredWithItsOrigin) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  admin.create_stream("DEAD", {"dead.jobs"});
  DeadLetters dead(admin, "dead.jobs");
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto spec = fast_work("jobs", "jobs.run");
  spec.failure.max_deliver = 3;
  spec.failure.retry_min = 50ms;
  spec.failure.retry_max = 200ms;
  spec.flow.concurrency = 2;
  spec.failure.dead_letter = "dead.jobs";
  Recorder seen;
  // m7 makes the downstream fail every time (as if it crashed a worker): it looks like an
  // outage at first, and must be found out rather than hold the subscription down for ever.
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    if (m.data() == "m7") return Disposition::retry().because("worker exited");
    seen.record("r", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  admin.publish_many("jobs.run", 50);
  ASSERT_TRUE(seen.wait_distinct(49, 30s));
  ASSERT_TRUE(wait_for([&] { return dead.seen().size() == 1; }, 30s))
      << "dead letters: " << dead.seen().size();
  const auto letter = dead.seen().front();
  EXPECT_EQ(letter.data, "m7");
  EXPECT_EQ(header(letter, dead_letter::kStream), "JOBS");
  EXPECT_EQ(header(letter, dead_letter::kSequence), "8");
  EXPECT_EQ(header(letter, dead_letter::kSubscription), "jobs");
  EXPECT_EQ(header(letter, dead_letter::kSubject), "jobs.run");
  EXPECT_EQ(header(letter, dead_letter::kDeliveries), "3");
  EXPECT_NE(header(letter, dead_letter::kReason).find("worker exited"), std::string::npos)
      << header(letter, dead_letter::kReason);
  EXPECT_FALSE(header(letter, dead_letter::kTime).empty());
  EXPECT_EQ(header(letter, "Nats-Msg-Id"), dead_letter::message_id("jobs", "JOBS", 8));
  ASSERT_TRUE(wait_for(
      [&] {
        auto info = admin.consumer("JOBS", "jobs");
        return info.num_ack_pending == 0 && info.num_pending == 0 && fleet.health().ready;
      },
      10s));
  const auto s = sub_of(fleet, "jobs");
  EXPECT_EQ(s.counters.dead_lettered, 1u);
  EXPECT_EQ(s.counters.termed, 1u);
  EXPECT_FALSE(s.downstream_down);
  fleet.shutdown(5s);
}

TEST(DownstreamFaults, AHandlersTermIsDeadLetteredFirstThenTerminated) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  admin.create_stream("DEAD", {"dead.jobs"});
  DeadLetters dead(admin, "dead.jobs");
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto spec = fast_work("jobs", "jobs.run");
  spec.failure.dead_letter = "dead.jobs";
  Recorder seen;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    if (m.data() == "m3") return Disposition::term().because("unknown recipient");
    seen.record("r", m);
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  admin.publish_many("jobs.run", 10);
  ASSERT_TRUE(seen.wait_distinct(9, 10s));
  ASSERT_TRUE(wait_for([&] { return dead.seen().size() == 1; }, 10s));
  EXPECT_EQ(header(dead.seen().front(), dead_letter::kReason), "unknown recipient");
  EXPECT_EQ(header(dead.seen().front(), dead_letter::kDeliveries), "1");
  fleet.shutdown(5s);
}

TEST(DownstreamFaults, ADeadLetterSubjectNoStreamHoldsIsANamedErrorAtBind) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto spec = fast_work("jobs", "jobs.run");
  spec.failure.dead_letter = "nowhere.dead";
  std::atomic<int> handled{0};
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message&) {
    ++handled;
    return Disposition::ack();
  }));
  ASSERT_TRUE(fleet.start());
  admin.publish_many("jobs.run", 3);
  std::string error;
  ASSERT_TRUE(wait_for(
      [&] {
        const auto s = sub_of(fleet, "jobs");
        error = s.last_error;
        return error.find("nowhere.dead") != std::string::npos;
      },
      10s))
      << error;
  EXPECT_NE(error.find("held by no stream"), std::string::npos) << error;
  EXPECT_FALSE(fleet.health().ready);
  EXPECT_EQ(handled.load(), 0) << "nothing is consumed without somewhere for dead letters";
  // Once the stream exists, the work binds by itself.
  admin.create_stream("DEAD", {"nowhere.dead"});
  ASSERT_TRUE(wait_for([&] { return handled.load() == 3; }, 10s));
  fleet.shutdown(5s);
}

TEST(DownstreamFaults, CoreBroadcastQueueIsBoundedKeepingEachKeysNewest) {
  NatsServer server;
  Fleet fleet(fast_options({server.url()}, "replica"));
  BroadcastSpec spec;
  spec.name = "status";
  spec.subject = "member.*.status";
  spec.max_queued = 8;
  spec.key_token = 2;
  std::mutex gate;
  gate.lock();  // the handler is stuck until the flood is over
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> got;
  std::atomic<int> started{0};
  ASSERT_TRUE(fleet.add_broadcast(spec, [&](const Message& m) {
    if (started++ == 0) {
      std::lock_guard wait(gate);
    }
    std::lock_guard lock(mu);
    got[subject_token(m.subject(), 2)].push_back(m.data());
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  BrokerClient publisher(server.url());
  (void)publisher.connection().publish("member.first.status", "first");
  ASSERT_TRUE(wait_for([&] { return started.load() == 1; }, 5s));
  for (int i = 0; i < 300; ++i)
    (void)publisher.connection().publish("member.k" + std::to_string(i % 3) + ".status",
                                         std::to_string(i));
  ASSERT_TRUE(publisher.connection().flush(5s));
  ASSERT_TRUE(wait_for(
      [&] {
        const auto s = sub_of(fleet, "status");
        return s.counters.dropped + 8 >= 300;
      },
      10s))
      << sub_of(fleet, "status").counters.dropped;
  gate.unlock();
  ASSERT_TRUE(wait_for(
      [&] {
        std::lock_guard lock(mu);
        size_t n = 0;
        for (auto& [k, v] : got) n += v.size();
        return n == 1 + 8;
      },
      10s));
  std::lock_guard lock(mu);
  // Each key's newest status survived the flood (297, 298 and 299 are the last of k0, k1, k2).
  EXPECT_EQ(got["k0"].back(), "297");
  EXPECT_EQ(got["k1"].back(), "298");
  EXPECT_EQ(got["k2"].back(), "299");
  EXPECT_EQ(sub_of(fleet, "status").counters.dropped, 300u - 8u);
  fleet.shutdown(2s);
}

TEST(DownstreamFaults, ACoreBroadcastWhoseDownstreamIsDownRetriesInPlaceAndLosesNothingQueued) {
  NatsServer server;
  Fleet fleet(fast_options({server.url()}, "replica"));
  BroadcastSpec spec;
  spec.name = "status";
  spec.subject = "member.*.status";
  std::atomic<bool> down{true};
  std::mutex mu;
  std::vector<std::string> got;
  ASSERT_TRUE(fleet.add_broadcast(spec, [&](const Message& m) {
    if (down) throw DownstreamUnavailable("gateway unreachable");
    std::lock_guard lock(mu);
    got.push_back(m.data());
  }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  BrokerClient publisher(server.url());
  for (int i = 0; i < 5; ++i)
    (void)publisher.connection().publish("member.a.status", "s" + std::to_string(i));
  ASSERT_TRUE(publisher.connection().flush(5s));
  ASSERT_TRUE(wait_for(
      [&] {
        const auto s = sub_of(fleet, "status");
        return s.downstream_down && s.counters.retried >= 2;
      },
      10s));
  EXPECT_FALSE(fleet.health().ready);
  EXPECT_NE(sub_of(fleet, "status").downstream_error.find("gateway unreachable"),
            std::string::npos);
  down = false;
  ASSERT_TRUE(wait_for(
      [&] {
        std::lock_guard lock(mu);
        return got.size() == 5;
      },
      15s));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(got, (std::vector<std::string>{"s0", "s1", "s2", "s3", "s4"}));
  }
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 5s));
  EXPECT_EQ(sub_of(fleet, "status").counters.handler_errors, 0u);
  fleet.shutdown(2s);
}

}  // namespace
}  // namespace natsfleet::testing
