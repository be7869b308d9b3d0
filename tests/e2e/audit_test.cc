// `natsfleet audit` against real brokers set up to show each finding: the binary's exit codes,
// its table and JSON, its config checks, and proof that it only reads.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "fleet/consumer_shape.h"
#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

using Outcome = CliOutcome;

// Runs `natsfleet audit <args>`, stdout and stderr kept apart.
Outcome run_audit(const std::string& args) { return run_cli("audit " + args); }

// A durable pull consumer (or push, with a deliver subject) created through the raw API, the way
// another client or an older release would have made it.
void create_consumer(BrokerClient& admin, const std::string& stream, nlohmann::json config) {
  config["ack_policy"] = "explicit";
  auto created = admin.api().create_consumer(stream, nats::parse_consumer_config(config));
  ASSERT_TRUE(created) << created.error().describe();
}

nlohmann::json pull_config(const std::string& name, const std::string& filter) {
  return {{"durable_name", name}, {"filter_subject", filter}};
}

nlohmann::json push_config(const std::string& name, const std::string& filter) {
  return {
      {"durable_name", name}, {"filter_subject", filter}, {"deliver_subject", "deliver." + name}};
}

// One pull request for `batch` messages; returns the reply subjects of those that arrived.
std::vector<std::string> fetch(BrokerClient& admin, const std::string& stream,
                               const std::string& consumer, size_t batch) {
  auto& connection = admin.connection();
  const std::string inbox = connection.new_inbox();
  std::mutex mu;
  std::vector<std::string> replies;
  auto sub = connection.subscribe(inbox, "", [&](nats::InboundMessage&& m) {
    if (m.status != 0) return;  // 404/408: nothing (more) to fetch
    std::lock_guard lock(mu);
    replies.push_back(m.reply);
  });
  EXPECT_TRUE(sub);
  const nlohmann::json request = {{"batch", batch}, {"expires", 2'000'000'000}};
  EXPECT_TRUE(connection.publish("$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer,
                                 request.dump(), inbox));
  EXPECT_TRUE(wait_for(
      [&] {
        std::lock_guard lock(mu);
        return replies.size() == batch;
      },
      5s));
  std::lock_guard lock(mu);
  return replies;
}

void answer(BrokerClient& admin, const std::vector<std::string>& replies, const std::string& body) {
  for (const auto& reply : replies) ASSERT_TRUE(admin.connection().publish(reply, body));
  ASSERT_TRUE(admin.connection().flush(2s));
}

// Everything the audit could change if it wrote anything: each consumer's config and position.
std::map<std::string, nlohmann::json> broker_state(BrokerClient& admin) {
  std::map<std::string, nlohmann::json> state;
  auto streams = admin.api().stream_names();
  EXPECT_TRUE(streams);
  for (const auto& stream : *streams) {
    auto names = admin.api().consumer_names(stream);
    EXPECT_TRUE(names);
    state[stream] = admin.api().call("STREAM.INFO." + stream, nullptr)->at("config");
    for (const auto& name : *names) {
      auto info = admin.api().call("CONSUMER.INFO." + stream + "." + name, nullptr);
      EXPECT_TRUE(info) << stream << "/" << name;
      if (!info) continue;
      state[stream + "/" + name] = {{"config", info->at("config")},
                                    {"delivered", info->at("delivered")},
                                    {"ack_floor", info->at("ack_floor")},
                                    {"num_pending", info->at("num_pending")}};
    }
  }
  return state;
}

using Triple = std::tuple<std::string, std::string, std::string>;  // stream, consumer, finding

std::set<Triple> findings_of(const nlohmann::json& report) {
  std::set<Triple> out;
  for (const auto& f : report["findings"])
    out.insert(
        {f["stream"].is_null() ? "" : f["stream"].get<std::string>(), f["consumer"], f["finding"]});
  return out;
}

// Every consumer finding, each on a stream of its own, plus a caught-up consumer and a migrated
// consumer still bound by an older release, which must not be reported.
void set_up_every_consumer_finding(BrokerClient& admin) {
  // unbound-push: a plain push durable nobody subscribes to, with messages waiting.
  admin.create_stream("PUSH", {"push.>"});
  create_consumer(admin, "PUSH", push_config("legacy-push", "push.jobs"));
  admin.publish_many("push.jobs", 3);

  // idle-pull: work waiting, nobody pulling.
  admin.create_stream("IDLE", {"idle.>"});
  create_consumer(admin, "IDLE", pull_config("idle-worker", "idle.jobs"));
  admin.publish_many("idle.jobs", 3);

  // stalled: as many unacked messages as max_ack_pending allows, held without acks.
  admin.create_stream("STALL", {"stall.>"});
  auto stuck = pull_config("stuck-worker", "stall.jobs");
  stuck["max_ack_pending"] = 2;
  stuck["ack_wait"] = 60'000'000'000LL;
  create_consumer(admin, "STALL", stuck);
  admin.publish_many("stall.jobs", 5);
  EXPECT_EQ(fetch(admin, "STALL", "stuck-worker", 2).size(), 2u);

  // redelivery-storm: every message refused once and delivered again.
  admin.create_stream("STORM", {"storm.>"});
  auto flaky = pull_config("flaky-worker", "storm.jobs");
  flaky["ack_wait"] = 60'000'000'000LL;
  create_consumer(admin, "STORM", flaky);
  admin.publish_many("storm.jobs", 12);
  answer(admin, fetch(admin, "STORM", "flaky-worker", 12), "-NAK");
  EXPECT_EQ(fetch(admin, "STORM", "flaky-worker", 12).size(), 12u);

  // predecessor-left: "orders" was migrated to a pull successor and nobody is bound to it;
  // "invoices" was migrated too, but an older release still subscribes to it.
  admin.create_stream("MIG", {"mig.>"});
  for (const std::string name : {"orders", "invoices"}) {
    const std::string filter = "mig." + name;
    create_consumer(admin, "MIG", push_config(name, filter));
    create_consumer(
        admin, "MIG",
        pull_config(fleet::successor_name(name, "MIG", {filter}, WorkShape::pull), filter));
  }

  // Healthy: every message handled and acked.
  admin.create_stream("OK", {"ok.>"});
  create_consumer(admin, "OK", pull_config("ok-worker", "ok.jobs"));
  admin.publish_many("ok.jobs", 3);
  answer(admin, fetch(admin, "OK", "ok-worker", 3), "+ACK");
  EXPECT_TRUE(wait_for([&] { return admin.consumer("OK", "ok-worker").num_ack_pending == 0; }, 5s));
}

TEST(Audit, ReportsEachFindingFromARealBrokerAndChangesNothing) {
  NatsServer server;
  BrokerClient admin(server.url());
  set_up_every_consumer_finding(admin);
  auto still_bound = admin.connection().subscribe("deliver.invoices", "", [](auto&&) {});
  ASSERT_TRUE(still_bound);
  ASSERT_TRUE(wait_for([&] { return admin.consumer("MIG", "invoices").push_bound; }, 5s));
  const auto before = broker_state(admin);

  const std::string server_flag = "--server " + server.url() + " --interval 500ms";
  auto json = run_audit(server_flag + " --json");
  ASSERT_EQ(json.code, 1) << explain(json);
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["servers"], nlohmann::json::array({server.url()}));
  EXPECT_EQ(report["streams"], 6);
  EXPECT_EQ(report["consumers"], 9);
  const std::set<Triple> expected = {
      {"PUSH", "legacy-push", "unbound-push"}, {"IDLE", "idle-worker", "idle-pull"},
      {"STALL", "stuck-worker", "stalled"},    {"STORM", "flaky-worker", "redelivery-storm"},
      {"MIG", "orders", "predecessor-left"},
  };
  EXPECT_EQ(findings_of(report), expected) << json.out;
  for (const auto& f : report["findings"]) {
    EXPECT_FALSE(f["evidence"].get<std::string>().empty()) << f;
    EXPECT_FALSE(f["action"].get<std::string>().empty()) << f;
  }

  auto table = run_audit(server_flag);
  EXPECT_EQ(table.code, 1) << explain(table);
  EXPECT_NE(table.out.find("STREAM"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("5 findings in 6 streams, 9 consumers"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("nats consumer rm MIG orders"), std::string::npos) << table.out;
  std::printf("%s", table.out.c_str());

  EXPECT_EQ(broker_state(admin), before) << "the audit changed the broker";
}

TEST(Audit, CaughtUpBrokerHasNoFindings) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  create_consumer(admin, "JOBS", pull_config("jobs-worker", "jobs.run"));
  admin.publish_many("jobs.run", 5);
  answer(admin, fetch(admin, "JOBS", "jobs-worker", 5), "+ACK");
  ASSERT_TRUE(
      wait_for([&] { return admin.consumer("JOBS", "jobs-worker").num_ack_pending == 0; }, 5s));

  auto o = run_audit("--server " + server.url() + " --interval 500ms");
  EXPECT_EQ(o.code, 0) << explain(o);
  EXPECT_EQ(o.out, "no findings in 1 stream, 1 consumer\n");
}

TEST(Audit, ConfigWorkIsCheckedAgainstTheBroker) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("WORK", {"work.>"});
  admin.create_stream("OTHER", {"other.>"});
  auto spec = [](const std::string& name, const std::string& subject) {
    WorkSpec s;
    s.name = name;
    s.subject = subject;
    return s;
  };
  // As natsfleet run creates them: "misplaced" (its config names the wrong stream) and "fine".
  create_consumer(admin, "WORK",
                  nats::to_json(fleet::desired_consumer_config(spec("misplaced", "work.c"))));
  create_consumer(admin, "WORK",
                  nats::to_json(fleet::desired_consumer_config(spec("fine", "work.e"))));
  // "legacy": a plain push durable where the config wants a pull consumer.
  create_consumer(admin, "WORK", push_config("legacy", "work.b"));
  // "done": migrated to its successor; the old push durable is left over, unbound.
  create_consumer(admin, "WORK", push_config("done", "work.d"));
  auto successor = fleet::desired_consumer_config(spec("done", "work.d"));
  successor.durable_name = fleet::successor_name("done", "WORK", {"work.d"}, WorkShape::pull);
  create_consumer(admin, "WORK", nats::to_json(successor));

  TempDir dir;
  const std::string path = dir.path() + "/svc.toml";
  auto work = [](const std::string& name, const std::string& subject,
                 const std::string& extra = "") {
    return "[[work]]\nname = \"" + name + "\"\nsubject = \"" + subject + "\"\n" + extra +
           "sink = { type = \"file\", path = \"out.jsonl\" }\n";
  };
  // The servers come from the config: no --server.
  std::ofstream(path) << "name = \"svc\"\nservers = [\"" << server.url() << "\"]\n"
                      << work("absent", "work.a") << work("legacy", "work.b")
                      << work("misplaced", "work.c", "stream = \"OTHER\"\n")
                      << work("nowhere", "nowhere.x") << work("done", "work.d")
                      << work("fine", "work.e");

  auto o = run_audit("--config " + path + " --interval 500ms --json");
  ASSERT_EQ(o.code, 1) << explain(o);
  const auto report = nlohmann::json::parse(o.out);
  const std::set<Triple> expected = {
      {"WORK", "absent", "work-missing"},         {"WORK", "legacy", "work-wrong-shape"},
      {"WORK", "misplaced", "work-wrong-stream"}, {"", "nowhere", "work-no-stream"},
      {"WORK", "done", "predecessor-left"},
  };
  EXPECT_EQ(findings_of(report), expected) << o.out;
  for (const auto& f : report["findings"]) {
    if (f["finding"] == "work-wrong-shape") {
      EXPECT_NE(f["evidence"].get<std::string>().find(path + ":7:"), std::string::npos) << f;
      EXPECT_NE(f["evidence"].get<std::string>().find("plain push durable"), std::string::npos)
          << f;
    }
  }
}

TEST(Audit, BadConfigExitsTwoNamingFileLineAndKey) {
  TempDir dir;
  const std::string path = dir.path() + "/bad.toml";
  std::ofstream(path) << "name = \"svc\"\nbogus = 1\n";
  auto o = run_audit("--config " + path);
  EXPECT_EQ(o.code, 2) << explain(o);
  EXPECT_NE(o.err.find(path + ":2: bogus"), std::string::npos) << explain(o);
  EXPECT_EQ(o.out, "");
}

TEST(Audit, UnreachableBrokerExitsTwoQuicklyNamingTheUrlAndWhy) {
  const std::string url = "nats://127.0.0.1:" + std::to_string(free_loopback_port());
  const auto start = std::chrono::steady_clock::now();
  auto o = run_audit("--server " + url);
  EXPECT_EQ(o.code, 2) << explain(o);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(o.err.find("cannot reach " + url + ": Connection refused"), std::string::npos)
      << explain(o);
  EXPECT_EQ(o.out, "");
}

// True once the audit's connection has sent requests: it is connected and reading.
bool audit_is_reading(const NatsServer& server) {
  int status = 0;
  auto connz =
      nlohmann::json::parse(http_get(server.monitor_port(), "/connz", &status), nullptr, false);
  if (status != 200 || !connz.is_object()) return false;
  for (const auto& c : connz.value("connections", nlohmann::json::array()))
    if (c.value("name", "") == "natsfleet-audit" && c.value("in_msgs", 0) > 0) return true;
  return false;
}

TEST(Audit, BrokerThatStopsAnsweringMidwayExitsTwoWithinTheTimeout) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("JOBS", {"jobs.>"});
  Outcome o;
  const auto start = std::chrono::steady_clock::now();
  std::thread audit(
      [&] { o = run_audit("--server " + server.url() + " --interval 2s --timeout 4s"); });
  const bool reading = wait_for([&] { return audit_is_reading(server); }, 5s);
  server.pause();  // between the samples: the second one gets no answer
  audit.join();
  const auto took = std::chrono::steady_clock::now() - start;
  server.resume();
  ASSERT_TRUE(reading);
  EXPECT_EQ(o.code, 2) << explain(o);
  EXPECT_NE(o.err.find("the broker at " + server.url() + " stopped answering midway"),
            std::string::npos)
      << explain(o);
  EXPECT_LT(took, 6s);
}

}  // namespace
}  // namespace natsfleet::testing
