#include "relay/websocket_gateway.h"
#include "relay/member_token.h"
#include "support/nats_server.h"
#include "support/websocket_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace natsfleet::relay {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
namespace fs = std::filesystem;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

using natsfleet::testing::WsClient;

// Generous bound for one exchange on loopback; only reached when something hangs.
constexpr auto kDeadline = 5s;

bool eventually(const std::function<bool()>& predicate,
                std::chrono::milliseconds within = kDeadline) {
  return natsfleet::testing::wait_for(predicate, within, 2ms);
}

std::shared_ptr<const std::string> status(std::string text) {
  return std::make_shared<const std::string>(std::move(text));
}

// One exchange on a fresh connection, bounded by kDeadline.
natsfleet::testing::HttpReply http_get(int port, const std::string& target,
                                       std::string_view method = "GET") {
  return natsfleet::testing::http_request(port, method, target, kDeadline);
}

std::unique_ptr<WsClient> attach(int port, const std::string& member) {
  auto client = std::make_unique<WsClient>(port, "/ws?member=" + member);
  EXPECT_EQ(client->status(), 101u) << member;
  client->start_reading();
  return client;
}

class WebSocketGatewayTest : public ::testing::Test {
 protected:
  std::unique_ptr<WebSocketGateway> start(GatewayOptions options = {}) {
    auto gateway = std::make_unique<WebSocketGateway>(std::move(options), registry_);
    auto started = gateway->start();
    EXPECT_TRUE(started.ok()) << started.error().describe();
    EXPECT_GT(gateway->port(), 0);
    return gateway;
  }

  bool attached(const std::string& member, std::size_t sessions) {
    return eventually([&] { return registry_.sessions(member) == sessions; });
  }

  SessionRegistry registry_;
};

TEST_F(WebSocketGatewayTest, EachMembersSessionsGetOnlyThatMembersStatuses) {
  auto gateway = start();
  std::vector<std::unique_ptr<WsClient>> alice, bob;
  for (int i = 0; i < 2; ++i) alice.push_back(attach(gateway->port(), "alice"));
  for (int i = 0; i < 3; ++i) bob.push_back(attach(gateway->port(), "bob"));
  ASSERT_TRUE(attached("alice", 2));
  ASSERT_TRUE(attached("bob", 3));

  EXPECT_EQ(registry_.deliver("alice", status(R"({"member":"alice","state":"syncing"})")), 2u);
  EXPECT_EQ(registry_.deliver("bob", status(R"({"member":"bob","state":"synced"})")), 3u);
  EXPECT_EQ(registry_.deliver("alice", status(R"({"member":"alice","state":"synced"})")), 2u);
  EXPECT_EQ(registry_.deliver("carol", status(R"({"member":"carol"})")), 0u);

  const std::vector<std::string> for_alice = {R"({"member":"alice","state":"syncing"})",
                                              R"({"member":"alice","state":"synced"})"};
  const std::vector<std::string> for_bob = {R"({"member":"bob","state":"synced"})"};
  for (auto& c : alice) {
    ASSERT_TRUE(eventually([&] { return c->count() >= 2; }));
    EXPECT_EQ(c->messages(), for_alice);
  }
  for (auto& c : bob) {
    ASSERT_TRUE(eventually([&] { return c->count() >= 1; }));
    EXPECT_EQ(c->messages(), for_bob);
  }
  // Nothing more arrives late: one more status to bob is the only thing bob's clients see next.
  registry_.deliver("bob", status("b2"));
  for (auto& c : bob) ASSERT_TRUE(eventually([&] { return c->count() == 2; }));
  for (auto& c : alice) EXPECT_EQ(c->count(), 2u);
  // A session is counted once listed, so the count may trail the registry for a moment.
  EXPECT_TRUE(eventually([&] { return gateway->stats().attached == 5u; }));
  // A frame is counted when its write completes, which may be after the client has read it.
  EXPECT_TRUE(eventually([&] { return gateway->stats().frames_sent == 10u; }))
      << gateway->stats().frames_sent;
}

