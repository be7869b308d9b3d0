#include "net/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <poll.h>
#include <sys/socket.h>

#include "support/http_connection.h"
#include "support/nats_server.h"

namespace natsfleet::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// Generous bound for one exchange on loopback; only reached when something hangs.
constexpr auto kDeadline = std::chrono::milliseconds(5s);

using Reply = natsfleet::testing::HttpConnectionReply;
using Client = natsfleet::testing::HttpConnection;

Handler says(std::string text) {
  return [text = std::move(text)](const Request& req) -> Answer {
    return text_response(http::status::ok, text, req.version());
  };
}

std::unique_ptr<HttpServer> started(std::unique_ptr<HttpServer> server) {
  const auto result = server->start();
  EXPECT_TRUE(result.ok()) << result.error().describe();
  EXPECT_GT(server->port(), 0);
  return server;
}

std::unique_ptr<HttpServer> server_with(HttpServerOptions options) {
  options.name = "test server";
  auto server = std::make_unique<HttpServer>(std::move(options));
  server->route(http::verb::get, "/hello", says("hello\n"));
  return server;
}

TEST(HttpServer, RoutesByMethodAndPathIgnoringTheQuery) {
  auto server = server_with({});
  server->route(http::verb::post, "/hello", says("posted\n"));
  server->route(http::verb::get, "/other", says("other\n"));
  server = started(std::move(server));
  Client client(server->port());
  EXPECT_EQ(client.get("/hello").body, "hello\n");
  EXPECT_EQ(client.get("/hello?verbose=1").body, "hello\n");
  EXPECT_EQ(client.request(http::verb::post, "/hello").body, "posted\n");
  EXPECT_EQ(client.get("/other").body, "other\n");
}

TEST(HttpServer, UnknownPathIs404AndAMethodNoRouteTakesIs405) {
  auto server = server_with({});
  server->route(http::verb::post, "/submit", says("taken\n"));
  server = started(std::move(server));
  Client client(server->port());
  EXPECT_EQ(client.get("/nowhere").status, 404u);
  EXPECT_EQ(client.request(http::verb::post, "/nowhere").status, 404u);
  // A path with routes, but none for this method: Allow names the path's methods.
  const auto wrong_method = client.request(http::verb::post, "/hello");
  EXPECT_EQ(wrong_method.status, 405u);
  EXPECT_EQ(wrong_method.allow, "GET");
  // A method no route takes anywhere: 405 whatever the path, Allow naming every method taken.
  const auto unserved = client.request(http::verb::delete_, "/nowhere");
  EXPECT_EQ(unserved.status, 405u);
  EXPECT_EQ(unserved.allow, "GET, POST");
  // The connection survived all of that.
  EXPECT_EQ(client.get("/hello").status, 200u);
}

TEST(HttpServer, AFallbackTakesPathsNoRouteHas) {
  auto server = server_with({});
  server->fallback(http::verb::get, [](const Request& req) -> Answer {
    return text_response(http::status::ok, "file " + std::string(request_path(req)) + "\n",
                         req.version());
  });
  server = started(std::move(server));
  Client client(server->port());
  EXPECT_EQ(client.get("/hello").body, "hello\n");
  EXPECT_EQ(client.get("/app.js?v=2").body, "file /app.js\n");
  EXPECT_EQ(client.request(http::verb::post, "/app.js").status, 405u);
}

TEST(HttpServer, AHandlerThatThrowsIsAnswered500AndTheServerGoesOn) {
  auto server = server_with({});
  server->route(http::verb::get, "/broken",
                [](const Request&) -> Answer { throw std::runtime_error("the source is gone"); });
  server = started(std::move(server));
  Client client(server->port());
  const auto broken = client.get("/broken");
  EXPECT_EQ(broken.status, 500u);
  EXPECT_NE(broken.body.find("the source is gone"), std::string::npos) << broken.body;
  EXPECT_EQ(client.get("/hello").status, 200u);
}

