#include "health/health_server.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include <poll.h>
#include <sys/socket.h>

#include "health/metrics.h"
#include "health_fixtures.h"
#include "prometheus_parser.h"
#include "support/http_connection.h"
#include "support/nats_server.h"

namespace natsfleet::health {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

// Generous bound for one exchange with a server on loopback; only hit when something hangs.
constexpr auto kClientDeadline = 5s;

using Reply = natsfleet::testing::HttpConnectionReply;
using Client = natsfleet::testing::HttpConnection;

// A slow-loris client: sends a request one byte per `pace`, watching between bytes for the server
// closing the connection.
class SlowLoris {
 public:
  explicit SlowLoris(int port) : socket_(ioc_) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
  }

  // Bytes sent before the server closed the connection (all of them if it never did).
  std::size_t trickle(const std::string& request, std::chrono::milliseconds pace) {
    for (std::size_t sent = 0; sent < request.size(); ++sent) {
      beast::error_code ec;
      net::write(socket_, net::buffer(request.data() + sent, 1), ec);
      if (ec) return sent;
      if (closed_within(pace)) return sent + 1;
    }
    return request.size();
  }
  const std::string& received() const { return received_; }

 private:
  bool closed_within(std::chrono::milliseconds pace) {
    const auto until = std::chrono::steady_clock::now() + pace;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{socket_.native_handle(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[512];
      const auto n = ::recv(socket_.native_handle(), chunk, sizeof chunk, 0);
      if (n <= 0) return true;
      received_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  net::io_context ioc_;
  tcp::socket socket_;
  std::string received_;
};

// The health the server reports, changed by the test while the server runs.
class HealthBox {
 public:
  void set(FleetHealth h) {
    std::lock_guard lock(mu_);
    health_ = std::move(h);
  }
  FleetHealth get() const {
    std::lock_guard lock(mu_);
    return health_;
  }
  HealthSource source() {
    return [this] { return get(); };
  }

 private:
  mutable std::mutex mu_;
  FleetHealth health_;
};

FleetHealth ready_health() {
  FleetHealth h = testing::two_subscriptions();
  for (auto& s : h.subscriptions) s.state = SubscriptionState::bound;
  h.ready = true;
  return h;
}

class HealthServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    box_.set(ready_health());
    metrics_.register_subscription("mail-relay");
    metrics_.register_subscription("status");
  }

  std::unique_ptr<HealthServer> start(HealthServerOptions options = {}) {
    if (options.listen == HealthServerOptions{}.listen) options.listen = "127.0.0.1:0";
    auto server = std::make_unique<HealthServer>(options, box_.source(), metrics_, "mailer");
    auto started = server->start();
    EXPECT_TRUE(started.ok()) << started.error().describe();
    EXPECT_GT(server->port(), 0);
    return server;
  }

  HealthBox box_;
  DaemonMetrics metrics_;
};

TEST_F(HealthServerTest, AProcessSpawnedWhileServingDoesNotKeepThePort) {
  auto server = start();
  const int port = server->port();
  Client client(port);
  EXPECT_EQ(client.get("/healthz").status, 200u);
  // As the daemon does for a worker sink: the child must inherit neither the listener nor the
  // accepted connection (either would keep the health port bound after the daemon exits).
  const auto held = natsfleet::testing::tcp_ports_a_child_inherits();
  EXPECT_EQ(held.count(port), 0u) << "the child holds a socket on the health port " << port;
}

TEST_F(HealthServerTest, HealthzFollowsLiveness) {
  auto server = start();
  Client client(server->port());
  auto r = client.get("/healthz");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "ok\n");

  FleetHealth fatal = ready_health();
  fatal.live = false;
  fatal.ready = false;
  fatal.fatal_reason = "mail-relay: stream MAIL was deleted";
  box_.set(fatal);
  r = client.get("/healthz");
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(r.body, "fatal: mail-relay: stream MAIL was deleted\n");
}

TEST_F(HealthServerTest, ReadyzFollowsReadinessWithReasons) {
  auto server = start();
  Client client(server->port());
  auto r = client.get("/readyz");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "ready\n");

  FleetHealth recovering = ready_health();
  recovering.ready = false;
  recovering.subscriptions[0].state = SubscriptionState::recovering;
  recovering.subscriptions[0].last_error = "missed idle heartbeats";
  box_.set(recovering);
  r = client.get("/readyz");
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(r.body, "work mail-relay is recovering: missed idle heartbeats\n");
  // Not ready is not dead.
  EXPECT_EQ(client.get("/healthz").status, 200u);

  box_.set(ready_health());
  EXPECT_EQ(client.get("/readyz").status, 200u);
}

