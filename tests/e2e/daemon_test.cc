// `natsfleet run` as users run it: separate processes against a real nats-server, killed,
// signalled and restarted.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "fleet/ordered/partition_plan.h"
#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"
#include "support/notify_listener.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

std::string work_config(const std::string& name, const std::string& sink_path, int health_port,
                        const std::string& extra_work = {}) {
  return "name = \"" + name + "\"\n" +
         "shutdown_timeout = \"5s\"\n"
         "[health]\n"
         "listen = \"127.0.0.1:" +
         std::to_string(health_port) +
         "\"\n"
         "[[work]]\n"
         "name = \"jobs-worker\"\n"
         "subject = \"jobs.run\"\n"
         "ack_wait = \"2s\"\n"
         "heartbeat = \"500ms\"\n"
         "concurrency = 4\n" +
         extra_work + "sink = { type = \"file\", path = \"" + sink_path + "\" }\n";
}

// A broker with stream JOBS and two ready replicas, a and b, each writing its own sink file.
class TwoReplicas : public ::testing::Test {
 protected:
  void SetUp() override {
    admin.create_stream("JOBS", {"jobs.>"});
    a.start();
    b.start();
    ASSERT_TRUE(wait_for([&] { return readyz(port_a) == 200 && readyz(port_b) == 200; }, 15s))
        << a.log() << b.log();
  }

  NatsServer server;
  BrokerClient admin{server.url()};
  TempDir dir;
  const int port_a = free_loopback_port();
  const int port_b = free_loopback_port();
  DaemonProcess a{dir.path(),
                  "a",
                  work_config("a", dir.path() + "/a.jsonl", port_a),
                  {"--server", server.url()}};
  DaemonProcess b{dir.path(),
                  "b",
                  work_config("b", dir.path() + "/b.jsonl", port_b),
                  {"--server", server.url()}};
};

TEST_F(TwoReplicas, ShareWorkAndASigkillLosesNothing) {
  constexpr int kMessages = 20'000;
  std::thread publisher([&] { admin.publish_many("jobs.run", kMessages); });
  // At about a third, replica b dies without a chance to ack what it holds.
  ASSERT_TRUE(wait_for(
      [&] {
        return read_sink_file(dir.path() + "/a.jsonl").records +
                   read_sink_file(dir.path() + "/b.jsonl").records >=
               kMessages / 3;
      },
      60s));
  b.signal(SIGKILL);
  publisher.join();

  std::set<std::string> distinct;
  size_t total = 0;
  ASSERT_TRUE(wait_for(
      [&] {
        distinct.clear();
        total = 0;
        for (const char* f : {"/a.jsonl", "/b.jsonl"}) {
          auto sink = read_sink_file(dir.path() + f);
          total += sink.records;
          distinct.insert(sink.payloads.begin(), sink.payloads.end());
        }
        return distinct.size() == kMessages;
      },
      60s))
      << "distinct " << distinct.size() << "\n"
      << a.log();
  RecordProperty("duplicates", static_cast<int>(total - distinct.size()));
  std::printf("20000 messages, replica b killed: %zu records, %zu duplicates, 0 lost\n", total,
              total - distinct.size());
  a.signal(SIGTERM);
  EXPECT_EQ(a.wait_exit(10s), 0) << a.log();
}

class ConsumerDeletedByHand : public ::testing::TestWithParam<std::string> {};

TEST_P(ConsumerDeletedByHand, IsRecreatedOrExits70) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const int port = free_loopback_port();
  DaemonProcess d(
      dir.path(), "d",
      work_config("d", dir.path() + "/d.jsonl", port, "on_missing = \"" + GetParam() + "\"\n"),
      {"--server", server.url()});
  d.start();
  ASSERT_TRUE(wait_for([&] { return readyz(port) == 200; }, 15s)) << d.log();
  admin.publish_many("jobs.run", 100, "first-");
  ASSERT_TRUE(
      wait_for([&] { return read_sink_file(dir.path() + "/d.jsonl").records >= 100; }, 15s));
  admin.delete_consumer("JOBS", "jobs-worker");
  if (GetParam() == "exit") {
    EXPECT_EQ(d.wait_exit(15s), 70) << d.log();
    return;
  }
  ASSERT_TRUE(wait_for([&] { return admin.api().consumer_info("JOBS", "jobs-worker").ok(); }, 15s))
      << d.log();
  admin.publish_many("jobs.run", 100, "second-");
  ASSERT_TRUE(wait_for([&] { return read_sink_file(dir.path() + "/d.jsonl").records >= 200; }, 15s))
      << d.log();
  EXPECT_TRUE(d.running());
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(10s), 0);
}

