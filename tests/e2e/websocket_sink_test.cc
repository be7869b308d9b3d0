// The relay for services in any language: two `natsfleet run` replicas, each with a [[broadcast]]
// whose sink is a WebSocket gateway. A status published once reaches every browser of its member,
// whichever replica the browser is attached to, and no other member's.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"
#include "support/websocket_client.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;
namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::string relay_config(const std::string& name, int ws_port, int health_port) {
  return "name = \"" + name + "\"\n" +
         "[health]\nlisten = \"127.0.0.1:" + std::to_string(health_port) + "\"\n" +
         "[[broadcast]]\nname = \"status\"\nsubject = \"member.*.status\"\n"
         "source = \"jetstream\"\nheartbeat = \"250ms\"\n"
         "sink = { type = \"websocket\", listen = \"127.0.0.1:" +
         std::to_string(ws_port) + "\" }\n";
}

// The value of the first sample of `name` in a /metrics text (-1 when absent).
long metric(const std::string& metrics, const std::string& name) {
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + "{", 0) == 0) return std::stol(line.substr(line.rfind(' ') + 1));
  return -1;
}

// How many sessions the daemon behind `health_port` has attached so far.
long attached(int health_port) {
  int status = 0;
  const std::string metrics = http_get(health_port, "/metrics", &status);
  return status == 200 ? metric(metrics, "natsfleet_websocket_attached_total") : -1;
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

  auto alice_on_a = attach_browser(ws_a, "member=alice");
  auto alice_on_b = attach_browser(ws_b, "member=alice");
  auto bob_on_b = attach_browser(ws_b, "member=bob");
  ASSERT_TRUE(wait_for([&] { return attached(health_a) == 1 && attached(health_b) == 2; }, 15s))
      << a.log() << b.log();
  admin.publish("member.alice.status", R"({"state":"synced","messages":42})");
  admin.publish("member.bob.status", R"({"state":"failed","error":"IMAP login refused"})");

  const std::vector<std::string> alice = {R"({"state":"synced","messages":42})"};
  ASSERT_TRUE(wait_for(
      [&] { return alice_on_a->messages() == alice && alice_on_b->messages() == alice; }, 10s))
      << a.log() << b.log();
  ASSERT_TRUE(wait_for(
      [&] {
        return bob_on_b->messages() ==
               std::vector<std::string>{R"({"state":"failed","error":"IMAP login refused"})"};
      },
      10s));
  // A last status for alice: whatever else were to reach her would have come before it.
  admin.publish("member.alice.status", R"({"state":"idle"})");
  ASSERT_TRUE(wait_for([&] { return alice_on_a->messages().size() >= 2; }, 10s)) << a.log();
  EXPECT_EQ(alice_on_a->messages(), (std::vector<std::string>{R"({"state":"synced","messages":42})",
                                                              R"({"state":"idle"})"}))
      << "nothing more, nothing of bob's";
}

// One session that is opened and then left alone (it reads nothing): what a crowd of idle
// browsers costs the daemon. status is 101 when attached, else the HTTP status of the refusal
// (0: no answer at all).
struct IdleSession {
  unsigned status = 0;
  std::unique_ptr<beast::websocket::stream<tcp::socket>> ws;
};

IdleSession open_idle_session(net::io_context& ioc, int port, const std::string& member) {
  IdleSession s;
  auto ws = std::make_unique<beast::websocket::stream<tcp::socket>>(ioc);
  beast::error_code ec;
  ws->next_layer().connect(
      tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)), ec);
  if (ec) return s;
  beast::websocket::response_type res;
  // The synchronous handshake leaves `res` empty when the upgrade is declined; this one fills it.
  ws->async_handshake(res, "127.0.0.1:" + std::to_string(port), "/ws?member=" + member,
                      [&](beast::error_code e) { ec = e; });
  ioc.restart();
  ioc.run_for(5s);  // bounded: a daemon out of descriptors may never answer
  if (!ioc.stopped()) {
    ws->next_layer().close(ec);  // the handler, which refers to this frame, completes now
    ioc.restart();
    ioc.run();
    return s;
  }
  s.status = res.result_int();
  if (!ec) s.ws = std::move(ws);
  return s;
}