TEST_F(HealthServerTest, MetricsAreStrictPrometheusText) {
  metrics_.register_subscription("mail-relay").observe(4ms, Disposition::Kind::ack);
  auto server = start();
  Client client(server->port());
  const auto r = client.get("/metrics");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const auto parsed = testing::parse_prometheus(r.body);
  EXPECT_EQ(parsed.value("natsfleet_up", {{"service", "mailer"}}), 1);
  EXPECT_EQ(parsed.value("natsfleet_ready", {{"service", "mailer"}}), 1);
  EXPECT_EQ(parsed.value("natsfleet_sink_results_total", {{"service", "mailer"},
                                                          {"subscription", "mail-relay"},
                                                          {"kind", "work"},
                                                          {"outcome", "ack"}}),
            1);
  // A scraper may add a query string.
  EXPECT_EQ(client.get("/metrics?name[]=natsfleet_up").status, 200u);
}

TEST_F(HealthServerTest, StatusIsJson) {
  auto server = start();
  Client client(server->port());
  const auto r = client.get("/status");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "application/json");
  const auto doc = nlohmann::json::parse(r.body);
  EXPECT_EQ(doc["service"], "mailer");
  EXPECT_EQ(doc["subscriptions"].size(), 2u);
  EXPECT_EQ(doc["subscriptions"][0]["counters"]["acked"], 1001);
}

TEST_F(HealthServerTest, UnknownPathIs404AndOtherMethodsAre405) {
  auto server = start();
  Client client(server->port());
  EXPECT_EQ(client.get("/").status, 404u);
  EXPECT_EQ(client.get("/healthz/extra").status, 404u);
  const auto post = client.request(http::verb::post, "/healthz");
  EXPECT_EQ(post.status, 405u);
  EXPECT_EQ(post.allow, "GET");
  EXPECT_EQ(client.request(http::verb::delete_, "/metrics").status, 405u);
  EXPECT_EQ(client.request(http::verb::put, "/nowhere").status, 405u);
  // The connection survived all of that.
  EXPECT_EQ(client.get("/healthz").status, 200u);
}

TEST_F(HealthServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  auto server = start();
  Client client(server->port());
  for (int i = 0; i < 20; ++i) {
    const auto r = client.get(i % 2 ? "/healthz" : "/metrics");
    ASSERT_EQ(r.status, 200u);
    EXPECT_TRUE(r.keep_alive);
  }
}

TEST_F(HealthServerTest, Http10RequestIsAnsweredThenClosed) {
  auto server = start();
  Client client(server->port());
  const auto r = client.request(http::verb::get, "/healthz", 10);
  EXPECT_EQ(r.status, 200u);
  EXPECT_FALSE(r.keep_alive);
  EXPECT_TRUE(client.closed_by_server(std::chrono::milliseconds(kClientDeadline)));
}