TEST_F(WebSocketGatewayTest, AClosedClientLeavesTheRegistry) {
  auto gateway = start();
  auto stays = attach(gateway->port(), "alice");
  auto leaves = attach(gateway->port(), "alice");
  ASSERT_TRUE(attached("alice", 2));
  leaves->close();
  ASSERT_TRUE(eventually([&] { return leaves->closed(); }));
  EXPECT_EQ(leaves->close_reason().code, websocket::close_code::normal);
  ASSERT_TRUE(attached("alice", 1));
  EXPECT_TRUE(eventually([&] { return gateway->stats().sessions == 1; }));
  EXPECT_EQ(registry_.deliver("alice", status("s")), 1u);
  EXPECT_TRUE(eventually([&] { return stays->count() == 1; }));
}

TEST_F(WebSocketGatewayTest, InvalidMemberIdsAreRefusedWith400) {
  auto gateway = start();
  for (const std::string& target :
       std::vector<std::string>{"/ws", "/ws?member=", "/ws?members=alice", "/ws?member=a%2Fb",
                                "/ws?member=a%20b", "/ws?member=%zz", "/ws?member=a&member=b",
                                "/ws?member=" + std::string(65, 'x'), "/ws?member=%3Cscript%3E"}) {
    WsClient client(gateway->port(), target);
    EXPECT_EQ(client.status(), 400u) << target;
  }
  EXPECT_EQ(gateway->stats().refused_member, 9u);
  EXPECT_EQ(registry_.stats().sessions, 0u);

  // The edges of what is valid: escapes are decoded, 64 characters are fine.
  auto escaped = attach(gateway->port(), "alice%40example");
  auto longest = attach(gateway->port(), std::string(64, 'x'));
  EXPECT_TRUE(attached("alice@example", 1));
  EXPECT_TRUE(attached(std::string(64, 'x'), 1));
}

TEST_F(WebSocketGatewayTest, UpgradesBeyondMaxSessionsAreRefusedWith503) {
  auto gateway = start({.max_sessions = 2});
  auto first = attach(gateway->port(), "alice");
  auto second = attach(gateway->port(), "bob");
  {
    WsClient third(gateway->port(), "/ws?member=carol");
    EXPECT_EQ(third.status(), 503u);
  }
  EXPECT_EQ(gateway->stats().refused_full, 1u);
  // Static files are not sessions: still served at the limit.
  EXPECT_EQ(http_get(gateway->port(), "/healthz").status, 200);

  first->close();
  ASSERT_TRUE(eventually([&] { return gateway->stats().sessions == 1; }));
  auto fourth = attach(gateway->port(), "carol");
  EXPECT_TRUE(attached("carol", 1));
}

// A browser page from another site must not read members' statuses: only the gateway's own pages
// (and the origins listed) may attach; a client without Origin is not a browser.
TEST_F(WebSocketGatewayTest, UpgradesFromOtherOriginsAreRefusedWith403) {
  auto gateway = start();
  const int port = gateway->port();
  // Beast sends "Host: 127.0.0.1", so that is this gateway's own origin's host.
  EXPECT_EQ(WsClient(port, "/ws?member=alice", false, {{"Origin", "http://127.0.0.1"}}).status(),
            101u);
  EXPECT_EQ(WsClient(port, "/ws?member=alice").status(), 101u);
  for (const std::string origin :
       {"https://evil.example", "null", "http://127.0.0.1.evil.example", "http://127.0.0.1:1"}) {
    EXPECT_EQ(WsClient(port, "/ws?member=alice", false, {{"Origin", origin}}).status(), 403u)
        << origin;
  }
  EXPECT_EQ(gateway->stats().refused_origin, 4u);

  auto listed = start({.allowed_origins = {"https://app.example.com"}});
  EXPECT_EQ(
      WsClient(listed->port(), "/ws?member=alice", false, {{"Origin", "https://APP.example.com"}})
          .status(),
      101u);
  EXPECT_EQ(WsClient(listed->port(), "/ws?member=alice", false, {{"Origin", "http://127.0.0.1"}})
                .status(),
            403u)
      << "a list replaces same-origin";
  EXPECT_EQ(listed->stats().refused_origin, 1u);
  auto any = start({.allowed_origins = {"*"}});
  EXPECT_EQ(WsClient(any->port(), "/ws?member=alice", false, {{"Origin", "https://evil.example"}})
                .status(),
            101u);
}

