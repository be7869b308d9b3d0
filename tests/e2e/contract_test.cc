// The daemon's contracts as users script against them: exit codes and messages for bad configs,
// lint output, /readyz through a long outage, /metrics in Prometheus format, TLS.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "health/prometheus_parser.h"
#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

struct Outcome {
  int code = -1;
  std::string output;
};

Outcome run_cli(const std::string& args) {
  const std::string command = std::string(NATSFLEET_CLI_BIN) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  Outcome o;
  if (!pipe) return o;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) o.output.append(buf, n);
  const int status = ::pclose(pipe);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

struct BadConfig {
  const char* text;
  int line;
  const char* key;  // as it must appear in the message ("" when the error names no key)
};

// Each must exit 2 before connecting anywhere, naming file, line and key.
const BadConfig kBadConfigs[] = {
    {"name = \"svc\"\nbogus = 1\n", 2, "bogus"},
    {"name = \"svc\"\n[health]\nlisten = \"nowhere\"\n", 3, "health.listen"},
    {"name = \"svc\"\n[health]\nport = 9464\n", 3, "health.port"},
    {"name = \"svc\"\nservers = \"nats://127.0.0.1:4222\"\n", 2, "servers"},
    {"name = \"svc\"\nservers = [\"http://127.0.0.1:4222\"]\n", 2, "servers[0]"},
    {"name = \"svc\"\nlog_format = \"xml\"\n", 2, "log_format"},
    {"name = \"svc\"\nshutdown_timeout = 10\n", 2, "shutdown_timeout"},
    {"name = \"bad name\"\n", 1, "name"},
    {"name = \"svc\"\n[[work]]\nsubject = \"a.b\"\nsink = { type = \"stdout\" }\n", 2,
     "work[0].name"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsink = { type = \"stdout\" }\n", 2,
     "work[0].subject"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a b\"\nsink = { type = \"stdout\" }\n", 4,
     "work[0].subject"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a..b\"\nsink = { type = \"stdout\" }\n",
     4, "work[0].subject"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.>.b\"\nsink = { type = \"stdout\" }\n",
     4, "work[0].subject"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nack_wait = \"30\"\nsink = { type "
     "= \"stdout\" }\n",
     5, "work[0].ack_wait"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nack_wait = 30\nsink = { type = "
     "\"stdout\" }\n",
     5, "work[0].ack_wait"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nheartbeat = \"1x\"\nsink = { type "
     "= \"stdout\" }\n",
     5, "work[0].heartbeat"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nconcurrency = 0\nsink = { type = "
     "\"stdout\" }\n",
     5, "work[0].concurrency"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nmax_deliver = 0\nsink = { type = "
     "\"stdout\" }\n",
     5, "work[0].max_deliver"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nstart = \"first\"\nsink = { type "
     "= \"stdout\" }\n",
     5, "work[0].start"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\non_missing = \"ignore\"\nsink = { "
     "type = \"stdout\" }\n",
     5, "work[0].on_missing"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nshape = \"push\"\nsink = { type = "
     "\"stdout\" }\n",
     5, "work[0].shape"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nsurprise = true\nsink = { type = "
     "\"stdout\" }\n",
     5, "work[0].surprise"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\n", 2, "work[0].sink"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nsink = { type = \"kafka\" }\n", 5,
     "work[0].sink.type"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nsink = { type = \"file\" }\n", 5,
     "work[0].sink.path"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nsink = { type = \"file\", path = "
     "\"x\", fsync = \"always\" }\n",
     5, "work[0].sink.fsync"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nsink = { type = \"worker\", "
     "command = \"python3 w.py\" }\n",
     5, "work[0].sink.command"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nsink = { type = \"http\", url = "
     "\"ftp://x/y\" }\n",
     5, "work[0].sink.url"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nsink = { type = \"stdout\" "
     "}\n[[broadcast]]\nname = \"w\"\nsubject = \"c.d\"\nsink = { type = \"stdout\" }\n",
     7, "broadcast[0].name"},
    {"name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nconcurrency = 8\nmax_ack_pending "
     "= 4\nsink = { type = \"stdout\" }\n",
     6, "work[0].max_ack_pending"},
    {"name = \"svc\"\ntls = { key = \"k.pem\" }\n", 2, "tls.cert"},
    {"name = \"svc\"\n[[work]\nname = \"w\"\n", 2, ""},
};

TEST(ConfigErrors, EachBadConfigExitsTwoNamingFileLineAndKey) {
  TempDir dir;
  int index = 0;
  for (const auto& bad : kBadConfigs) {
    const std::string path = dir.path() + "/bad-" + std::to_string(index++) + ".toml";
    std::ofstream(path) << bad.text;
    auto o = run_cli("run " + path + " --server nats://127.0.0.1:1");
    EXPECT_EQ(o.code, 2) << bad.text << "\n" << o.output;
    const std::string where = path + ":" + std::to_string(bad.line) + ":";
    EXPECT_NE(o.output.find(where), std::string::npos)
        << "expected '" << where << "' in: " << o.output;
    if (*bad.key) {
      EXPECT_NE(o.output.find(std::string(bad.key) + ":"), std::string::npos)
          << "expected key '" << bad.key << "' in: " << o.output;
    }
  }
  EXPECT_GE(index, 25);
}

TEST(Cli, VersionAndHelpAnswerAndExitZero) {
  const std::string version = std::string("natsfleet ") + NATSFLEET_VERSION + "\n";
  auto flag = run_cli("--version");
  EXPECT_EQ(flag.code, 0);
  EXPECT_EQ(flag.output, version);
  auto command = run_cli("version");
  EXPECT_EQ(command.code, 0);
  EXPECT_EQ(command.output, version);
  auto help = run_cli("help");
  EXPECT_EQ(help.code, 0) << help.output;
  for (const char* sub : {"run", "lint", "audit", "dead-letters", "demo", "version"})
    EXPECT_NE(help.output.find(std::string("  ") + sub), std::string::npos) << sub << help.output;
}

TEST(Lint, FindingsExitOneCleanExitsZeroUnreadableExitsTwo) {
  TempDir dir;
  const std::string clean = dir.path() + "/clean.toml";
  std::ofstream(clean) << "name = \"svc\"\nservers = [\"nats://127.0.0.1:4222\"]\n"
                       << "[[work]]\nname = \"w\"\nsubject = \"a.b\"\n"
                       << "dead_letter = \"dead.a.b\"\n"
                       << "sink = { type = \"file\", path = \"out.jsonl\" }\n";
  auto ok = run_cli("lint " + clean);
  EXPECT_EQ(ok.code, 0) << ok.output;

  const std::string risky = dir.path() + "/risky.toml";
  std::ofstream(risky) << "name = \"svc\"\nservers = [\"nats://127.0.0.1:4222\"]\n"
                       << "[[work]]\nname = \"w\"\nsubject = \"a.b\"\nack_wait = \"5s\"\n"
                       << "sink = { type = \"http\", url = \"http://hooks.example.com/x\", "
                          "timeout = \"10s\" }\n";
  auto findings = run_cli("lint " + risky);
  EXPECT_EQ(findings.code, 1) << findings.output;
  EXPECT_TRUE(std::regex_search(findings.output,
                                std::regex(risky + R"(:\d+: ack-wait-below-sink-timeout: )")))
      << findings.output;
  EXPECT_TRUE(
      std::regex_search(findings.output, std::regex(risky + R"(:\d+: plain-http-remote: )")))
      << findings.output;

  auto missing = run_cli("lint " + dir.path() + "/nope.toml");
  EXPECT_EQ(missing.code, 2) << missing.output;
}

// Whether the daemon's /readyz on `port` answers 200 within `limit`.
bool ready_within(int port, std::chrono::milliseconds limit) {
  return wait_for(
      [&] {
        int status = 0;
        http_get(port, "/readyz", &status);
        return status == 200;
      },
      limit);
}

std::string daemon_config(int health_port, const std::string& extra_top = {}) {
  return "name = \"contract\"\n" + extra_top +
         "[health]\nlisten = \"127.0.0.1:" + std::to_string(health_port) +
         "\"\n"
         "[[work]]\nname = \"jobs-worker\"\nsubject = \"jobs.run\"\nheartbeat = \"500ms\"\n"
         "sink = { type = \"file\", path = \"out.jsonl\" }\n"
         "[[broadcast]]\nname = \"status\"\nsubject = \"member.*.status\"\n"
         "sink = { type = \"file\", path = \"status.jsonl\" }\n";
}

TEST(Metrics, ParseAsPrometheusTextAndCountersMatchWhatWasHandled) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const int port = free_loopback_port();
  DaemonProcess d(dir.path(), "m", daemon_config(port), {"--server", server.url()});
  d.start();
  ASSERT_TRUE(ready_within(port, 15s)) << d.log();
  admin.publish_many("jobs.run", 250);
  for (int i = 0; i < 7; ++i)
    ASSERT_TRUE(admin.connection().publish("member." + std::to_string(i) + ".status", "{}"));
  ASSERT_TRUE(admin.connection().flush(2s));
  ASSERT_TRUE(
      wait_for([&] { return read_sink_file(dir.path() + "/out.jsonl").records == 250; }, 15s));
  ASSERT_TRUE(
      wait_for([&] { return read_sink_file(dir.path() + "/status.jsonl").records == 7; }, 15s));

  int status = 0;
  const std::string body = http_get(port, "/metrics", &status);
  ASSERT_EQ(status, 200);
  ParsedMetrics metrics;
  ASSERT_NO_THROW(metrics = parse_prometheus(body)) << body;
  const PromLabels work = {
      {"service", "contract"}, {"subscription", "jobs-worker"}, {"kind", "work"}};
  auto with = [](PromLabels labels, const char* key, const char* value) {
    labels[key] = value;
    return labels;
  };
  EXPECT_EQ(metrics.value("natsfleet_messages_total", with(work, "outcome", "acked")), 250);
  EXPECT_EQ(metrics.value("natsfleet_messages_total", with(work, "outcome", "received")), 250);
  EXPECT_EQ(metrics.value("natsfleet_handler_latency_seconds_count", work), 250);
  EXPECT_EQ(metrics.value("natsfleet_subscription_state", with(work, "state", "bound")), 1);
  const PromLabels bc = {
      {"service", "contract"}, {"subscription", "status"}, {"kind", "broadcast"}};
  EXPECT_EQ(metrics.value("natsfleet_messages_total", with(bc, "outcome", "received")), 7);
  EXPECT_EQ(metrics.value("natsfleet_ready", {{"service", "contract"}}), 1);

  // /status tells the same story in JSON.
  const std::string json = http_get(port, "/status", &status);
  EXPECT_EQ(status, 200);
  EXPECT_NE(json.find("\"jobs-worker\""), std::string::npos) << json;
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(10s), 0);
}

// A whole run's log in json mode: every line one JSON object with its typed fields, so a log
// pipeline filters on them without parsing words.
TEST(JsonLog, EveryLineOfARunIsJsonWithTypedFields) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const int port = free_loopback_port();
  DaemonProcess d(dir.path(), "j",
                  daemon_config(port, "log_format = \"json\"\nlog_level = \"debug\"\n"),
                  {"--server", server.url()});
  d.start();
  ASSERT_TRUE(ready_within(port, 15s)) << d.log();
  admin.publish_many("jobs.run", 20);
  ASSERT_TRUE(
      wait_for([&] { return read_sink_file(dir.path() + "/out.jsonl").records == 20; }, 15s));
  server.restart();  // a disconnect and a reconnect in the log
  ASSERT_TRUE(ready_within(port, 30s)) << d.log();
  d.signal(SIGTERM);
  ASSERT_EQ(d.wait_exit(10s), 0);

  std::map<std::string, int> events;
  std::istringstream lines(d.log());
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    ++count;
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(line)) << line;
    for (const char* key : {"time", "level", "logger", "msg", "event"})
      ASSERT_TRUE(j.contains(key) && j[key].is_string()) << key << " in " << line;
    const std::string event = j["event"];
    ++events[event];
    if (event == "received" || event == "acked") {
      EXPECT_EQ(j["work"], "jobs-worker") << line;
      EXPECT_EQ(j["stream"], "JOBS") << line;
      EXPECT_TRUE(j["stream_seq"].is_number_unsigned()) << line;
      EXPECT_TRUE(j["delivered"].is_number_unsigned()) << line;
    }
    if (event == "state") {
      EXPECT_TRUE(j.contains("work") || j.contains("broadcast")) << line;
      EXPECT_TRUE(j["from"].is_string() && j["to"].is_string()) << line;
    }
    if (event == "health-endpoints") {
      EXPECT_EQ(j["server"], "health") << line;
    }
  }
  EXPECT_GT(count, 40);
  EXPECT_EQ(events["received"], 20) << d.log();
  EXPECT_EQ(events["acked"], 20);
  for (const char* event : {"started", "connected", "disconnected", "state", "work", "broadcast",
                            "health-endpoints", "stop-requested", "stopped"})
    EXPECT_GT(events[event], 0) << event << " missing from\n" << d.log();
}

// Longer than nats.c's default reconnect window (60 tries, 2 s apart): the daemon's defaults
// must ride it out. Labelled slow.
TEST(Outage, BrokerGoneLongerThanTheDefaultReconnectWindowRecoversReadyzFollows) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const int port = free_loopback_port();
  DaemonProcess d(dir.path(), "o", daemon_config(port), {"--server", server.url()});
  d.start();
  int status = 0;
  auto readyz = [&] {
    http_get(port, "/readyz", &status);
    return status;
  };
  ASSERT_TRUE(wait_for([&] { return readyz() == 200; }, 15s)) << d.log();
  admin.publish_many("jobs.run", 10, "before-");

  server.stop();
  ASSERT_TRUE(wait_for([&] { return readyz() == 503; }, 10s));
  const auto outage = std::chrono::seconds(125);
  const auto until = std::chrono::steady_clock::now() + outage;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(d.running()) << "the daemon exited during the outage\n" << d.log();
    int live = 0;
    http_get(port, "/healthz", &live);
    ASSERT_EQ(live, 200) << "an outage is not fatal";
    std::this_thread::sleep_for(5s);
  }
  server.restart();
  ASSERT_TRUE(wait_for([&] { return readyz() == 200; }, 30s)) << d.log();
  admin.publish_many("jobs.run", 10, "after-");
  ASSERT_TRUE(
      wait_for([&] { return read_sink_file(dir.path() + "/out.jsonl").records >= 20; }, 20s))
      << d.log();
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(10s), 0);
}

void openssl(const std::string& args) {
  ASSERT_EQ(std::system(("openssl " + args + " >/dev/null 2>&1").c_str()), 0) << args;
}

TEST(Tls, ConnectsToATlsBrokerWithClientCertificates) {
  TempDir dir;
  const std::string d = dir.path();
  openssl("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout " + d +
          "/ca.key -out " + d + "/ca.pem");
  for (const std::string who : {"server", "client"}) {
    openssl("req -newkey rsa:2048 -nodes -subj /CN=" + who + " -keyout " + d + "/" + who +
            ".key -out " + d + "/" + who + ".csr");
    std::ofstream(d + "/" + who + ".ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    openssl("x509 -req -days 2 -in " + d + "/" + who + ".csr -CA " + d + "/ca.pem -CAkey " + d +
            "/ca.key -CAcreateserial -extfile " + d + "/" + who + ".ext -out " + d + "/" + who +
            ".pem");
  }
  NatsServerOptions options;
  options.extra_config = "tls {\n  cert_file: \"" + d + "/server.pem\"\n  key_file: \"" + d +
                         "/server.key\"\n  ca_file: \"" + d + "/ca.pem\"\n  verify: true\n}\n";
  NatsServer server(options);
  const std::string tls_url = "tls://127.0.0.1:" + std::to_string(server.port());

  const int port = free_loopback_port();
  const std::string tls = "tls = { ca = \"" + d + "/ca.pem\", cert = \"" + d +
                          "/client.pem\", key = \"" + d + "/client.key\" }\n";
  DaemonProcess daemon(d, "t", daemon_config(port, tls), {"--server", tls_url});
  daemon.start();
  int status = 0;
  ASSERT_TRUE(wait_for(
      [&] {
        http_get(port, "/status", &status);
        return status == 200;
      },
      15s));
  // Without a stream the work subscription waits; the broadcast binds over TLS.
  ASSERT_TRUE(wait_for(
      [&] {
        auto s = http_get(port, "/status", &status);
        return s.find("\"bound\"") != std::string::npos;
      },
      15s))
      << daemon.log();
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(10s), 0) << daemon.log();

  // Without its client certificate the broker refuses the daemon for good: nats.c closes the
  // connection, and the daemon says why and exits 70 rather than sit there unready.
  DaemonProcess refused(
      d, "r", daemon_config(free_loopback_port(), "tls = { ca = \"" + d + "/ca.pem\" }\n"),
      {"--server", tls_url});
  refused.start();
  EXPECT_EQ(refused.wait_exit(20s), 70) << refused.log();
  EXPECT_NE(refused.log().find("last error"), std::string::npos) << refused.log();
}

}  // namespace
}  // namespace natsfleet::testing
