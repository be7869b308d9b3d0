// natsfleet::RelayGateway, the public WebSocket gateway of a Relay, on a real broker: a browser's
// attach is what subscribes the relay, a status published on one replica reaches the browsers of
// its member on another, a key that cannot be a subject token is refused at the upgrade, and
// stop() closes the sessions it holds.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "natsfleet/fleet.h"
#include "natsfleet/relay.h"
#include "natsfleet/relay_gateway.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/relay_replica.h"
#include "support/websocket_client.h"

namespace natsfleet::testing {
namespace {

struct Replica : RelayReplica {
  Replica(const std::string& url, const std::string& name)
      : RelayReplica(url, name), gateway(relay, {}) {}

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

  // A frame is counted when its write completes, which may be after the browser has read it.
  EXPECT_TRUE(wait_for([&] { return b.gateway.stats().frames_sent == 2u; }, 10s));
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

// A browser whose upgrade the gateway answered while stopping is told "going away" like the
// others, not cut: the stop comes as soon as the first upgrade is under way, so the others are
// somewhere in theirs (the answer written, the session not yet registered, say).
TEST(RelayGateway, BrowsersUpgradedWhileTheGatewayStopsAreToldGoingAwayToo) {
  NatsServer server;
  constexpr int kRounds = 10;
  constexpr int kBrowsers = 8;
  int told = 0;
  for (int round = 0; round < kRounds; ++round) {
    Replica a(server.url(), "replica-" + std::to_string(round));
    ASSERT_TRUE(a.fleet.start());
    ASSERT_TRUE(a.gateway.start());
    const int port = a.gateway.port();
    std::vector<std::unique_ptr<WsClient>> browsers(kBrowsers);
    std::vector<std::thread> attaching;
    for (int i = 0; i < kBrowsers; ++i)
      attaching.emplace_back([&, i] {
        try {
          auto browser = std::make_unique<WsClient>(port, "/ws?member=m" + std::to_string(i));
          if (browser->status() != 101) return;  // refused: the gateway was stopping
          browser->start_reading();
          browsers[i] = std::move(browser);
        } catch (const std::exception&) {
          // cut before its upgrade was answered: the gateway had stopped
        }
      });
    ASSERT_TRUE(wait_for([&] { return a.gateway.stats().sessions > 0; }, 10s, 0ms));
    a.gateway.stop();
    for (auto& thread : attaching) thread.join();
    for (int i = 0; i < kBrowsers; ++i) {
      if (!browsers[i]) continue;
      ASSERT_TRUE(wait_for([&] { return browsers[i]->closed(); }, 10s)) << "round " << round;
      EXPECT_EQ(browsers[i]->close_reason().code, boost::beast::websocket::close_code::going_away)
          << "round " << round << ", browser " << i << " was upgraded, then cut";
      ++told;
    }
  }
  EXPECT_GT(told, 0) << "no browser was upgraded before the stop: the test saw nothing";
}

}  // namespace
}  // namespace natsfleet::testing
