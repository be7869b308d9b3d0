// Slow handlers on two `natsfleet run` replicas: a message must never wait on a replica (in its
// pull window, its handler queue or its worker's stdin) until ack_wait runs out, or the broker
// hands it to the other replica and both handle it. Every stream sequence is handled exactly
// once, on its first delivery.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

const std::string kTestData = NATSFLEET_E2E_TESTDATA;

struct SlowCase {
  const char* name;
  const char* handler;  // the worker's time per message, as Python reads it
  int messages;
  int concurrency;
  const char* worker_mode;  // serial: one at a time, the rest wait in its stdin; parallel
};

// Each handling the workers wrote: stream sequence -> the delivered counts it was handled with.
std::map<uint64_t, std::vector<int>> handlings(const std::vector<std::string>& paths) {
  std::map<uint64_t, std::vector<int>> out;
  for (const auto& path : paths) {
    std::ifstream in(path);
    uint64_t seq = 0;
    int delivered = 0;
    while (in >> seq >> delivered) out[seq].push_back(delivered);
  }
  return out;
}

std::string replica_config(const SlowCase& c, int health_port, const std::string& out) {
  return "name = \"slow\"\n"
         "shutdown_timeout = \"20s\"\n"
         "[health]\n"
         "listen = \"127.0.0.1:" +
         std::to_string(health_port) +
         "\"\n"
         "[[work]]\n"
         "name = \"jobs\"\n"
         "subject = \"jobs.run\"\n"
         "ack_wait = \"5s\"\n"
         "concurrency = " +
         std::to_string(c.concurrency) +
         "\n"
         "sink = { type = \"worker\", command = [\"/usr/bin/python3\", \"" +
         kTestData + "/slow_worker.py\", \"" + out + "\", \"" + c.handler + "\", \"" +
         c.worker_mode + "\"], timeout = \"60s\" }\n";
}

// Names the case in ctest's listing rather than dumping its bytes.
void PrintTo(const SlowCase& c, std::ostream* os) { *os << c.name; }

// In-progress acks a replica sent to keep waiting or long-handled messages alive.
uint64_t kept_alive_acks(int port) {
  int code = 0;
  const auto doc = nlohmann::json::parse(http_get(port, "/status", &code), nullptr, false);
  if (!doc.is_object() || !doc.contains("subscriptions") || doc["subscriptions"].empty()) return 0;
  return doc["subscriptions"][0]["counters"].value("kept_alive", uint64_t{0});
}

class SlowHandlers : public ::testing::TestWithParam<SlowCase> {};

TEST_P(SlowHandlers, TwoReplicasHandleEachMessageOnceWithinAckWait) {
  const SlowCase& c = GetParam();
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const std::vector<std::string> outs = {dir.path() + "/a.txt", dir.path() + "/b.txt"};
  const int port_a = free_loopback_port();
  const int port_b = free_loopback_port();
  DaemonProcess a(dir.path(), "a", replica_config(c, port_a, outs[0]), {"--server", server.url()});
  DaemonProcess b(dir.path(), "b", replica_config(c, port_b, outs[1]), {"--server", server.url()});
  a.start();
  b.start();
  ASSERT_TRUE(wait_for([&] { return readyz(port_a) == 200 && readyz(port_b) == 200; }, 30s))
      << a.log() << b.log();
  admin.publish_many("jobs.run", c.messages);

  // Every message handled and the consumer has nothing left: no delivery is outstanding
  // anywhere, so no redelivery can follow.
  ASSERT_TRUE(wait_for(
      [&] {
        if (handlings(outs).size() < static_cast<size_t>(c.messages)) return false;
        const auto info = admin.consumer("JOBS", "jobs");
        return info.num_pending == 0 && info.num_ack_pending == 0;
      },
      std::chrono::seconds(60 + c.messages * 10), 200ms))
      << handlings(outs).size() << " of " << c.messages << " handled\n"
      << a.log() << b.log();
  const uint64_t kept_alive = kept_alive_acks(port_a) + kept_alive_acks(port_b);
  // Handlers still running finish before the replicas exit: what they handle counts too.
  a.signal(SIGTERM);
  b.signal(SIGTERM);
  EXPECT_EQ(a.wait_exit(30s), 0) << a.log();
  EXPECT_EQ(b.wait_exit(30s), 0) << b.log();

  const auto seen = handlings(outs);
  int twice = 0;
  int redelivered = 0;
  int lost = 0;
  for (int seq = 1; seq <= c.messages; ++seq) {
    auto it = seen.find(static_cast<uint64_t>(seq));
    if (it == seen.end()) {
      ++lost;
      continue;
    }
    if (it->second.size() > 1) ++twice;
    for (int delivered : it->second)
      if (delivered > 1) ++redelivered;
  }
  const auto share_a = handlings({outs[0]}).size();
  std::cout << c.name << ": " << c.messages << " messages, handler " << c.handler
            << " s, concurrency " << c.concurrency << " (" << c.worker_mode << " worker): " << twice
            << " handled twice, " << redelivered << " handlings of a redelivery, " << lost
            << " lost; replica a handled " << share_a << "; " << kept_alive
            << " in-progress acks sent\n";
  EXPECT_EQ(twice, 0) << a.log() << b.log();
  EXPECT_EQ(redelivered, 0) << "a message waited past ack_wait";
  EXPECT_EQ(lost, 0);
}

INSTANTIATE_TEST_SUITE_P(
    AckWaitFiveSeconds, SlowHandlers,
    ::testing::Values(SlowCase{"TwoSeconds", "2", 24, 1, "serial"},
                      SlowCase{"TenthOfASecond", "0.1", 120, 1, "serial"},
                      SlowCase{"FourSeconds", "4", 12, 1, "serial"},
                      // Two records at a time to a worker that takes one at a time: the second
                      // waits in the worker's stdin while the first is handled.
                      SlowCase{"TwoSecondsTwoInFlightToASerialWorker", "2", 24, 2, "serial"},
                      SlowCase{"OneSecondFourInFlightInParallel", "1", 48, 4, "parallel"}),
    [](const ::testing::TestParamInfo<SlowCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace natsfleet::testing
