// natsfleet::RelayGateway, the public WebSocket gateway of a Relay, on a real broker: a browser's
// attach is what subscribes the relay, a status published on one replica reaches the browsers of
// its member on another, a key that cannot be a subject token is refused at the upgrade, and
// stop() closes the sessions it holds.
#include <gtest/gtest.h>

#include "natsfleet/fleet.h"
#include "natsfleet/relay.h"
#include "natsfleet/relay_gateway.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/websocket_client.h"

namespace natsfleet::testing {
namespace {

struct Replica {
  Replica(const std::string& url, const std::string& name)
      : fleet(fast_options({url}, name)),
        relay(fleet, {.name = "sync-status", .heartbeat = 250ms}),
        gateway(relay, {}) {}

  Fleet fleet;
  Relay relay;
  RelayGateway gateway;
};

TEST(RelayGateway, ABrowsersAttachSubscribesTheRelayAndItsMembersStatusesReachItFromAnyReplica) {
  NatsServer server;
  Replica a(server.url(), "replica-a");
  Replica b(server.url(), "replica-b");
  ASSERT_TRUE(a.fleet.start());
  ASSERT_TRUE(b.fleet.start());
  ASSERT_TRUE(b.gateway.start());
  ASSERT_GT(b.gateway.port(), 0);
  EXPECT_FALSE(b.relay.stats().subscribed) << "nothing attached yet";

  auto alice = attach_browser(b.gateway.port(), "member=alice");
  auto bob = attach_browser(b.gateway.port(), "member=bob");
  ASSERT_TRUE(wait_for([&] { return b.relay.stats().subscribed && b.fleet.health().ready; }, 10s));
  ASSERT_TRUE(wait_for([&] { return a.fleet.health().ready; }, 10s));

  // Replica a publishes (a work handler there finished alice's sync); b holds her browser.
  ASSERT_TRUE(a.relay.publish("alice", R"({"state":"synced"})", "work-1"));
  ASSERT_TRUE(a.relay.publish("bob", R"({"state":"failed"})", "work-2"));
  ASSERT_TRUE(wait_for([&] { return alice->count() == 1 && bob->count() == 1; }, 10s))
      << alice->count() << " " << bob->count();
  EXPECT_EQ(alice->messages(), std::vector<std::string>{R"({"state":"synced"})"});
  EXPECT_EQ(bob->messages(), std::vector<std::string>{R"({"state":"failed"})"});

  const RelayGatewayStats stats = b.gateway.stats();
  EXPECT_EQ(stats.sessions, 2u);
  EXPECT_EQ(stats.attached, 2u);
  EXPECT_EQ(stats.frames_sent, 2u);
  EXPECT_EQ(stats.refused, 0u);
}

TEST(RelayGateway, AKeyThatCannotBeASubjectTokenIsRefusedAtTheUpgrade) {
  NatsServer server;
  Replica a(server.url(), "replica-a");
  ASSERT_TRUE(a.fleet.start());
  ASSERT_TRUE(a.gateway.start());
  for (const char* bad : {"a.b", "a*", "%3E"}) {  // %3E is '>'
    WsClient client(a.gateway.port(), std::string("/ws?member=") + bad);
    EXPECT_GE(client.status(), 400u) << bad;
  }
  EXPECT_EQ(a.gateway.stats().refused, 3u);
  EXPECT_EQ(a.gateway.stats().attached, 0u);
}

TEST(RelayGateway, StopClosesEveryBrowserAsGoingAway) {
  NatsServer server;
  Replica a(server.url(), "replica-a");
  ASSERT_TRUE(a.fleet.start());
  ASSERT_TRUE(a.gateway.start());
  auto alice = attach_browser(a.gateway.port(), "member=alice");
  ASSERT_TRUE(wait_for([&] { return a.gateway.stats().sessions == 1; }, 10s));
  a.gateway.stop();
  ASSERT_TRUE(wait_for([&] { return alice->closed(); }, 10s));
  EXPECT_EQ(alice->close_reason().code, boost::beast::websocket::close_code::going_away);
  EXPECT_EQ(a.gateway.port(), 0) << "stopped";
  a.gateway.stop();  // idempotent
}

}  // namespace
}  // namespace natsfleet::testing
