// Secrets planted everywhere a config can hold them (a server's password and token, an http
// sink's userinfo, query token and header value, a creds file's contents) never appear in
// anything natsfleet prints: its log, /status, /readyz, /metrics, audit, lint, dead-letter
// listings and config errors, also when the broker is unreachable and the sink fails.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

const std::string kTestData = NATSFLEET_E2E_TESTDATA;

const std::vector<std::string> kSecrets = {
    "S3cretNatsPass", "S3cretNatsToken", "S3cretHttpPass",
    "S3cretQueryTok", "S3cretHeaderVal", "S3cretCredsBody",
};

// Everything natsfleet printed, labelled, for the one check at the end.
struct Printed {
  std::vector<std::pair<std::string, std::string>> outputs;
  void add(const std::string& label, const std::string& text) { outputs.emplace_back(label, text); }
  void add(const std::string& label, const CliOutcome& o) {
    add(label + " stdout", o.out);
    add(label + " stderr", o.err);
  }
};

// The http sink refuses userinfo in its URL (a run with one is among the config errors below).
std::string http_sink(int port, const std::string& userinfo = "") {
  return "{ type = \"http\", url = \"http://" + userinfo + "127.0.0.1:" + std::to_string(port) +
         "/hook?token=S3cretQueryTok\", timeout = \"2s\", headers = { Authorization = \"Bearer "
         "S3cretHeaderVal\" } }";
}