// The value of `name{...reason="<reason>"}` in a /metrics text (-1 when absent).
long metric_with_reason(const std::string& metrics, const std::string& name,
                        const std::string& reason) {
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "{", 0) == 0 &&
        line.find("reason=\"" + reason + "\"") != std::string::npos)
      return std::stol(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

// Under `ulimit -n 1024`, 1,100 browsers: the daemon takes the sessions its descriptor budget
// allows and answers the rest 503, and a broker restart still reconnects (the new socket has its
// descriptor), so /readyz comes back to 200 and statuses flow again.
TEST(WebSocketSink, UnderADescriptorLimitSessionsPastTheBudgetAreRefusedAndReconnectsStillWork) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("STATUS", {"member.*.status"});
  TempDir dir;
  const int ws_port = free_loopback_port(), health_port = free_loopback_port();
  DaemonProcess d(dir.path(), "d", relay_config("d", ws_port, health_port),
                  {"--server", server.url()});
  d.limit_descriptors(1024);
  d.start();
  ASSERT_TRUE(wait_for([&] { return readyz(health_port) == 200; }, 15s)) << d.log();

  // The budget is in the log, with its reasons.
  const std::string log = d.log();
  std::smatch found;
  ASSERT_TRUE(std::regex_search(log, found, std::regex(R"(websocket max_sessions: status (\d+))")))
      << log;
  const std::size_t max_sessions = std::stoul(found[1]);
  EXPECT_NE(log.find("(RLIMIT_NOFILE) is 1024"), std::string::npos) << log;
  ASSERT_GT(max_sessions, 100u);
  ASSERT_LT(max_sessions, 1100u);
  EXPECT_NE(log.find("NO MEMBER AUTHENTICATION"), std::string::npos) << log;

  auto watcher = attach_browser(ws_port, "member=watch");
  net::io_context ioc;
  std::vector<IdleSession> sessions;
  std::map<unsigned, std::size_t> statuses;
  for (int i = 1; i < 1100; ++i) {
    sessions.push_back(open_idle_session(ioc, ws_port, "m" + std::to_string(i)));
    ++statuses[sessions.back().status];
    if (statuses.contains(0) && statuses.at(0) >= 3)
      break;  // the daemon stopped answering: no point waiting on each
  }
  EXPECT_EQ(statuses[101], max_sessions - 1) << "the watcher holds one";
  EXPECT_EQ(statuses[503], 1100 - max_sessions);
  EXPECT_EQ(statuses.size(), 2u) << "no session failed any other way: " << [&] {
    std::string all;
    for (const auto& [status, n] : statuses)
      all += std::to_string(status) + ": " + std::to_string(n) + "; ";
    return all;
  }();

  // What the budget left free while the gateway is full: the room a reconnect needs.
  std::size_t open_descriptors = 0;
  for ([[maybe_unused]] const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(d.pid()) + "/fd"))
    ++open_descriptors;
  std::printf("daemon descriptors open with the gateway full: %zu of 1024\n", open_descriptors);
  EXPECT_LT(open_descriptors, 1024u - 64u);

  // Probes are answered while the gateway is full.
  const auto probe_began = std::chrono::steady_clock::now();
  int healthz = 0;
  http_get(health_port, "/healthz", &healthz);
  EXPECT_EQ(healthz, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - probe_began, 2s);

  server.kill();
  ASSERT_TRUE(wait_for([&] { return readyz(health_port) == 503; }, 15s)) << d.log();
  server.restart();
  EXPECT_TRUE(wait_for([&] { return readyz(health_port) == 200; }, 30s)) << d.log();
  admin.publish("member.watch.status", R"({"state":"synced"})");
  EXPECT_TRUE(wait_for(
      [&] { return watcher->messages() == std::vector<std::string>{R"({"state":"synced"})"}; },
      15s))
      << d.log();

  // Sessions that leave make room for new ones.
  for (auto& s : sessions) {
    if (!s.ws) continue;
    beast::error_code ec;
    s.ws->next_layer().close(ec);
    s.ws.reset();
    break;
  }
  IdleSession again;
  EXPECT_TRUE(wait_for(
      [&] {
        again = open_idle_session(ioc, ws_port, "again");
        return again.status == 101;
      },
      10s));

  const std::string metrics = http_get(health_port, "/metrics", &healthz);
  EXPECT_EQ(metric_with_reason(metrics, "natsfleet_websocket_refused_total", "full"),
            static_cast<long>(1100 - max_sessions))
      << metrics;
  EXPECT_EQ(d.log().find("Too many open files"), std::string::npos) << d.log();
  EXPECT_TRUE(d.running());
}