constexpr std::string_view kSecret = "0123456789abcdef0123456789abcdef0123456789abcdef";

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// With a token secret, the member is the one the backend signed for, never the one a caller
// names; every refusal is counted by reason.
TEST_F(WebSocketGatewayTest, WithATokenSecretOnlyASignedMemberAttaches) {
  auto gateway = start({.token_secret = std::string(kSecret)});
  const int port = gateway->port();
  const std::string alice = mint_member_token("alice", unix_now() + 60, kSecret);

  auto client = std::make_unique<WsClient>(port, "/ws?token=" + alice);
  ASSERT_EQ(client->status(), 101u);
  client->start_reading();
  ASSERT_TRUE(attached("alice", 1));
  EXPECT_EQ(WsClient(port, "/ws?member=alice&token=" + alice).status(), 101u);
  EXPECT_EQ(WsClient(port, "/ws", false, {{"Authorization", "Bearer " + alice}}).status(), 101u);

  EXPECT_EQ(WsClient(port, "/ws?member=alice").status(), 401u) << "no token";
  EXPECT_EQ(WsClient(port, "/ws?member=bob&token=" + alice).status(), 403u) << "another member";
  const std::string expired = mint_member_token("alice", unix_now() - 1, kSecret);
  EXPECT_EQ(WsClient(port, "/ws?token=" + expired).status(), 401u);
  const std::string forged =
      mint_member_token("alice", unix_now() + 60, "another secret of enough length, 32+ bytes");
  EXPECT_EQ(WsClient(port, "/ws?token=" + forged).status(), 403u);
  std::string altered = alice;
  altered.replace(0, 5, "carol");  // same signature, another member
  EXPECT_EQ(WsClient(port, "/ws?token=" + altered).status(), 403u);
  EXPECT_EQ(WsClient(port, "/ws?token=alice.notanumber.00").status(), 403u);

  const GatewayStats stats = gateway->stats();
  EXPECT_EQ(stats.refused_unauthenticated, 1u);
  EXPECT_EQ(stats.refused_member_mismatch, 1u);
  EXPECT_EQ(stats.refused_expired, 1u);
  EXPECT_EQ(stats.refused_bad_token, 3u);
  EXPECT_EQ(registry_.deliver("alice", status("s")), 1u);
  EXPECT_EQ(registry_.sessions("bob"), 0u);
  EXPECT_EQ(registry_.sessions("carol"), 0u);
}

TEST_F(WebSocketGatewayTest, AnAuthenticatingProxysHeaderNamesTheMember) {
  auto gateway = start({.member_header = "X-Auth-Member"});
  const int port = gateway->port();
  auto client =
      std::make_unique<WsClient>(port, "/ws", false, WsClient::Headers{{"X-Auth-Member", "alice"}});
  ASSERT_EQ(client->status(), 101u);
  ASSERT_TRUE(attached("alice", 1));
  EXPECT_EQ(WsClient(port, "/ws?member=alice").status(), 401u)
      << "no header: not through the proxy";
  EXPECT_EQ(WsClient(port, "/ws?member=bob", false, {{"X-Auth-Member", "alice"}}).status(), 403u);
  EXPECT_EQ(WsClient(port, "/ws", false, {{"X-Auth-Member", "a b"}}).status(), 403u);
  EXPECT_EQ(gateway->stats().refused_unauthenticated, 1u);
  EXPECT_EQ(gateway->stats().refused_member_mismatch, 1u);
  EXPECT_EQ(registry_.sessions("bob"), 0u);
}

