// A 3-node JetStream cluster with a replicated stream: losing the stream's leader mid-consumption
// costs nothing, and losing the consumer's leader hands out nothing handled again.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "fleet/consumer_shape.h"
#include "natsfleet/fleet.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/recorder.h"
#include "support/wait_for.h"

namespace natsfleet::testing {
namespace {

// A 3-node cluster, an R3 stream holding `messages`, and one fleet sharing work "jobs-worker"
// with ack_wait 3 s, each handler pausing `pace` so consumption is spread out.
class ClusteredWork : public ::testing::Test {
 protected:
  void start(int messages, std::chrono::microseconds pace) {
    admin.create_stream("JOBS", {"jobs.>"}, /*replicas=*/3);
    admin.publish_many("jobs.run", messages);
    fleet = std::make_unique<Fleet>(fast_options(cluster.urls(), "clustered"));
    auto spec = fast_work("jobs-worker", "jobs.run");
    spec.flow.ack_wait = 3s;
    ASSERT_TRUE(fleet->add_work(spec, [this, pace](const Message& m) {
      std::this_thread::sleep_for(pace);
      seen.record("fleet", m);
      return Disposition::ack();
    }));
    fleet->on_fatal([this](const FatalReport&) { fatal = true; });
    ASSERT_TRUE(fleet->start());
    ASSERT_TRUE(seen.wait_distinct(static_cast<size_t>(messages / 3), 30s));
  }

  NatsCluster cluster{3};
  BrokerClient admin{cluster.urls()};
  Recorder seen;
  std::atomic<bool> fatal{false};
  std::unique_ptr<Fleet> fleet;
};

TEST_F(ClusteredWork, StreamLeaderKilledMidConsumptionLosesNothing) {
  constexpr int kMessages = 2000;
  ASSERT_NO_FATAL_FAILURE(start(kMessages, std::chrono::microseconds(500)));

  auto info = admin.api().stream_info("JOBS");
  ASSERT_TRUE(info) << info.error().describe();
  NatsServer* leader = cluster.find(info->leader);
  ASSERT_NE(leader, nullptr) << "stream leader " << info->leader;
  leader->kill();

  ASSERT_TRUE(seen.wait_distinct(kMessages, 60s))
      << "handled " << seen.locked([](const Recorder& r) { return r.distinct(); }) << " of "
      << kMessages << "; " << fleet->health().subscriptions.at(0).last_error;
  EXPECT_FALSE(fatal);
  EXPECT_TRUE(fleet->health().live);
}

// Killing the node that leads the shared consumer mid-stream: acks that node took with it are
// sent again once the next leader answers, so it does not hand handled messages out again.
TEST_F(ClusteredWork, ConsumerLeaderKilledMidStreamHandlesFewTwice) {
  constexpr int kMessages = 5000;
  ASSERT_NO_FATAL_FAILURE(start(kMessages, std::chrono::microseconds(300)));

  const auto info = admin.consumer("JOBS", "jobs-worker");
  const std::string leader = info.leader;
  NatsServer* node = cluster.find(leader);
  ASSERT_NE(node, nullptr) << "consumer leader '" << leader << "'";
  node->kill();

  ASSERT_TRUE(seen.wait_distinct(kMessages, 60s))
      << "handled " << seen.locked([](const Recorder& r) { return r.distinct(); });
  // Settled on the broker: nothing is owed a redelivery any more.
  ASSERT_TRUE(wait_for(
      [&] {
        try {
          auto c = admin.consumer("JOBS", "jobs-worker");
          return c.num_ack_pending == 0 && c.num_pending == 0;
        } catch (const std::exception&) {
          return false;  // a new leader not elected yet
        }
      },
      60s, 200ms));
  const size_t twice = seen.locked([](const Recorder& r) { return r.duplicates(); });
  std::printf("%d messages, consumer leader %s killed: %zu handled twice\n", kMessages,
              leader.c_str(), twice);
  EXPECT_LE(twice, size_t{kMessages / 100});
}

// A consumer whose only server is gone (an R1 consumer of an R3 stream, its node killed) is
// never served again, though its stream answers from the other two nodes: the fleet deletes it
// once it has served nothing for replace_unserved_after and makes it anew after its ack floor
// (as replicated as its stream). Nothing published before or after the kill is lost.
TEST(ClusteredConsumer, OneWhoseOnlyServerIsGoneIsMadeAnewAndLosesNothing) {
  NatsCluster cluster{3};
  BrokerClient admin{cluster.urls()};
  admin.create_stream("JOBS", {"jobs.>"}, /*replicas=*/3);
  const auto spec = fast_work("jobs-worker", "jobs.run");
  auto single = fleet::desired_consumer_config(spec);
  single.other_fields["num_replicas"] = "1";
  auto made = admin.api().create_consumer("JOBS", single);
  ASSERT_TRUE(made) << made.error().describe();
  std::string server;
  ASSERT_TRUE(wait_for(
      [&] {
        auto info = admin.api().consumer_info("JOBS", "jobs-worker");
        if (info) server = info->leader;
        return !server.empty();
      },
      20s));
  NatsServer* node = cluster.find(server);
  ASSERT_NE(node, nullptr) << "consumer server '" << server << "'";

  admin.publish_many("jobs.run", 200, "before-");
  auto options = fast_options(cluster.urls(), "unserved");
  options.replace_unserved_after = 3s;
  Fleet fleet(options);
  Recorder seen;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    seen.record("fleet", m);
    return Disposition::ack();
  }));
  std::atomic<bool> fatal{false};
  fleet.on_fatal([&](const FatalReport&) { fatal = true; });
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(seen.wait_distinct(200, 30s));

  node->kill();
  admin.publish_many("jobs.run", 300, "after-");
  ASSERT_TRUE(seen.wait_distinct(500, 60s))
      << "handled " << seen.locked([](const Recorder& r) { return r.distinct(); }) << " of 500; "
      << fleet.health().subscriptions.at(0).last_error;
  const auto now = admin.consumer("JOBS", "jobs-worker");
  EXPECT_FALSE(now.leader.empty());
  EXPECT_NE(now.leader, server);
  EXPECT_EQ(now.config.other_fields.count("num_replicas")
                ? now.config.other_fields.at("num_replicas")
                : "0",
            "0");
  EXPECT_FALSE(fatal);
  const size_t twice = seen.locked([](const Recorder& r) { return r.duplicates(); });
  std::printf("consumer server %s killed: 500 handled, %zu twice\n", server.c_str(), twice);
}

}  // namespace
}  // namespace natsfleet::testing