// Standard output of a shell command.
std::string shell_output(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  char buf[512];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

// What the shell in docs/reference/relay.md runs to mint a member token.
std::string mint_with_openssl(const std::string& secret_file, const std::string& member,
                              long expiry) {
  const std::string signed_part = member + "." + std::to_string(expiry);
  const std::string minted =
      shell_output("printf '%s' '" + signed_part + "' | openssl dgst -sha256 -hmac \"$(cat " +
                   secret_file + ")\" -r | cut -d' ' -f1");
  return signed_part + "." + minted.substr(0, minted.find('\n'));
}

// With a token secret the daemon's gateway attaches only signed members, and the secret shows
// nowhere: not in the log, /status, /metrics, lint or audit output.
TEST(WebSocketSink, SignedMemberTokensAttachAndTheSecretShowsNowhere) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("STATUS", {"member.*.status"});
  TempDir dir;
  const std::string secret = "e2e-secret-5f2a9c1d7e3b8a6f0c4d2e9b1a7f3c5d";
  const std::string secret_file = dir.path() + "/token.secret";
  std::ofstream(secret_file) << secret << "\n";
  const int ws_port = free_loopback_port(), health_port = free_loopback_port();
  std::string config = relay_config("d", ws_port, health_port);
  config.replace(config.rfind(" }"), 2, ", token_secret_file = \"token.secret\" }");
  DaemonProcess d(dir.path(), "d", config, {"--server", server.url()});
  d.start();
  ASSERT_TRUE(wait_for([&] { return readyz(health_port) == 200; }, 15s)) << d.log();
  EXPECT_EQ(d.log().find("NO MEMBER AUTHENTICATION"), std::string::npos) << d.log();

  const long expiry = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count()) +
                      300;
  const std::string token = mint_with_openssl(secret_file, "alice", expiry);
  auto alice = attach_browser(ws_port, "member=alice&token=" + token);
  net::io_context ioc;
  EXPECT_EQ(open_idle_session(ioc, ws_port, "alice").status, 401u);
  EXPECT_EQ(open_idle_session(ioc, ws_port, "bob&token=" + token).status, 403u);
  ASSERT_TRUE(wait_for([&] { return attached(health_port) == 1; }, 15s)) << d.log();
  admin.publish("member.alice.status", R"({"state":"synced"})");
  EXPECT_TRUE(wait_for(
      [&] { return alice->messages() == std::vector<std::string>{R"({"state":"synced"})"}; }, 10s))
      << d.log();

  int code = 0;
  const std::string metrics = http_get(health_port, "/metrics", &code);
  EXPECT_EQ(metric_with_reason(metrics, "natsfleet_websocket_refused_total", "unauthenticated"), 1)
      << metrics;
  EXPECT_EQ(metric_with_reason(metrics, "natsfleet_websocket_refused_total", "member_mismatch"), 1);
  const std::string status = http_get(health_port, "/status", &code);
  const auto lint = run_cli("lint " + d.config_path());
  const auto audit = run_cli("audit --server " + server.url() + " --config " + d.config_path() +
                             " --interval 100ms");
  for (const auto& [where, text] :
       std::vector<std::pair<std::string, std::string>>{{"log", d.log()},
                                                        {"/metrics", metrics},
                                                        {"/status", status},
                                                        {"lint", lint.out + lint.err},
                                                        {"audit", audit.out + audit.err}}) {
    EXPECT_EQ(text.find(secret), std::string::npos) << where << ": " << text;
    EXPECT_EQ(text.find(token.substr(token.rfind('.') + 1)), std::string::npos) << where;
  }
  EXPECT_EQ((lint.out + lint.err).find("websocket-no-auth"), std::string::npos) << lint.out;
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