INSTANTIATE_TEST_SUITE_P(OnMissing, ConsumerDeletedByHand, ::testing::Values("recreate", "exit"));

TEST(Daemon, SigtermMidStreamExitsZeroAndEveryWrittenRecordWasAcked) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const int port = free_loopback_port();
  const std::string sink = dir.path() + "/s.jsonl";
  // fsync = "batch" makes each record wait for the disk: the backlog lasts long enough to be
  // interrupted.
  std::string config = work_config("s", sink, port);
  config.replace(config.find("ack_wait = \"2s\""), 15, "ack_wait = \"60s\"");
  config.replace(config.find("\" }\n"), 4, "\", fsync = \"batch\" }\n");
  DaemonProcess d(dir.path(), "s", config, {"--server", server.url()});
  constexpr size_t kMessages = 10'000;
  admin.publish_many("jobs.run", kMessages);
  d.start();
  // The file's size, not a parse of it: cheap enough that the signal lands mid-stream even
  // when this test runs slowly (sanitizers).
  auto size = [&] {
    std::error_code ec;
    auto n = std::filesystem::file_size(sink, ec);
    return ec ? 0 : n;
  };
  ASSERT_TRUE(wait_for([&] { return size() >= 30'000; }, 30s)) << d.log();
  const auto before = std::chrono::steady_clock::now();
  d.signal(SIGTERM);
  auto code = d.wait_exit(10s);
  ASSERT_TRUE(code.has_value()) << "did not exit within the deadline\n" << d.log();
  EXPECT_EQ(*code, 0) << d.log();
  EXPECT_LT(std::chrono::steady_clock::now() - before, 7s);

  // Everything written was acked: the ack floor stands exactly at the last written record (what
  // was buffered but never written was nak'd back, and waits for the next replica).
  const size_t written = read_sink_file(sink).records;
  ASSERT_LT(written, kMessages) << "the daemon finished before SIGTERM: not mid-stream";
  auto info = admin.consumer("JOBS", "jobs-worker");
  EXPECT_EQ(info.ack_floor_stream_seq, written) << "written " << written;

  // A restart continues where it stopped: no written record comes back (ack_wait is 60 s, so a
  // redelivery here could only be a message that was written but not acked).
  DaemonProcess again(dir.path(), "s", config, {"--server", server.url()});
  again.start();
  ASSERT_TRUE(wait_for([&] { return read_sink_file(sink).records >= kMessages; }, 120s))
      << again.log();
  auto all = read_sink_file(sink);
  std::set<std::string> distinct(all.payloads.begin(), all.payloads.end());
  EXPECT_EQ(distinct.size(), kMessages);
  EXPECT_EQ(all.records, kMessages) << "duplicates after a clean SIGTERM";
  again.signal(SIGTERM);
  EXPECT_EQ(again.wait_exit(10s), 0);
}

// SIGHUP under a 1,000 msg/s flow: the changed work is drained and started anew (its sink moves
// to another file), an added work starts, and a config that does not load changes nothing.
// Every message is written once, across both files.
TEST(Daemon, SighupReloadsTheConfigUnderFlowLosingNothingAndHandlingNothingTwice) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  admin.create_stream("OTHER", {"other.>"});
  TempDir dir;
  const int port = free_loopback_port();
  const std::string first = dir.path() + "/first.jsonl";
  const std::string second = dir.path() + "/second.jsonl";
  const std::string other = dir.path() + "/other.jsonl";
  auto config = [&](const std::string& sink) {
    std::string c = work_config("r", sink, port);
    // A redelivery could only be an ack the reload lost.
    c.replace(c.find("ack_wait = \"2s\""), 15, "ack_wait = \"60s\"");
    return c;
  };
  DaemonProcess d(dir.path(), "r", config(first), {"--server", server.url()});
  d.start();
  ASSERT_TRUE(wait_for([&] { return readyz(port) == 200; }, 15s)) << d.log();

  std::atomic<bool> publishing{true};
  std::atomic<int> published{0};
  std::thread publisher([&] {
    BrokerClient client(server.url());
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; publishing; i += 10) {
      client.publish_many("jobs.run", 10, "m", i);
      published = i + 10;
      std::this_thread::sleep_until(start + std::chrono::milliseconds(i + 10));  // 1,000/s
    }
  });
  auto records = [](const std::string& path) { return read_sink_file(path).records; };
  auto count = [&](const std::string& line) {
    size_t n = 0;
    for (auto at = d.log().find(line); at != std::string::npos; at = d.log().find(line, at + 1))
      ++n;
    return n;
  };
  ASSERT_TRUE(wait_for([&] { return records(first) >= 1'000; }, 30s)) << d.log();

  {
    std::ofstream out(d.config_path());
    out << config(second) << "[[work]]\n"
        << "name = \"other-worker\"\nsubject = \"other.run\"\n"
        << "sink = { type = \"file\", path = \"" << other << "\" }\n";
  }
  d.signal(SIGHUP);
  ASSERT_TRUE(
      wait_for([&] { return count("reloaded: 2 started, 1 stopped, 0 unchanged, 0 failed"); }, 30s))
      << d.log();
  ASSERT_TRUE(wait_for([&] { return records(second) >= 1'000; }, 30s)) << d.log();

  {
    std::ofstream out(d.config_path());
    out << config(second) << "surprise = true\n";
  }
  d.signal(SIGHUP);
  ASSERT_TRUE(wait_for([&] { return count("the running config is kept"); }, 30s)) << d.log();
  EXPECT_NE(d.log().find("surprise"), std::string::npos) << "the error names the key";
  const size_t after_bad = records(second);
  ASSERT_TRUE(wait_for([&] { return records(second) >= after_bad + 500; }, 30s)) << d.log();
  publishing = false;
  publisher.join();
  admin.publish_many("other.run", 50);

  const size_t total = static_cast<size_t>(published.load());
  auto distinct = [&] {
    std::set<std::string> all;
    for (const auto& path : {first, second})
      for (auto& p : read_sink_file(path).payloads) all.insert(p);
    return all.size();
  };
  // Well within ack_wait: what a stopped work had on its way was given back, not left to expire.
  ASSERT_TRUE(wait_for([&] { return distinct() == total && records(other) == 50; }, 30s))
      << distinct() << " of " << total << "\n"
      << d.log();
  EXPECT_EQ(records(first) + records(second), total) << "handled twice across the reload";
  EXPECT_TRUE(d.running());
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

// A reload whose new definition of a work cannot start (its worker is not executable) starts
// the work again as it was: its messages keep reaching the old sink.
TEST(Daemon, AReloadedWorkThatCannotStartRunsOnAsItWas) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const int port = free_loopback_port();
  const std::string sink = dir.path() + "/kept.jsonl";
  DaemonProcess d(dir.path(), "k", work_config("k", sink, port), {"--server", server.url()});
  d.start();
  ASSERT_TRUE(wait_for([&] { return readyz(port) == 200; }, 15s)) << d.log();
  admin.publish_many("jobs.run", 100, "before-");
  ASSERT_TRUE(wait_for([&] { return read_sink_file(sink).records == 100; }, 30s)) << d.log();

  std::string broken = work_config("k", sink, port);
  broken.replace(broken.find("sink = {"), std::string::npos,
                 "sink = { type = \"worker\", command = [\"" + dir.path() + "/missing\"] }\n");
  std::ofstream(d.config_path()) << broken;
  d.signal(SIGHUP);
  ASSERT_TRUE(wait_for(
      [&] {
        return d.log().find("reloaded: 0 started, 1 stopped, 0 unchanged, 1 failed") !=
               std::string::npos;
      },
      30s))
      << d.log();
  EXPECT_NE(d.log().find("starting it as it was"), std::string::npos) << d.log();
  admin.publish_many("jobs.run", 100, "after-");
  ASSERT_TRUE(wait_for([&] { return read_sink_file(sink).records == 200; }, 30s)) << d.log();
  EXPECT_EQ(readyz(port), 200);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

// A replica paused (SIGSTOP) longer than ack_wait while messages flow: what reached it before
// the pause (in its socket, or on the way) has meanwhile been handed to the other replica by
// the broker. When it resumes it must not handle those again.
TEST_F(TwoReplicas, APausedOneDoesNotHandleWhatTheBrokerHandedOnMeanwhile) {
  constexpr int kMessages = 6'000;
  std::atomic<bool> stop{false};
  std::thread publisher([&] {
    for (int i = 0; i < kMessages && !stop; ++i) {
      admin.publish("jobs.run", "m" + std::to_string(i));
      std::this_thread::sleep_for(500us);  // a steady stream, not one burst
    }
  });
  auto records = [&](const char* file) { return read_sink_file(dir.path() + file); };
  ASSERT_TRUE(wait_for([&] { return records("/a.jsonl").records >= 500; }, 60s));
  a.signal(SIGSTOP);
  ASSERT_TRUE(wait_stopped(a.pid()));
  const size_t before = records("/a.jsonl").records;  // a writes nothing more while stopped
  // Paused until the broker has handed some of a's messages to b (ack_wait, 2 s, passed).
  const bool handed_on = wait_for([&] { return records("/b.jsonl").redelivered > 0; }, 30s);
  std::this_thread::sleep_for(4s);  // the pause: 3 x ack_wait in all, so all a holds expired
  a.signal(SIGCONT);
  ASSERT_TRUE(handed_on) << "the broker never redelivered a's messages to b";
  publisher.join();

  std::set<std::string> distinct;
  size_t total = 0;
  ASSERT_TRUE(wait_for(
      [&] {
        distinct.clear();
        total = 0;
        for (const char* f : {"/a.jsonl", "/b.jsonl"}) {
          auto sink = records(f);
          total += sink.records;
          distinct.insert(sink.payloads.begin(), sink.payloads.end());
        }
        auto info = admin.consumer("JOBS", "jobs-worker");
        return distinct.size() == kMessages && info.num_ack_pending == 0 && info.num_pending == 0;
      },
      60s))
      << "distinct " << distinct.size();
  // What a wrote before the pause and b again is the price of at-least-once (a's ack was still
  // on its way when it stopped); what a wrote after it must be nothing b had.
  const auto a_payloads = records("/a.jsonl").payloads;
  const auto b_payloads = records("/b.jsonl").payloads;
  const std::set<std::string> by_b(b_payloads.begin(), b_payloads.end());
  size_t again_after_pause = 0, again_before_pause = 0;
  for (size_t i = 0; i < a_payloads.size(); ++i)
    if (by_b.count(a_payloads[i])) ++(i < before ? again_before_pause : again_after_pause);
  // Only what was already in a's handlers when it stopped (concurrency 4) may land after it.
  EXPECT_LE(again_after_pause, 4u) << "a handled after the pause what the broker gave b";
  std::printf(
      "records of a before the pause %zu; handled by both: %zu (a's copy before the pause), "
      "%zu (after)\n",
      before, again_before_pause, again_after_pause);
}

// natsfleet run with no servers and a per-key ordered work: its embedded broker maps the subject
// to partitions and stores the partitioned subjects, so plain publishes reach the work in order.
TEST(Daemon, OrderedWorkOnTheEmbeddedBrokerKeepsEachKeyInOrder) {
  TempDir dir;
  const std::string out = dir.path() + "/out.jsonl";
  DaemonProcess daemon(dir.path(), "ord",
                       "name = \"ord\"\n[health]\nlisten = \"127.0.0.1:0\"\n[[work]]\n"
                       "name = \"orders\"\nsubject = \"orders.*\"\nordering = \"per-key\"\n"
                       "key_token = 2\nconcurrency = 4\nsink = { type = \"file\", path = \"" +
                           out + "\" }\n");
  daemon.start();
  const std::string port_file = dir.path() + "/.natsfleet/ord/broker/port";
  int port = 0;
  ASSERT_TRUE(wait_for(
      [&] {
        std::ifstream in(port_file);
        return in && (in >> port) && port > 0;
      },
      20s))
      << daemon.log();
  BrokerClient admin("nats://127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(wait_for([&] { return admin.api().find_stream("orders.*.*").ok(); }, 20s))
      << daemon.log();
  constexpr int kKeys = 5, kEach = 20;
  for (int n = 0; n < kEach; ++n)
    for (int k = 0; k < kKeys; ++k)
      admin.publish("orders.k" + std::to_string(k),
                    "k" + std::to_string(k) + ":" + std::to_string(n));
  auto records = [&] {
    std::vector<nlohmann::json> all;
    std::ifstream in(out);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object()) all.push_back(std::move(j));
    }
    return all;
  };
  ASSERT_TRUE(wait_for([&] { return records().size() >= kKeys * kEach; }, 30s)) << daemon.log();
  std::map<std::string, int> last;
  for (const auto& r : records()) {
    const std::string data = r.value("data", "");
    const std::string key = data.substr(0, data.find(':'));
    const int n = std::stoi(data.substr(data.find(':') + 1));
    auto [it, fresh] = last.emplace(key, n);
    if (!fresh) {
      EXPECT_GT(n, it->second) << key << " out of order";
    }
    it->second = n;
    EXPECT_EQ(r.value("subject", ""),
              "orders." + key + "." +
                  std::to_string(fleet::PartitionPlan::make("orders.*", 2, 16)->partition_of(key)));
  }
  EXPECT_EQ(last.size(), static_cast<size_t>(kKeys));
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20s), 0) << daemon.log();
}

// Under systemd (Type=notify): READY=1 only once every subscription is bound, watchdog pings
// while the fleet is live (bound or not), a status line naming what waits, STOPPING=1 at the end.
TEST(ServiceManager, HearsReadyOnceBoundWatchdogPingsWhileLiveAndStopping) {
  NatsServer server;
  BrokerClient admin{server.url()};
  TempDir dir;
  NotifyListener manager;
  ScopedEnv socket("NOTIFY_SOCKET", manager.path());
  ScopedEnv watchdog("WATCHDOG_USEC", "300000");
  const int port = free_loopback_port();
  DaemonProcess daemon{dir.path(),
                       "svc",
                       work_config("svc", dir.path() + "/svc.jsonl", port),
                       {"--server", server.url()}};
  daemon.start();
  // No stream holds jobs.run yet: the subscription waits, and says so.
  ASSERT_TRUE(manager.wait_for_line("STATUS=not ready: jobs-worker binding", 15s))
      << manager.transcript() << daemon.log();
  for (int ping = 0; ping < 3; ++ping)
    ASSERT_TRUE(manager.wait_for_line("WATCHDOG=1", 5s)) << manager.transcript();
  EXPECT_EQ(manager.transcript().find("READY=1"), std::string::npos) << manager.transcript();
  EXPECT_EQ(readyz(port), 503);

  admin.create_stream("JOBS", {"jobs.>"});
  ASSERT_TRUE(manager.wait_for_line("READY=1", 15s)) << manager.transcript() << daemon.log();
  EXPECT_EQ(readyz(port), 200);
  EXPECT_NE(manager.transcript().find("STATUS=ready: 1 subscriptions bound"), std::string::npos)
      << manager.transcript();
  for (int ping = 0; ping < 3; ++ping)
    ASSERT_TRUE(manager.wait_for_line("WATCHDOG=1", 5s)) << manager.transcript();

  daemon.signal(SIGTERM);
  ASSERT_TRUE(manager.wait_for_line("STOPPING=1", 15s)) << manager.transcript();
  EXPECT_EQ(daemon.wait_exit(20s), 0) << daemon.log();
  size_t ready = 0;
  for (const auto& datagram : manager.received())
    ready += datagram.find("READY=1") != std::string::npos;
  EXPECT_EQ(ready, 1u) << manager.transcript();  // once, not again after each reconnect
}

}  // namespace
}  // namespace natsfleet::testing
