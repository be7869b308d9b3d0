// The relay for services in any language: two `natsfleet run` replicas, each with a [[broadcast]]
// whose sink is a WebSocket gateway. A status published once reaches every browser of its member,
// whichever replica the browser is attached to, and no other member's.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;
namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// A browser: connects to /ws?member=<id> and collects what it is sent until closed.
class Browser {
 public:
  Browser(int port, const std::string& member) : ws_(ioc_) {
    tcp::resolver resolver(ioc_);
    net::connect(ws_.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
    ws_.handshake("127.0.0.1:" + std::to_string(port), "/ws?member=" + member);
    reader_ = std::thread([this] {
      beast::error_code ec;
      for (;;) {
        beast::flat_buffer buffer;
        ws_.read(buffer, ec);
        if (ec) return;
        std::lock_guard lock(mu_);
        got_.push_back(beast::buffers_to_string(buffer.data()));
      }
    });
  }
  ~Browser() {
    beast::error_code ec;
    ws_.next_layer().shutdown(tcp::socket::shutdown_both, ec);
    ws_.next_layer().close(ec);
    reader_.join();
  }
  std::vector<std::string> got() const {
    std::lock_guard lock(mu_);
    return got_;
  }

 private:
  net::io_context ioc_;
  beast::websocket::stream<tcp::socket> ws_;
  std::thread reader_;
  mutable std::mutex mu_;
  std::vector<std::string> got_;
};

std::string relay_config(const std::string& name, int ws_port, int health_port) {
  return "name = \"" + name + "\"\n" +
         "[health]\nlisten = \"127.0.0.1:" + std::to_string(health_port) + "\"\n" +
         "[[broadcast]]\nname = \"status\"\nsubject = \"member.*.status\"\n"
         "source = \"jetstream\"\nheartbeat = \"250ms\"\n"
         "sink = { type = \"websocket\", listen = \"127.0.0.1:" +
         std::to_string(ws_port) + "\" }\n";
}

TEST(WebSocketSink, AStatusReachesEveryBrowserOfItsMemberOnEveryReplica) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("STATUS", {"member.*.status"});
  TempDir dir;
  const int ws_a = free_loopback_port(), ws_b = free_loopback_port();
  const int health_a = free_loopback_port(), health_b = free_loopback_port();
  DaemonProcess a(dir.path(), "a", relay_config("a", ws_a, health_a), {"--server", server.url()});
  DaemonProcess b(dir.path(), "b", relay_config("b", ws_b, health_b), {"--server", server.url()});
  a.start();
  b.start();
  ASSERT_TRUE(wait_for([&] { return readyz(health_a) == 200 && readyz(health_b) == 200; }, 15s))
      << a.log() << b.log();

  Browser alice_on_a(ws_a, "alice");
  Browser alice_on_b(ws_b, "alice");
  Browser bob_on_b(ws_b, "bob");
  std::this_thread::sleep_for(200ms);  // the upgrades registered
  admin.publish("member.alice.status", R"({"state":"synced","messages":42})");
  admin.publish("member.bob.status", R"({"state":"failed","error":"IMAP login refused"})");

  const std::vector<std::string> alice = {R"({"state":"synced","messages":42})"};
  ASSERT_TRUE(wait_for([&] { return alice_on_a.got() == alice && alice_on_b.got() == alice; }, 10s))
      << a.log() << b.log();
  ASSERT_TRUE(wait_for(
      [&] {
        return bob_on_b.got() ==
               std::vector<std::string>{R"({"state":"failed","error":"IMAP login refused"})"};
      },
      10s));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(alice_on_a.got(), alice) << "nothing more, nothing of bob's";
}

TEST(WebSocketSink, AWebSocketSinkOnWorkIsAConfigError) {
  TempDir dir;
  DaemonProcess d(dir.path(), "bad",
                  "name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\n"
                  "sink = { type = \"websocket\", listen = \"127.0.0.1:0\" }\n");
  d.start();
  auto code = d.wait_exit(10s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 2);
  EXPECT_NE(d.log().find("bad.toml:5"), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("[[broadcast]]"), std::string::npos) << d.log();
}

}  // namespace
}  // namespace natsfleet::testing