TEST_F(HealthServerTest, GarbageGets400AndIsClosed) {
  auto server = start();
  Client client(server->port());
  client.send_raw("NOT HTTP AT ALL\r\n\r\n");
  EXPECT_TRUE(client.closed_by_server(std::chrono::milliseconds(kClientDeadline)));
  EXPECT_EQ(client.received().rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << client.received();
  EXPECT_EQ(Client(server->port()).get("/healthz").status, 200u);
}

TEST_F(HealthServerTest, ThrowingHealthSourceIs500) {
  HealthServer server(
      {.listen = "127.0.0.1:0"}, []() -> FleetHealth { throw std::runtime_error("fleet is gone"); },
      metrics_, "mailer");
  ASSERT_TRUE(server.start().ok());
  Client client(server.port());
  const auto r = client.get("/healthz");
  EXPECT_EQ(r.status, 500u);
  EXPECT_NE(r.body.find("fleet is gone"), std::string::npos);
  EXPECT_EQ(client.get("/nope").status, 404u);
}

TEST_F(HealthServerTest, IdleConnectionDoesNotBlockAnotherClient) {
  auto server = start();  // default 10s idle timeout: the idle client stays connected throughout
  Client idle(server->port());
  Client half(server->port());
  half.send_raw("GET /hea");  // a request that never completes
  Client other(server->port());
  EXPECT_EQ(other.get("/healthz").status, 200u);
  EXPECT_EQ(Client(server->port()).get("/readyz").status, 200u);
  EXPECT_FALSE(idle.closed_by_server(100ms));
}

TEST_F(HealthServerTest, IdleAndSlowClientsAreClosedAfterTheHeaderDeadlineAndCounted) {
  auto server = start({.header_timeout = 300ms});
  Client idle(server->port());
  Client slow(server->port());
  slow.send_raw("GET /healthz HTTP/1.1\r\n");  // headers never finish
  EXPECT_TRUE(idle.closed_by_server(std::chrono::milliseconds(kClientDeadline)));
  EXPECT_TRUE(slow.closed_by_server(std::chrono::milliseconds(kClientDeadline)));
  EXPECT_EQ(slow.received(), "") << "a cut request is not answered";
  // A kept-alive connection that goes quiet is closed too.
  Client quiet(server->port());
  EXPECT_EQ(quiet.get("/healthz").status, 200u);
  EXPECT_TRUE(quiet.closed_by_server(std::chrono::milliseconds(kClientDeadline)));
  // The client may see the close just before the server counts it.
  EXPECT_TRUE(natsfleet::testing::wait_for([&] { return server->stats().cut_idle == 2u; }, 5s));
  EXPECT_EQ(server->stats().cut_slow, 1u);
  const std::string metrics = Client(server->port()).get("/metrics").body;
  EXPECT_NE(
      metrics.find("natsfleet_http_connections_cut_total{service=\"mailer\",server=\"health\","
                   "reason=\"slow\"} 1\n"),
      std::string::npos)
      << metrics;
}

// One byte a second never completes the headers: the connection is cut at the header deadline,
// long before the request could finish, and counted as slow.
TEST_F(HealthServerTest, SlowLorisIsCutAtTheHeaderDeadline) {
  auto server = start({.header_timeout = 1500ms});
  SlowLoris loris(server->port());
  const auto began = std::chrono::steady_clock::now();
  const std::size_t sent = loris.trickle("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 1s);
  const auto took = std::chrono::steady_clock::now() - began;
  EXPECT_LE(sent, 4u) << "the server let it trickle for " << sent << " s";
  EXPECT_GE(took, 1400ms);
  EXPECT_EQ(loris.received(), "") << "a cut request is not answered";
  // The client may see the close just before the server counts it.
  EXPECT_TRUE(natsfleet::testing::wait_for([&] { return server->stats().cut_slow == 1u; }, 5s));
  EXPECT_EQ(server->stats().cut_idle, 0u);
}

TEST_F(HealthServerTest, AtTheLimitTheConnectionWaitingLongestMakesRoom) {
  auto server = start({.max_connections = 2});
  Client a(server->port());
  Client b(server->port());
  EXPECT_EQ(a.get("/healthz").status, 200u);
  EXPECT_EQ(b.get("/healthz").status, 200u);
  // Both wait for their next request now, a for longer: a goes so that c is served.
  Client c(server->port());
  EXPECT_EQ(c.get("/healthz").status, 200u);
  EXPECT_TRUE(a.closed_by_server(std::chrono::milliseconds(kClientDeadline)));
  EXPECT_FALSE(b.closed_by_server(100ms));
  EXPECT_EQ(server->stats().evicted, 1u);
}

// A client holding a thousand idle connections open must not get the pod restarted by its own
// liveness probe: the probe is answered at once, however many there are.
TEST_F(HealthServerTest, ProbeIsAnsweredWhileAThousandIdleConnectionsAreOpen) {
  // 128 connections (the default); a header deadline that none of the idle ones reaches here.
  auto server = start({.header_timeout = 60s});
  net::io_context ioc;
  std::vector<std::unique_ptr<tcp::socket>> idle;
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"),
                               static_cast<uint16_t>(server->port()));
  for (int i = 0; i < 1000; ++i) {
    auto socket = std::make_unique<tcp::socket>(ioc);
    socket->connect(endpoint);
    idle.push_back(std::move(socket));
  }
  Client probe(server->port());
  const auto r = probe.get("/healthz");
  EXPECT_EQ(r.status, 200u);
  // Served by making room at once, not once idle connections reached their header deadline.
  EXPECT_EQ(server->stats().cut_idle, 0u);
  EXPECT_TRUE(
      natsfleet::testing::wait_for([&] { return server->stats().evicted >= 1000u - 128u; }, 5s))
      << server->stats().evicted;
  EXPECT_LE(server->stats().connections, 128u);
}

TEST_F(HealthServerTest, AddressInUseIsAnErrorNamingTheAddress) {
  auto first = start();
  const std::string address = "127.0.0.1:" + std::to_string(first->port());
  HealthServer second({.listen = address}, box_.source(), metrics_, "mailer");
  const auto started = second.start();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().describe().find(address), std::string::npos)
      << started.error().describe();
  EXPECT_EQ(started.error().code, std::errc::address_in_use) << started.error().code.message();
  EXPECT_EQ(second.port(), 0);
  second.stop();  // harmless after a failed start
  EXPECT_EQ(Client(first->port()).get("/healthz").status, 200u);
}