// Idle TCP connections (a port scanner, a misbehaving client) must not keep browsers from
// attaching: at the limit, the connection waiting longest for its request makes room.
TEST_F(WebSocketGatewayTest, IdleConnectionsCannotStarveUpgrades) {
  // A header deadline that none of the idle connections reaches here.
  auto gateway = start({.header_timeout = 60s, .max_http_connections = 16});
  net::io_context ioc;
  std::vector<std::unique_ptr<tcp::socket>> idle;
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"),
                               static_cast<uint16_t>(gateway->port()));
  for (int i = 0; i < 200; ++i) {
    auto socket = std::make_unique<tcp::socket>(ioc);
    socket->connect(endpoint);
    idle.push_back(std::move(socket));
  }
  auto client = attach(gateway->port(), "alice");
  EXPECT_TRUE(attached("alice", 1));
  // Attached by making room at once, not once idle connections reached their header deadline.
  EXPECT_EQ(gateway->stats().cut_idle, 0u);
  EXPECT_EQ(http_get(gateway->port(), "/healthz").status, 200);
  EXPECT_TRUE(eventually([&] { return gateway->stats().evicted >= 200u - 16u; }))
      << gateway->stats().evicted;
  EXPECT_LE(gateway->stats().http_connections, 16u);
}

// One byte a second never completes an upgrade request: cut at the header deadline, counted.
TEST_F(WebSocketGatewayTest, SlowLorisIsCutAtTheHeaderDeadline) {
  auto gateway = start({.header_timeout = 1500ms});
  net::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(
      tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(gateway->port())));
  const std::string request =
      "GET /ws?member=alice HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\r\n";
  std::size_t sent = 0;
  bool closed = false;
  for (; sent < request.size() && !closed; ++sent) {
    beast::error_code ec;
    net::write(socket, net::buffer(request.data() + sent, 1), ec);
    if (ec) break;
    // A second's pace, watching for the server closing the connection meanwhile.
    pollfd p{socket.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, 1000) > 0) {
      char byte = 0;
      closed = ::recv(socket.native_handle(), &byte, 1, 0) <= 0;
      EXPECT_TRUE(closed) << "the server answered a request it cannot have read";
    }
  }
  EXPECT_LE(sent, 4u) << "the server let it trickle for " << sent << " s";
  EXPECT_TRUE(eventually([&] { return gateway->stats().cut_slow == 1u; }));
  EXPECT_EQ(gateway->stats().cut_idle, 0u);
}

class StaticFilesGatewayTest : public WebSocketGatewayTest {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() /
            ("natsfleet-gateway-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_ / "web");
    std::ofstream(base_ / "web" / "index.html") << "<!doctype html><p>status</p>";
    std::ofstream(base_ / "web" / "app.js") << "console.log(1);";
    std::ofstream(base_ / "web" / "style.css") << "p{}";
    std::ofstream(base_ / "secret.txt") << "top secret";
  }
  void TearDown() override { fs::remove_all(base_); }

  fs::path base_;
};

TEST_F(StaticFilesGatewayTest, ServesTheWebRootAndInMemoryPages) {
  GatewayOptions options;
  options.web_root = base_ / "web";
  options.pages["/about"] = StaticPage{"text/plain; charset=utf-8", "natsfleet relay"};
  auto gateway = start(options);
  const int port = gateway->port();

  auto r = http_get(port, "/");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "<!doctype html><p>status</p>");
  EXPECT_EQ(r.header("Content-Type"), "text/html; charset=utf-8");
  r = http_get(port, "/app.js?v=3");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(http_get(port, "/style.css").header("Content-Type"), "text/css; charset=utf-8");
  r = http_get(port, "/about");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "natsfleet relay");
  r = http_get(port, "/healthz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
  EXPECT_EQ(http_get(port, "/missing.html").status, 404);
  EXPECT_EQ(http_get(port, "/", "POST").status, 405);
  // A plain GET of the WebSocket path is not an upgrade.
  EXPECT_EQ(http_get(port, "/ws?member=alice").status, 426);
}

TEST_F(StaticFilesGatewayTest, PathTraversalIsRefused) {
  GatewayOptions options;
  options.web_root = base_ / "web";
  auto gateway = start(options);
  for (const char* target :
       {"/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt", "/web/../../secret.txt",
        "/..%2f..%2fsecret.txt", "/./../secret.txt", "/%2e%2e%5csecret.txt"}) {
    const auto r = http_get(gateway->port(), target);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_EQ(r.body.find("top secret"), std::string::npos) << target;
  }
}

