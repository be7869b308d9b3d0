// Derived publishes from the daemon's worker sinks: several works on one source message, each
// publishing into one shared stream, all get stored.
#include <gtest/gtest.h>

#include <signal.h>

#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

const std::string kTestData = NATSFLEET_E2E_TESTDATA;

std::string deriving_work(const std::string& name, const std::string& tag) {
  return "[[work]]\n"
         "name = \"" +
         name +
         "\"\n"
         "subject = \"jobs.run\"\n"
         "heartbeat = \"500ms\"\n"
         "concurrency = 4\n"
         "sink = { type = \"worker\", command = [\"/usr/bin/python3\", \"" +
         kTestData + "/derive_worker.py\", \"events.derived\", \"" + tag + "\"] }\n";
}

TEST(DerivedPublish, TwoWorksOnOneSourceMessageBothStoreTheirEvents) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  admin.create_stream("EVENTS", {"events.>"});
  TempDir dir;
  const int port = free_loopback_port();
  const std::string config =
      "name = \"derive\"\n[health]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\n" +
      deriving_work("enrich", "e") + deriving_work("index", "i");
  DaemonProcess d(dir.path(), "derive", config, {"--server", server.url()});
  d.start();
  constexpr int kMessages = 200;
  admin.publish_many("jobs.run", kMessages);

  // Both works acked every source message ...
  ASSERT_TRUE(wait_for(
      [&] {
        for (const char* work : {"enrich", "index"}) {
          auto info = admin.api().consumer_info("JOBS", work);
          if (!info || info->ack_floor_stream_seq != kMessages) return false;
        }
        return true;
      },
      60s, 200ms))
      << d.log();
  // ... and each of their derived events is in the shared stream: none was dropped as the
  // other work's duplicate.
  uint64_t stored = 0;
  ASSERT_TRUE(wait_for(
      [&] {
        auto info = admin.api().stream_info("EVENTS");
        stored = info ? info->messages : 0;
        return stored == 2 * kMessages;
      },
      10s, 200ms))
      << stored << " derived events stored for " << kMessages << " source messages\n"
      << d.log();
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

}  // namespace
}  // namespace natsfleet::testing