TEST(Secrets, NeverPrintedByRunAuditLintOrDeadLetters) {
  NatsServer server;  // no authorization: it accepts any user and password
  BrokerClient broker(server.url());
  broker.create_stream("JOBS", {"jobs.>"});
  TempDir dir;
  const std::string control = dir.path() + "/control";
  std::filesystem::create_directories(control);
  std::ofstream(control + "/poison") << "poison\n";  // the endpoint answers 400 to it

  const int endpoint_port = free_loopback_port();
  ChildProcess endpoint({"/usr/bin/python3", kTestData + "/downstream_http.py",
                         std::to_string(endpoint_port), dir.path() + "/received", control});
  int code = 0;
  ASSERT_TRUE(wait_for([&] { return http_get(endpoint_port, "/", &code), code == 200; }, 10s));

  const std::string port = std::to_string(server.port());
  const int wrong_port = free_loopback_port();
  std::ofstream(dir.path() + "/svc.creds") << "-----BEGIN NATS USER JWT-----\nS3cretCredsBody\n";
  const int health_port = free_loopback_port();
  // The first server is the real broker; the second, with a token, refuses connections.
  const std::string servers =
      "servers = [\"nats://alice:S3cretNatsPass@127.0.0.1:" + port +
      "\", \"nats://S3cretNatsToken@127.0.0.1:" + std::to_string(wrong_port) + "\"]\n";
  const std::string work =
      "[[work]]\nname = \"jobs\"\nsubject = \"jobs.run\"\nheartbeat = "
      "\"500ms\"\nmax_deliver = 1\ndead_letter = \"jobs.dead\"\nsink = " +
      http_sink(endpoint_port) + "\n";
  Printed printed;

  {
    DaemonProcess daemon(dir.path(), "svc",
                         "name = \"svc\"\n" + servers + "[health]\nlisten = \"127.0.0.1:" +
                             std::to_string(health_port) + "\"\n" + work);
    daemon.start();
    ASSERT_TRUE(wait_for([&] { return http_get(health_port, "/readyz", &code), code == 200; }, 20s))
        << daemon.log();
    broker.publish("jobs.run", "poison");  // 400: rejected, dead-lettered with the sink's error
    ASSERT_TRUE(wait_for(
        [&] {
          return http_get(health_port, "/status", &code).find("\"dead_lettered\": 1") !=
                 std::string::npos;
        },
        20s))
        << daemon.log();
    std::ofstream(control + "/down") << "\n";  // 503 from now on: the sink is down
    broker.publish("jobs.run", "held-1");
    broker.publish("jobs.run", "held-2");
    ASSERT_TRUE(wait_for(
        [&] {
          return http_get(health_port, "/status", &code).find("\"down\": true") !=
                 std::string::npos;
        },
        20s))
        << daemon.log();
    printed.add("/status", http_get(health_port, "/status", &code));
    printed.add("/readyz", http_get(health_port, "/readyz", &code));
    printed.add("/healthz", http_get(health_port, "/healthz", &code));
    printed.add("/metrics", http_get(health_port, "/metrics", &code));
    EXPECT_NE(printed.outputs[0].second.find("hook?token=***"), std::string::npos)
        << "the redacted sink URL still says where: " << printed.outputs[0].second;

    const std::string config = daemon.config_path();
    printed.add("audit", run_cli("audit --config " + config + " --interval 200ms"));
    printed.add("audit --json", run_cli("audit --json --config " + config + " --interval 200ms"));
    printed.add("lint", run_cli("lint " + config));
    printed.add("dead-letters list", run_cli("dead-letters list --config " + config));
    printed.add("dead-letters list --json", run_cli("dead-letters list --json --config " + config));
    EXPECT_NE(printed.outputs.back().first.find("json"), std::string::npos);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(20s), 0) << daemon.log();
    printed.add("run log", daemon.log());
    EXPECT_NE(daemon.log().find("alice:***@127.0.0.1"), std::string::npos)
        << "the server list is logged, redacted: " << daemon.log();
  }

  {
    // No broker at all, and a creds file that is not one: the start fails, in words.
    DaemonProcess down(dir.path(), "down2",
                       "name = \"svc\"\nservers = [\"nats://alice:S3cretNatsPass@127.0.0.1:" +
                           std::to_string(wrong_port) +
                           "\", \"nats://S3cretNatsToken@127.0.0.1:" + std::to_string(wrong_port) +
                           "\"]\ncredentials = \"svc.creds\"\n[health]\nlisten = "
                           "\"127.0.0.1:0\"\n" +
                           work);
    down.start();
    if (!down.wait_exit(10s)) {
      down.signal(SIGTERM);
      down.wait_exit(10s);
    }
    printed.add("run (broker down) log", down.log());
    printed.add("audit (broker down)", run_cli("audit --config " + dir.path() +
                                               "/down2.toml --interval 200ms --timeout 2s"));
    printed.add("dead-letters (broker down)",
                run_cli("dead-letters list --config " + dir.path() + "/down2.toml --timeout 2s"));
    printed.add("audit --server",
                run_cli("audit --server nats://alice:S3cretNatsPass@127.0.0.1:" +
                        std::to_string(wrong_port) + " --interval 200ms --timeout 2s"));
  }

  {
    // Config errors that quote the URL they refuse.
    std::ofstream(dir.path() + "/bad-server.toml")
        << "name = \"svc\"\nservers = [\"nats://alice:S3cretNatsPass@127.0.0.1:99999\"]\n"
        << work;
    std::ofstream(dir.path() + "/bad-sink.toml")
        << "name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nsink = { type = \"http\", "
           "url = \"ftp://bob:S3cretHttpPass@h/x?token=S3cretQueryTok\" }\n";
    // Valid TOML, but the http sink will not take userinfo: refused when the sink is made.
    std::ofstream(dir.path() + "/userinfo-sink.toml")
        << "name = \"svc\"\nservers = [\"nats://alice:S3cretNatsPass@127.0.0.1:" << port
        << "\"]\n[[work]]\nname = \"w\"\nsubject = \"jobs.run\"\nsink = "
        << http_sink(endpoint_port, "bob:S3cretHttpPass@") << "\n";
    for (const std::string name : {"bad-server.toml", "bad-sink.toml", "userinfo-sink.toml"}) {
      const std::string path = dir.path() + "/" + name;
      auto run = run_cli("run " + path);
      EXPECT_EQ(run.code, 2) << run.err;
      printed.add("run " + name, run);
      printed.add("lint " + name, run_cli("lint " + path));
      printed.add("audit " + name, run_cli("audit --config " + path));
    }
  }

  for (const auto& [label, text] : printed.outputs)
    for (const auto& secret : kSecrets)
      EXPECT_EQ(text.find(secret), std::string::npos) << secret << " printed by " << label << ":\n"
                                                      << text;
  EXPECT_GE(printed.outputs.size(), 30u);
}

}  // namespace
}  // namespace natsfleet::testing
