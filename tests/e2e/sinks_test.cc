// The daemon's sinks under failure: a worker that crashes, an endpoint that answers 500.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "base/child_process.h"
#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

const std::string kTestData = NATSFLEET_E2E_TESTDATA;

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string work_with_sink(const std::string& sink, int health_port) {
  return "name = \"sinks\"\n"
         "[health]\n"
         "listen = \"127.0.0.1:" +
         std::to_string(health_port) +
         "\"\n"
         "[[work]]\n"
         "name = \"jobs-worker\"\n"
         "subject = \"jobs.run\"\n"
         "ack_wait = \"30s\"\n"
         "max_deliver = 10\n"
         "heartbeat = \"500ms\"\n"
         "concurrency = 4\n"
         "sink = " +
         sink + "\n";
}

TEST(WorkerSink, CrashingEveryHundredMessagesLosesNothing) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const std::string out = dir.path() + "/handled.txt";
  const std::string sink = "{ type = \"worker\", command = [\"/usr/bin/python3\", \"" + kTestData +
                           "/crash_every_n_worker.py\", \"100\", \"" + out +
                           "\"], timeout = \"5s\" }";
  DaemonProcess d(dir.path(), "w", work_with_sink(sink, free_loopback_port()),
                  {"--server", server.url()});
  d.start();
  constexpr int kMessages = 500;  // five crashes: restarts back off, a crash loop is not the point
  admin.publish_many("jobs.run", kMessages);
  std::set<std::string> distinct;
  ASSERT_TRUE(wait_for(
      [&] {
        auto lines = lines_of(out);
        distinct = std::set<std::string>(lines.begin(), lines.end());
        return distinct.size() == kMessages;
      },
      90s, 200ms))
      << "handled " << distinct.size() << "\n"
      << d.log();
  // Every message the worker saw die with it came back: acked only once the worker answered.
  ASSERT_TRUE(
      wait_for([&] { return admin.consumer("JOBS", "jobs-worker").num_ack_pending == 0; }, 30s));
  EXPECT_NE(d.log().find("worker"), std::string::npos);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

TEST(WorkerSink, ACrashLoopMakesTheSubscriptionStalledAndNotReady) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const int port = free_loopback_port();
  DaemonProcess d(dir.path(), "loop",
                  work_with_sink("{ type = \"worker\", command = [\"/bin/false\"] }", port),
                  {"--server", server.url()});
  d.start();
  admin.publish_many("jobs.run", 5);
  int status = 0;
  std::string body;
  ASSERT_TRUE(wait_for(
      [&] {
        body = http_get(port, "/readyz", &status);
        return status == 503 && body.find("unhealthy") != std::string::npos;
      },
      30s, 250ms))
      << status << " " << body << "\n"
      << d.log();
  int live = 0;
  http_get(port, "/healthz", &live);
  EXPECT_EQ(live, 200) << "a crash-looping sink is not fatal: the daemon keeps trying";
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

TEST(HttpSink, FiveHundredIsRetriedWithoutUsingADeliveryThenAcked) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const int http_port = free_loopback_port();
  const std::string log = dir.path() + "/requests.txt";
  std::vector<std::string> args = {"/usr/bin/python3", kTestData + "/flaky_http.py",
                                   std::to_string(http_port), "3", log};
  auto http_server = base::ChildProcess::start(args);  // killed and reaped at the end
  ASSERT_TRUE(http_server) << http_server.error().describe();
  int status = 0;
  ASSERT_TRUE(wait_for(
      [&] {
        http_get(http_port, "/", &status);
        return status > 0;
      },
      10s));

  const std::string sink =
      "{ type = \"http\", url = \"http://127.0.0.1:" + std::to_string(http_port) +
      "/hook\", timeout = \"5s\" }";
  DaemonProcess d(dir.path(), "h", work_with_sink(sink, free_loopback_port()),
                  {"--server", server.url()});
  d.start();
  admin.publish("jobs.run", "only-one");
  // Three 500s, each retried with backoff while the message stays with this replica (no
  // delivery used), then a 200: four requests, the last one acked.
  ASSERT_TRUE(wait_for([&] { return lines_of(log).size() >= 4; }, 60s)) << d.log();
  auto requests = lines_of(log);
  EXPECT_EQ(requests[0], "500 only-one 1");
  EXPECT_EQ(requests[1], "500 only-one 1");
  EXPECT_EQ(requests[2], "500 only-one 1");
  EXPECT_EQ(requests[3], "200 only-one 1");
  ASSERT_TRUE(wait_for(
      [&] {
        auto info = admin.consumer("JOBS", "jobs-worker");
        return info.num_ack_pending == 0 && info.ack_floor_stream_seq == 1;
      },
      10s));
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(lines_of(log).size(), 4u) << "acked after the 200: no further delivery";
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(10s), 0);
}

}  // namespace
}  // namespace natsfleet::testing
