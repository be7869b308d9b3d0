// A 3-node JetStream cluster with a replicated stream: losing the stream's leader mid-consumption
// costs nothing.
#include <gtest/gtest.h>

#include <thread>

#include "natsfleet/fleet.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/recorder.h"

namespace natsfleet::testing {
namespace {

TEST(Cluster, StreamLeaderKilledMidConsumptionLosesNothing) {
  NatsCluster cluster(3);
  BrokerClient admin(cluster.urls());
  admin.create_stream("JOBS", {"jobs.>"}, /*replicas=*/3);
  constexpr int kMessages = 2000;
  admin.publish_many("jobs.run", kMessages);

  Recorder seen;
  auto options = fast_options(cluster.urls(), "clustered");
  Fleet fleet(options);
  auto spec = fast_work("jobs-worker", "jobs.run");
  spec.ack_wait = 3s;
  ASSERT_TRUE(fleet.add_work(spec, [&](const Message& m) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));  // spread consumption out
    seen.record("fleet", m);
    return Disposition::ack();
  }));
  bool fatal = false;
  fleet.on_fatal([&](const FatalReport&) { fatal = true; });
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(seen.wait_distinct(kMessages / 3, 30s));

  auto info = admin.api().stream_info("JOBS");
  ASSERT_TRUE(info) << info.error().describe();
  NatsServer* leader = cluster.find(info->leader);
  ASSERT_NE(leader, nullptr) << "stream leader " << info->leader;
  leader->kill();

  ASSERT_TRUE(seen.wait_distinct(kMessages, 60s))
      << "handled " << seen.locked([](const Recorder& r) { return r.distinct(); }) << " of "
      << kMessages << "; " << fleet.health().subscriptions.at(0).last_error;
  EXPECT_FALSE(fatal);
  EXPECT_TRUE(fleet.health().live);
}

}  // namespace
}  // namespace natsfleet::testing