TEST_F(HealthServerTest, StopIsPromptWithClientsConnectedAndFreesThePort) {
  auto server = start({.idle_timeout = 60s});  // stop() must not wait for it
  const int port = server->port();
  Client idle(port);
  Client kept(port);
  ASSERT_EQ(kept.get("/healthz").status, 200u);

  const auto begin = std::chrono::steady_clock::now();
  server->stop();
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_LT(took, 30s) << "stop waited for the idle clients";
  EXPECT_EQ(server->port(), 0);
  EXPECT_TRUE(idle.closed_by_server(std::chrono::milliseconds(kClientDeadline)));
  EXPECT_TRUE(kept.closed_by_server(std::chrono::milliseconds(kClientDeadline)));
  server->stop();  // idempotent

  // The same address can be served again at once.
  HealthServer again({.listen = "127.0.0.1:" + std::to_string(port)}, box_.source(), metrics_,
                     "mailer");
  ASSERT_TRUE(again.start().ok());
  EXPECT_EQ(again.port(), port);
  EXPECT_EQ(Client(port).get("/healthz").status, 200u);
}

TEST_F(HealthServerTest, DestructorStopsARunningServer) {
  auto server = start();
  Client idle(server->port());
  server.reset();
  EXPECT_TRUE(idle.closed_by_server(std::chrono::milliseconds(kClientDeadline)));
}

TEST_F(HealthServerTest, SecondStartIsRefused) {
  auto server = start();
  EXPECT_FALSE(server->start().ok());
  EXPECT_EQ(Client(server->port()).get("/healthz").status, 200u);
}

TEST_F(HealthServerTest, UnusableListenAddressFailsToStart) {
  HealthServer bad({.listen = "127.0.0.1"}, box_.source(), metrics_, "mailer");
  const auto started = bad.start();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().describe().find("127.0.0.1"), std::string::npos);
  // 192.0.2.1 (TEST-NET-1) is not an address of this machine.
  HealthServer foreign({.listen = "192.0.2.1:0"}, box_.source(), metrics_, "mailer");
  const auto foreign_started = foreign.start();
  ASSERT_FALSE(foreign_started.ok());
  EXPECT_NE(foreign_started.error().describe().find("192.0.2.1:0"), std::string::npos);
}

TEST(ParseListenAddress, AcceptsHostPortForms) {
  auto a = parse_listen_address("127.0.0.1:9464");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9464);
  a = parse_listen_address("[::1]:0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 0);
  a = parse_listen_address("localhost:65535");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "localhost");
  EXPECT_EQ(a->port, 65535);
  a = parse_listen_address(":9464");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "0.0.0.0");
}

TEST(ParseListenAddress, RejectsMalformedAddresses) {
  for (const char* text : {"", "9464", "host:", "host:http", "host:65536", "host:-1", "host:12x",
                           "::1:80", "[::1:80", "[]:80"}) {
    const auto a = parse_listen_address(text);
    EXPECT_FALSE(a.ok()) << text;
    if (!a.ok()) {
      EXPECT_NE(a.error().describe().find(std::string("\"") + text + "\""), std::string::npos)
          << a.error().describe();
    }
  }
}

}  // namespace
}  // namespace natsfleet::health