TEST_F(StaticFilesGatewayTest, AWebRootThatIsNotADirectoryFailsStart) {
  WebSocketGateway gateway({.web_root = base_ / "nowhere"}, registry_);
  const auto started = gateway.start();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().describe().find("nowhere"), std::string::npos);
}

TEST_F(WebSocketGatewayTest, APortInUseIsReportedByStart) {
  auto first = start();
  WebSocketGateway second({.port = static_cast<uint16_t>(first->port())}, registry_);
  const auto started = second.start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().code, std::errc::address_in_use);
}

TEST_F(WebSocketGatewayTest, AProcessSpawnedWhileServingDoesNotKeepThePort) {
  auto first = start();
  const auto port = static_cast<uint16_t>(first->port());
  auto client = attach(port, "alice");
  ASSERT_TRUE(attached("alice", 1));
  // As the daemon does for a worker sink: the child must not inherit the listener or a session.
  const auto held = natsfleet::testing::tcp_ports_a_child_inherits();
  EXPECT_EQ(held.count(port), 0u) << "the child holds a socket on the gateway's port " << port;
}

TEST_F(WebSocketGatewayTest, AClientThatNeverReadsIsDroppedWithoutHoldingUpOthers) {
  auto gateway = start({.max_queued_messages = 16});
  auto fast = attach(gateway->port(), "alice");
  WsClient slow(gateway->port(), "/ws?member=alice", /*small_receive_buffer=*/true);
  ASSERT_EQ(slow.status(), 101u);
  auto bob = attach(gateway->port(), "bob");
  ASSERT_TRUE(attached("alice", 2));
  ASSERT_TRUE(attached("bob", 1));

  // Large statuses, one at a time once the reading client has the previous one: the silent
  // client's socket and then its queue fill up while the reading client keeps getting everything.
  const auto big = status(std::string(std::size_t{64} * 1024, 's'));
  std::size_t sent = 0;
  for (; sent < 500 && gateway->stats().dropped_slow == 0; ++sent) {
    registry_.deliver("alice", big);
    ASSERT_TRUE(eventually([&] { return fast->count() == sent + 1; }))
        << "the reading client stalled at " << fast->count() << " of " << sent + 1;
  }
  EXPECT_EQ(gateway->stats().dropped_slow, 1u);
  EXPECT_LT(sent, 500u);
  ASSERT_TRUE(attached("alice", 1)) << "the dropped session is still registered";
  // The survivor and other members are unaffected.
  EXPECT_EQ(registry_.deliver("alice", status("after")), 1u);
  EXPECT_EQ(registry_.deliver("bob", status("bob")), 1u);
  EXPECT_TRUE(eventually([&] { return fast->count() == sent + 1 && bob->count() == 1; }));
  EXPECT_EQ(fast->messages().back(), "after");
  EXPECT_TRUE(eventually([&] { return gateway->stats().sessions == 2; }));
}

TEST_F(WebSocketGatewayTest, ASilentClientIsClosedAfterTheIdleTimeoutWhileAPongingOneStays) {
  auto gateway = start({.ping_interval = 50ms, .idle_timeout = 400ms});
  auto answering = attach(gateway->port(), "alice");  // reads, so it answers pings
  WsClient silent(gateway->port(), "/ws?member=bob");
  ASSERT_EQ(silent.status(), 101u);
  ASSERT_TRUE(attached("alice", 1));
  ASSERT_TRUE(attached("bob", 1));

  ASSERT_TRUE(eventually([&] { return registry_.sessions("bob") == 0; }))
      << "the silent client was never closed";
  EXPECT_EQ(gateway->stats().closed_idle, 1u);
  // The answering client has now outlived the idle timeout several times over.
  std::this_thread::sleep_for(3 * 400ms);
  EXPECT_EQ(registry_.sessions("alice"), 1u);
  EXPECT_FALSE(answering->closed());
  EXPECT_EQ(gateway->stats().closed_idle, 1u);
  EXPECT_EQ(registry_.deliver("alice", status("still here")), 1u);
  EXPECT_TRUE(eventually([&] { return answering->count() == 1; }));
}

