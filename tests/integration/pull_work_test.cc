// Fleet::add_pull_work on a real broker: the application fetches batches and acks them from
// other threads; fetch waits at most max_wait; messages that wait unfetched go back at once when
// the work stops while fetched ones keep drain waiting for their verdicts; once the fleet is
// gone fetch answers shutting_down.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
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
using Steady = std::chrono::steady_clock;

// A pull work of `batch` whose messages, if left to ack_wait (60 s), would not come back within a
// test: one that comes back was given back.
WorkSpec jobs_left_to_ack_wait_for_good(int batch) {
  auto spec = fast_work("jobs", "jobs.run");
  spec.flow.ack_wait = 60s;
  spec.flow.batch = batch;
  return spec;
}

TEST(PullWork, BatchesAreFetchedAndAckedFromOtherThreadsEachMessageOnce) {
  constexpr int kMessages = 2000;
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  admin.publish_many("jobs.run", kMessages, "job-");
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto spec = fast_work("jobs", "jobs.run");
  spec.flow.batch = 300;
  auto jobs = fleet.add_pull_work(spec);
  ASSERT_TRUE(jobs) << jobs.error().describe();
  ASSERT_TRUE(fleet.start());

  std::mutex mu;
  std::multiset<std::string> fetched;
  std::atomic<int> refused{0};
  std::vector<std::thread> ackers;
  size_t largest = 0;
  while (fetched.size() < kMessages) {
    auto batch = jobs->fetch(500, 1s);
    ASSERT_TRUE(batch) << batch.error().describe();
    ASSERT_FALSE(batch->empty()) << "nothing within 1 s, " << fetched.size() << " so far";
    largest = std::max(largest, batch->size());
    for (const auto& m : *batch) fetched.insert(m.data());
    // Each batch acked on a thread of its own, after the fetch that took it returned.
    ackers.emplace_back([batch = std::move(*batch), &refused] {
      for (const auto& m : batch)
        if (!m.ack()) ++refused;
    });
  }
  for (auto& t : ackers) t.join();
  EXPECT_LE(largest, 300u) << "a fetch takes at most `batch`";
  EXPECT_EQ(refused.load(), 0);
  EXPECT_EQ(std::set<std::string>(fetched.begin(), fetched.end()).size(), fetched.size())
      << "none fetched twice";
  ASSERT_TRUE(wait_for(
      [&] {
        const auto c = admin.consumer("JOBS", "jobs");
        return c.ack_floor_stream_seq == kMessages && c.num_ack_pending == 0;
      },
      30s));
  EXPECT_EQ(fleet.health().subscriptions.at(0).counters.redelivered, 0u);
}

TEST(PullWork, FetchReturnsWhatWaitsOnceMaxWaitHasPassed) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Fleet fleet(fast_options({server.url()}, "replica"));
  auto jobs = fleet.add_pull_work(fast_work("jobs", "jobs.run"));
  ASSERT_TRUE(jobs);
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  auto none = jobs->fetch(10, 100ms);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());

  admin.publish_many("jobs.run", 3, "job-");
  std::vector<Message> got;
  ASSERT_TRUE(wait_for(
      [&] {
        auto batch = jobs->fetch(10, 200ms);  // asks for more than there are: 3 come back
        if (batch) got.insert(got.end(), batch->begin(), batch->end());
        return got.size() >= 3;
      },
      20s));
  EXPECT_EQ(got.size(), 3u);
  for (const auto& m : got) EXPECT_TRUE(m.ack());

  auto zero = jobs->fetch(0, 1ms);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code, Errc::invalid_argument);
  auto ordered = fast_work("orders", "orders.*");
  ordered.per_key.emplace();
  ordered.per_key->key_token = 2;
  auto refused = fleet.add_pull_work(ordered);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::invalid_argument);
}

TEST(PullWork, DrainGivesBackWhatWaitsUnfetchedAtOnceAndWaitsForTheFetchedOnesVerdicts) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  auto spec = jobs_left_to_ack_wait_for_good(20);
  admin.publish_many("jobs.run", 20, "job-");
  auto a = std::make_unique<Fleet>(fast_options({server.url()}, "a"));
  auto jobs = a->add_pull_work(spec);
  ASSERT_TRUE(jobs);
  ASSERT_TRUE(a->start());
  std::vector<Message> held;
  ASSERT_TRUE(wait_for(
      [&] {
        auto batch = jobs->fetch(5 - held.size(), 100ms);
        if (batch) held.insert(held.end(), batch->begin(), batch->end());
        return held.size() == 5;
      },
      20s));
  // 15 wait unfetched (batch 20); the 5 fetched are acked while the drain waits for them.
  ASSERT_TRUE(wait_for([&] { return admin.consumer("JOBS", "jobs").num_ack_pending == 20; }, 20s));
  std::thread acker([&] {
    std::this_thread::sleep_for(300ms);
    for (const auto& m : held) EXPECT_TRUE(m.ack());
  });
  const auto before = Steady::now();
  ASSERT_TRUE(jobs->subscription().drain(60s));
  const auto drained_in = Steady::now() - before;
  acker.join();
  EXPECT_LT(drained_in, 30s) << "drain waits for the fetched five, not for the unfetched";
  auto after = jobs->fetch(1, 1ms);
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, Errc::shutting_down);

  // The other replica gets the 15 at once: given back, not left to the 60 s ack_wait.
  AckingReplica b(server.url(), spec);
  ASSERT_TRUE(b.started());
  ASSERT_TRUE(wait_for([&] { return b.handled() == 15; }, 20s)) << b.handled();
  const auto c = admin.consumer("JOBS", "jobs");
  EXPECT_EQ(c.num_ack_pending, 0);
  a.reset();
  auto gone = jobs->fetch(1, 1ms);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Errc::shutting_down);
}

// keep_alive_limit bounds a message's wait for a fetch as it bounds one's wait for a handler:
// past it the message goes back for another replica, not left to ack_wait, and no later fetch
// returns it.
TEST(PullWork, AMessageUnfetchedPastKeepAliveLimitGoesBackForAnotherReplica) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  auto spec = jobs_left_to_ack_wait_for_good(10);
  spec.flow.keep_alive_limit = 1s;
  Fleet a(fast_options({server.url()}, "a"));
  auto jobs = a.add_pull_work(spec);
  ASSERT_TRUE(jobs);
  ASSERT_TRUE(a.start());
  ASSERT_TRUE(wait_for([&] { return a.health().ready; }, 10s));
  admin.publish_many("jobs.run", 3, "job-");
  ASSERT_TRUE(wait_for([&] { return admin.consumer("JOBS", "jobs").num_ack_pending == 3; }, 20s));

  AckingReplica b(server.url(), spec);
  ASSERT_TRUE(b.started());
  ASSERT_TRUE(wait_for([&] { return b.handled() == 3; }, 20s)) << b.handled();
  auto late = jobs->fetch(3, 1ms);
  ASSERT_TRUE(late) << late.error().describe();
  EXPECT_TRUE(late->empty()) << late->size() << " given back, then fetched";
  EXPECT_GE(a.health().subscriptions.at(0).counters.naked, 3u);
}

}  // namespace
}  // namespace natsfleet::testing