TEST(HttpServer, GarbageIsAnswered400AndClosed) {
  auto server = started(server_with({}));
  Client client(server->port());
  client.send_raw("NOT HTTP AT ALL\r\n\r\n");
  EXPECT_TRUE(client.closed_by_server(kDeadline));
  EXPECT_EQ(client.received().rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << client.received();
}

TEST(HttpServer, TheHeaderDeadlineCutsIdleAndSlowClientsUnanswered) {
  auto server = started(server_with({.header_timeout = 300ms}));
  Client idle(server->port());
  Client slow(server->port());
  slow.send_raw("GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // headers never finish
  const auto began = std::chrono::steady_clock::now();
  EXPECT_TRUE(slow.closed_by_server(kDeadline));
  EXPECT_GE(std::chrono::steady_clock::now() - began, 250ms) << "cut before its deadline";
  EXPECT_EQ(slow.received(), "") << "a cut request is not answered";
  EXPECT_TRUE(idle.closed_by_server(kDeadline));
  // The client may see the close just before the server counts it.
  EXPECT_TRUE(natsfleet::testing::wait_for(
      [&] { return server->stats().cut_slow == 1u && server->stats().cut_idle == 1u; }, kDeadline));
  EXPECT_TRUE(
      natsfleet::testing::wait_for([&] { return server->stats().connections == 0u; }, kDeadline));
}

TEST(HttpServer, AtTheLimitTheConnectionWaitingLongestMakesRoom) {
  auto server = started(server_with({.max_connections = 2}));
  Client a(server->port());
  Client b(server->port());
  EXPECT_EQ(a.get("/hello").status, 200u);
  EXPECT_EQ(b.get("/hello").status, 200u);
  // Both wait for their next request now, a for longer: a goes so that c is served.
  Client c(server->port());
  EXPECT_EQ(c.get("/hello").status, 200u);
  EXPECT_EQ(server->stats().evicted, 1u);
  EXPECT_EQ(server->stats().connections, 2u);
  EXPECT_TRUE(a.closed_by_server(kDeadline));
  EXPECT_TRUE(b.stays_open(100ms));
}

// Blocks the route's io thread until released, so its connection is busy answering.
class Gate {
 public:
  Handler handler() {
    return [this](const Request& req) -> Answer {
      std::unique_lock lock(mu_);
      entered_ = true;
      cv_.notify_all();
      cv_.wait_for(lock, kDeadline, [&] { return open_; });
      return text_response(http::status::ok, "done\n", req.version());
    };
  }
  bool entered() {
    std::lock_guard lock(mu_);
    return entered_;
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false;
  bool open_ = false;
};

TEST(HttpServer, AtTheLimitWithEveryConnectionBusyTheNewOneIsClosed) {
  Gate gate;
  auto server = server_with({.max_connections = 1, .io_threads = 2});
  server->route(http::verb::get, "/slow", gate.handler());
  server = started(std::move(server));
  Client busy(server->port());
  busy.send_raw("GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  ASSERT_TRUE(natsfleet::testing::wait_for([&] { return gate.entered(); }, kDeadline));
  Client refused(server->port());
  EXPECT_TRUE(refused.closed_by_server(kDeadline));
  EXPECT_EQ(refused.received(), "");
  EXPECT_EQ(server->stats().refused_busy, 1u);
  gate.open();
  EXPECT_TRUE(busy.receives("done\n", kDeadline)) << busy.received();
}

// What a route took over: the test's stand-in for a WebSocket session. It writes one line and
// then waits for the client, closing when stop() asks.
class TakenConnection : public Connection, public std::enable_shared_from_this<TakenConnection> {
 public:
  TakenConnection(tcp::socket socket, std::atomic<int>& graceful_closes)
      : socket_(std::move(socket)), graceful_closes_(graceful_closes) {}

  void start(const Request& req) {
    line_ = "taken " + std::string(req.target()) + "\n";
    asio::async_write(socket_, asio::buffer(line_),
                      [self = shared_from_this()](beast::error_code, std::size_t) {});
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code) {});
  }
  void close_gracefully() override {
    ++graceful_closes_;
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->close(); });
  }
  void abort() override { close(); }

 private:
  void close() {
    beast::error_code ec;
    socket_.close(ec);
  }

  tcp::socket socket_;
  std::atomic<int>& graceful_closes_;
  std::string line_;
};

TEST(HttpServer, ARouteCanTakeTheConnectionOverAndStopStillClosesIt) {
  std::atomic<int> graceful_closes{0};
  auto server = server_with({.stop_timeout = 2s});
  server->route_any_method("/up", [&](const Request& req) -> Answer {
    if (req[http::field::upgrade] != "test") {
      Response res = text_response(http::status::upgrade_required, "upgrade only\n", req.version());
      res.set(http::field::upgrade, "test");
      return res;
    }
    return Takeover([&](tcp::socket socket, Request taken) -> std::shared_ptr<Connection> {
      auto connection = std::make_shared<TakenConnection>(std::move(socket), graceful_closes);
      connection->start(taken);
      return connection;
    });
  });
  server = started(std::move(server));

  // Without the upgrade the route answers like any other, on a connection kept alive.
  Client plain(server->port());
  EXPECT_EQ(plain.get("/up").status, 426u);
  EXPECT_EQ(plain.request(http::verb::post, "/up").status, 426u);

  Client client(server->port());
  client.send_raw("GET /up?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: test\r\n\r\n");
  EXPECT_TRUE(client.receives("taken /up?x=1\n", kDeadline)) << client.received();
  EXPECT_EQ(client.received(), "taken /up?x=1\n") << "the server wrote nothing of its own";
  // The taken connection no longer counts against the server's limit: only `plain` does.
  EXPECT_TRUE(
      natsfleet::testing::wait_for([&] { return server->stats().connections == 1u; }, kDeadline));
  EXPECT_TRUE(client.stays_open(100ms));

  server->stop();
  EXPECT_EQ(graceful_closes, 1);
  EXPECT_TRUE(client.closed_by_server(kDeadline));
  EXPECT_TRUE(plain.closed_by_server(kDeadline));
}

TEST(HttpServer, StopIsPromptWithClientsConnectedAndFreesThePort) {
  auto server = started(server_with({}));
  const int port = server->port();
  Client idle(port);
  Client kept(port);
  ASSERT_EQ(kept.get("/hello").status, 200u);
  const auto began = std::chrono::steady_clock::now();
  server->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - began, 2s);
  EXPECT_EQ(server->port(), 0);
  EXPECT_TRUE(idle.closed_by_server(kDeadline));
  EXPECT_TRUE(kept.closed_by_server(kDeadline));
  server->stop();  // idempotent

  auto again = started(server_with({.port = static_cast<uint16_t>(port)}));
  EXPECT_EQ(again->port(), port);
}

TEST(HttpServer, StartFailuresNameTheServerAndTheAddress) {
  auto first = started(server_with({}));
  auto second = server_with({.port = static_cast<uint16_t>(first->port())});
  const auto in_use = second->start();
  ASSERT_FALSE(in_use.ok());
  EXPECT_EQ(in_use.error().code, std::errc::address_in_use);
  EXPECT_NE(in_use.error().describe().find("test server cannot listen on 127.0.0.1:" +
                                           std::to_string(first->port())),
            std::string::npos)
      << in_use.error().describe();
  EXPECT_FALSE(first->start().ok()) << "a second start is refused";
  EXPECT_EQ(Client(first->port()).get("/hello").status, 200u);
}

}  // namespace
}  // namespace natsfleet::net