TEST_F(WebSocketGatewayTest, OnAttachIsCalledForEveryAttach) {
  auto gateway = start();
  std::mutex mu;
  std::vector<std::string> seen;
  gateway->on_attach([&](const std::string& member) {
    std::lock_guard lock(mu);
    seen.push_back(member);
  });
  auto a1 = attach(gateway->port(), "alice");
  ASSERT_TRUE(attached("alice", 1));
  auto b = attach(gateway->port(), "bob");
  ASSERT_TRUE(attached("bob", 1));
  auto a2 = attach(gateway->port(), "alice");
  ASSERT_TRUE(attached("alice", 2));
  WsClient refused(gateway->port(), "/ws?member=a%2Fb");
  ASSERT_EQ(refused.status(), 400u);
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return seen.size() == 3;
  }));
  std::lock_guard lock(mu);
  EXPECT_EQ(seen, (std::vector<std::string>{"alice", "bob", "alice"}));
}

TEST_F(WebSocketGatewayTest, ABlockedAttachHookDoesNotHoldUpSessions) {
  auto gateway = start();
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> calls{0};
  gateway->on_attach([&](const std::string&) {
    ++calls;
    std::unique_lock lock(mu);
    // Bounded, so that a gateway running hooks on its io thread fails here instead of hanging.
    cv.wait_for(lock, 2 * kDeadline, [&] { return release; });
  });
  auto first = attach(gateway->port(), "alice");
  ASSERT_TRUE(eventually([&] { return calls == 1; }));
  // The hook is stuck; attaching and delivering still work.
  auto second = attach(gateway->port(), "bob");
  ASSERT_TRUE(attached("bob", 1));
  EXPECT_EQ(registry_.deliver("bob", status("s")), 1u);
  EXPECT_TRUE(eventually([&] { return second->count() == 1; }));
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(eventually([&] { return calls == 2; }));
}

TEST_F(WebSocketGatewayTest, StopClosesOpenSessionsCleanly) {
  // Queues deep enough that the producer below never gets a session dropped as slow.
  // A stop_timeout far longer than the clients take to answer the close.
  auto gateway = start({.stop_timeout = 60s, .max_queued_messages = 1000000, .io_threads = 2});
  std::vector<std::unique_ptr<WsClient>> clients;
  for (const char* member : {"alice", "alice", "bob"})
    clients.push_back(attach(gateway->port(), member));
  ASSERT_TRUE(attached("alice", 2));
  ASSERT_TRUE(attached("bob", 1));

  // Statuses keep coming from another thread while the gateway stops.
  std::atomic<bool> delivering{true};
  std::thread producer([&] {
    while (delivering) {
      registry_.deliver("alice", status("s"));
      std::this_thread::sleep_for(100us);
    }
  });
  const int port = gateway->port();
  const auto began = std::chrono::steady_clock::now();
  gateway->stop();
  const auto took = std::chrono::steady_clock::now() - began;
  delivering = false;
  producer.join();

  EXPECT_LT(took, 30s) << "the clients answered; stop need not wait";
  for (auto& c : clients) {
    ASSERT_TRUE(eventually([&] { return c->closed(); }));
    EXPECT_EQ(c->close_reason().code, websocket::close_code::going_away);
  }
  EXPECT_EQ(registry_.stats().sessions, 0u);
  EXPECT_EQ(registry_.deliver("alice", status("late")), 0u);
  EXPECT_EQ(gateway->stats().sessions, 0u);
  EXPECT_EQ(gateway->port(), 0);
  gateway->stop();  // idempotent
  gateway.reset();
  EXPECT_EQ(http_get(port, "/healthz").status, -1) << "still listening";
}

TEST_F(WebSocketGatewayTest, StopCutsAClientThatDoesNotAnswerTheClose) {
  auto gateway = start({.stop_timeout = 300ms});
  WsClient silent(gateway->port(), "/ws?member=alice");
  ASSERT_EQ(silent.status(), 101u);
  ASSERT_TRUE(attached("alice", 1));
  gateway->stop();
  EXPECT_EQ(registry_.stats().sessions, 0u);
  EXPECT_EQ(gateway->stats().sessions, 0u);
}

}  // namespace
}  // namespace natsfleet::relay
