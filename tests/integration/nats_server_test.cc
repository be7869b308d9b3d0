// Self-test of the real-broker fixture: a server really starts on loopback, survives kill and
// restart with its store, can be wiped, paused and clustered, and never outlives its owner.
#include "support/nats_server.h"

#include <gtest/gtest.h>
#include <nats/nats.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

namespace natsfleet::testing {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kRequestTimeoutMs = 5'000;

struct ConnectionDeleter {
  void operator()(natsConnection* nc) const { natsConnection_Destroy(nc); }
};
struct MsgDeleter {
  void operator()(natsMsg* msg) const { natsMsg_Destroy(msg); }
};
using Connection = std::unique_ptr<natsConnection, ConnectionDeleter>;
using Msg = std::unique_ptr<natsMsg, MsgDeleter>;

Connection connect(const std::string& urls) {
  natsConnection* nc = nullptr;
  natsStatus s = natsConnection_ConnectTo(&nc, urls.c_str());
  EXPECT_EQ(s, NATS_OK) << "connect to " << urls << ": " << natsStatus_GetText(s);
  return Connection(nc);
}

// Sends a request and returns the reply body; *status tells timeouts apart from answers.
std::string request(natsConnection* nc, const std::string& subject, const std::string& body,
                    int64_t timeout_ms = kRequestTimeoutMs, natsStatus* status = nullptr) {
  natsMsg* raw = nullptr;
  natsStatus s = natsConnection_RequestString(&raw, nc, subject.c_str(), body.c_str(), timeout_ms);
  Msg reply(raw);
  if (status != nullptr) *status = s;
  if (s != NATS_OK) return {};
  return std::string(natsMsg_GetData(reply.get()),
                     static_cast<size_t>(natsMsg_GetDataLength(reply.get())));
}

// Value of the first "key":"value" string field after `from` in a compact JSON body.
std::string string_field_after(const std::string& json, const std::string& from,
                               const std::string& key) {
  size_t start = json.find(from);
  if (start == std::string::npos) return {};
  const std::string needle = "\"" + key + "\":\"";
  size_t at = json.find(needle, start);
  if (at == std::string::npos) return {};
  at += needle.size();
  size_t end = json.find('"', at);
  return end == std::string::npos ? std::string() : json.substr(at, end - at);
}

constexpr const char* kFileStream = R"({"name":"S","subjects":["s.>"],"storage":"file"})";

TEST(NatsServerTest, StartsOnFreeLoopbackPortAndAcceptsClients) {
  NatsServer server;
  EXPECT_TRUE(server.running());
  EXPECT_GT(server.pid(), 0);
  EXPECT_GT(server.port(), 0);
  EXPECT_NE(server.port(), server.monitor_port());
  EXPECT_EQ(server.url(), "nats://127.0.0.1:" + std::to_string(server.port()));

  Connection nc = connect(server.url());
  ASSERT_NE(nc, nullptr);
  EXPECT_EQ(natsConnection_PublishString(nc.get(), "fixture.hello", "hi"), NATS_OK);
  EXPECT_EQ(natsConnection_FlushTimeout(nc.get(), kRequestTimeoutMs), NATS_OK);

  int status = -1;
  http_get(server.monitor_port(), "/healthz", &status);
  EXPECT_EQ(status, 200);
}

TEST(NatsServerTest, StopAndRestartKeepPortAndStore) {
  NatsServer server;
  const int port = server.port();
  const int monitor_port = server.monitor_port();
  {
    Connection nc = connect(server.url());
    ASSERT_NE(nc, nullptr);
    std::string created = request(nc.get(), "$JS.API.STREAM.CREATE.S", kFileStream);
    ASSERT_EQ(created.find("\"error\""), std::string::npos) << created;
    for (int i = 1; i <= 3; ++i) {
      std::string ack = request(nc.get(), "s.x", "m" + std::to_string(i));
      EXPECT_NE(ack.find("\"seq\":" + std::to_string(i)), std::string::npos) << ack;
    }
  }

  server.kill();
  EXPECT_FALSE(server.running());
  EXPECT_EQ(server.pid(), -1);
  server.restart();
  EXPECT_TRUE(server.running());
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(server.monitor_port(), monitor_port);

  Connection nc = connect(server.url());
  ASSERT_NE(nc, nullptr);
  std::string info = request(nc.get(), "$JS.API.STREAM.INFO.S", "");
  EXPECT_NE(info.find("\"messages\":3"), std::string::npos) << info;

  // A graceful stop must also hand the ports back for a restart.
  nc.reset();
  server.stop();
  EXPECT_FALSE(server.running());
  server.restart();
  EXPECT_TRUE(server.running());
}

TEST(NatsServerTest, RestartWipedLosesStore) {
  NatsServer server;
  {
    Connection nc = connect(server.url());
    ASSERT_NE(nc, nullptr);
    std::string created = request(nc.get(), "$JS.API.STREAM.CREATE.S", kFileStream);
    ASSERT_EQ(created.find("\"error\""), std::string::npos) << created;
    std::string ack = request(nc.get(), "s.x", "m");
    ASSERT_NE(ack.find("\"seq\":1"), std::string::npos) << ack;
  }

  server.restart_wiped();

  Connection nc = connect(server.url());
  ASSERT_NE(nc, nullptr);
  std::string info = request(nc.get(), "$JS.API.STREAM.INFO.S", "");
  EXPECT_NE(info.find("\"error\""), std::string::npos) << info;
  EXPECT_NE(info.find("stream not found"), std::string::npos) << info;
}

TEST(NatsServerTest, PauseStopsAnsweringAndResumeRestores) {
  NatsServer server;
  Connection nc = connect(server.url());
  ASSERT_NE(nc, nullptr);
  natsStatus status = NATS_ERR;
  request(nc.get(), "$JS.API.INFO", "", kRequestTimeoutMs, &status);
  ASSERT_EQ(status, NATS_OK);

  server.pause();
  EXPECT_TRUE(server.paused());
  request(nc.get(), "$JS.API.INFO", "", 500, &status);
  EXPECT_EQ(status, NATS_TIMEOUT) << natsStatus_GetText(status);

  server.resume();
  EXPECT_FALSE(server.paused());
  std::string info = request(nc.get(), "$JS.API.INFO", "", kRequestTimeoutMs, &status);
  EXPECT_EQ(status, NATS_OK) << natsStatus_GetText(status);
  EXPECT_NE(info.find("account_info_response"), std::string::npos) << info;
}

TEST(NatsServerTest, ClusterElectsMetaLeaderAndCreatesReplicatedStream) {
  NatsCluster cluster(3);
  ASSERT_EQ(cluster.size(), 3);
  EXPECT_EQ(cluster.urls().size(), 3u);
  EXPECT_NE(cluster.find("n1"), nullptr);
  EXPECT_EQ(cluster.find("n4"), nullptr);
  const std::string meta_leader = cluster.meta_leader();
  EXPECT_NE(cluster.find(meta_leader), nullptr) << "meta leader '" << meta_leader << "'";

  Connection nc = connect(cluster.joined_urls());
  ASSERT_NE(nc, nullptr);
  // A meta leader just elected does not know where its peers are yet (nats-server 2.10 answers
  // "no suitable peers for placement", err_code 10005, for about half a second here): that
  // answer, and only that one, is asked again.
  std::string created;
  ASSERT_TRUE(wait_for(
      [&] {
        created = request(nc.get(), "$JS.API.STREAM.CREATE.S",
                          R"({"name":"S","subjects":["s.>"],"storage":"file","num_replicas":3})");
        return created.find("\"err_code\":10005") == std::string::npos;
      },
      milliseconds(10'000), milliseconds(100)))
      << created;
  ASSERT_EQ(created.find("\"error\""), std::string::npos) << created;

  // The stream's own RAFT group elects its leader after the create is acknowledged.
  std::string info;
  std::string stream_leader;
  EXPECT_TRUE(wait_for(
      [&] {
        info = request(nc.get(), "$JS.API.STREAM.INFO.S", "");
        stream_leader = string_field_after(info, "\"cluster\":", "leader");
        return !stream_leader.empty();
      },
      milliseconds(10'000), milliseconds(100)))
      << info;
  EXPECT_NE(info.find("\"name\":\"fleet\""), std::string::npos) << info;
  EXPECT_NE(cluster.find(stream_leader), nullptr) << "stream leader '" << stream_leader << "'";
}

// n3's routes lead nowhere on the first start: n1 and n2 elect a meta leader, n3 runs and
// never becomes ready. The cluster is started again (fresh ports, routes as given) and forms.
TEST(NatsServerTest, AClusterStartWhereOneNodeNeverBecomesReadyIsMadeAgain) {
  const int nowhere = free_loopback_port();  // nothing listens there
  int route_calls = 0;
  NatsClusterOptions options;
  options.size = 3;
  options.ready_timeout = milliseconds(8'000);
  options.route_via = [&](int from, int to, int route_port) {
    const bool first_start = route_calls++ < 6;  // 3 nodes x 2 peers per start
    return first_start && (from == 2 || to == 2) ? nowhere : route_port;
  };
  NatsCluster cluster(options);
  EXPECT_EQ(route_calls, 12) << "formed on start " << route_calls / 6;
  EXPECT_NE(cluster.find(cluster.meta_leader()), nullptr);
  cluster.wait_ready();
}

TEST(NatsServerTest, DestructorStopsPausedServer) {
  pid_t pid = -1;
  const auto started = std::chrono::steady_clock::now();
  {
    NatsServer server;
    pid = server.pid();
    ASSERT_GT(pid, 0);
    server.pause();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(5'000));
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST(NatsServerTest, StartFailureReportsServerLog) {
  NatsServerOptions options;
  options.extra_config = "this line { is not valid config";
  try {
    NatsServer server(options);
    ADD_FAILURE() << "a server with a broken config must not report ready";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exited during start-up"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace natsfleet::testing
