#include "health/metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "health_fixtures.h"
#include "prometheus_parser.h"

namespace natsfleet::health {
namespace {

using std::chrono::milliseconds;
using testing::parse_prometheus;
using testing::ParsedMetrics;
using testing::PromLabels;

const std::string kService = "mailer";

PromLabels sub_labels(const std::string& name, const std::string& kind, PromLabels extra = {}) {
  PromLabels labels = {{"service", kService}, {"subscription", name}, {"kind", kind}};
  labels.insert(extra.begin(), extra.end());
  return labels;
}

struct Rendered {
  FleetHealth health = testing::two_subscriptions();
  DaemonMetrics metrics;
  std::string text;
  ParsedMetrics parsed;

  Rendered() {
    SubscriptionMetrics& relay = metrics.register_subscription("mail-relay");
    metrics.register_subscription("status");
    relay.observe(milliseconds(3), Disposition::Kind::ack);
    relay.observe(milliseconds(40), Disposition::Kind::ack);
    relay.observe(milliseconds(30000), Disposition::Kind::nak);
    relay.observe(milliseconds(300), Disposition::Kind::term);
    relay.count_published(9);
    relay.count_sink_error();
    relay.count_sink_error();
    text = render_metrics(health, metrics, kService);
    parsed = parse_prometheus(text);
  }
};

TEST(RenderMetrics, EveryFamilyHasHelpTypeAndThePrefix) {
  Rendered r;
  const std::map<std::string, std::string> expected = {
      {"natsfleet_up", "gauge"},
      {"natsfleet_ready", "gauge"},
      {"natsfleet_connected", "gauge"},
      {"natsfleet_reconnects_total", "counter"},
      {"natsfleet_messages_total", "counter"},
      {"natsfleet_redeliveries_total", "counter"},
      {"natsfleet_handler_errors_total", "counter"},
      {"natsfleet_recoveries_total", "counter"},
      {"natsfleet_retries_total", "counter"},
      {"natsfleet_dead_lettered_total", "counter"},
      {"natsfleet_kept_alive_total", "counter"},
      {"natsfleet_dropped_total", "counter"},
      {"natsfleet_sink_down", "gauge"},
      {"natsfleet_held_messages", "gauge"},
      {"natsfleet_subscription_state", "gauge"},
      {"natsfleet_consumer_pending", "gauge"},
      {"natsfleet_consumer_ack_pending", "gauge"},
      {"natsfleet_consumer_ack_floor", "gauge"},
      {"natsfleet_handler_latency_seconds", "histogram"},
      {"natsfleet_sink_results_total", "counter"},
      {"natsfleet_published_total", "counter"},
      {"natsfleet_sink_errors_total", "counter"},
      {"natsfleet_build_info", "gauge"},
      {"process_cpu_seconds_total", "counter"},
      {"process_resident_memory_bytes", "gauge"},
      {"process_virtual_memory_bytes", "gauge"},
      {"process_start_time_seconds", "gauge"},
      {"process_open_fds", "gauge"},
      {"process_max_fds", "gauge"},
  };
  EXPECT_EQ(r.parsed.types, expected);
  for (const auto& [family, type] : r.parsed.types) {
    ASSERT_TRUE(r.parsed.help.count(family)) << family;
    EXPECT_FALSE(r.parsed.help.at(family).empty()) << family;
  }
  for (const auto& s : r.parsed.samples) {
    // The process_* families keep the names every Prometheus client gives them.
    EXPECT_TRUE(s.name.rfind("natsfleet_", 0) == 0 || s.name.rfind("process_", 0) == 0) << s.name;
    EXPECT_EQ(s.labels.at("service"), kService) << s.name;
  }
}

TEST(RenderMetrics, BuildInfoAndThisProcess) {
  Rendered r;
  const PromLabels service = {{"service", kService}};
  EXPECT_EQ(r.parsed.value("natsfleet_build_info",
                           {{"service", kService}, {"version", NATSFLEET_VERSION}}),
            1);
  EXPECT_GT(r.parsed.value("process_resident_memory_bytes", service), 1 << 20);
  EXPECT_GE(r.parsed.value("process_open_fds", service), 3) << "stdin, stdout and stderr at least";
  EXPECT_GT(r.parsed.value("process_max_fds", service),
            r.parsed.value("process_open_fds", service));
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(r.parsed.value("process_start_time_seconds", service), now + 1);
  EXPECT_GT(r.parsed.value("process_start_time_seconds", service), now - 3600)
      << "the test started within the hour";
  EXPECT_GE(r.parsed.value("process_cpu_seconds_total", service), 0);
}

TEST(RenderMetrics, FleetGaugesAndReconnects) {
  Rendered r;
  const PromLabels service = {{"service", kService}};
  EXPECT_EQ(r.parsed.value("natsfleet_up", service), 1);
  EXPECT_EQ(r.parsed.value("natsfleet_ready", service), 0);
  EXPECT_EQ(r.parsed.value("natsfleet_connected", service), 1);
  EXPECT_EQ(r.parsed.value("natsfleet_reconnects_total", service), 6);

  FleetHealth fatal = r.health;
  fatal.live = false;
  fatal.connected = false;
  const auto p = parse_prometheus(render_metrics(fatal, r.metrics, kService));
  EXPECT_EQ(p.value("natsfleet_up", service), 0);
  EXPECT_EQ(p.value("natsfleet_connected", service), 0);
}

TEST(RenderMetrics, SubscriptionCountersMatchExactly) {
  Rendered r;
  for (const auto& sub : r.health.subscriptions) {
    const auto& c = sub.counters;
    auto v = [&](const char* name, PromLabels extra = {}) {
      return r.parsed.value(name, sub_labels(sub.name, sub.kind, std::move(extra)));
    };
    EXPECT_EQ(v("natsfleet_messages_total", {{"outcome", "received"}}), c.received);
    EXPECT_EQ(v("natsfleet_messages_total", {{"outcome", "acked"}}), c.acked);
    EXPECT_EQ(v("natsfleet_messages_total", {{"outcome", "naked"}}), c.naked);
    EXPECT_EQ(v("natsfleet_messages_total", {{"outcome", "termed"}}), c.termed);
    EXPECT_EQ(v("natsfleet_redeliveries_total"), c.redelivered);
    EXPECT_EQ(v("natsfleet_handler_errors_total"), c.handler_errors);
    EXPECT_EQ(v("natsfleet_recoveries_total"), c.recoveries);
  }
  EXPECT_EQ(r.parsed.all("natsfleet_messages_total").size(), 8u);
}

TEST(RenderMetrics, StateGaugeHasAllSixStatesWithOneSet) {
  Rendered r;
  const std::set<std::string> states = {"binding", "bound", "recovering",
                                        "stalled", "fatal", "stopped"};
  for (const auto& sub : r.health.subscriptions) {
    std::set<std::string> seen;
    double total = 0;
    for (const auto* s : r.parsed.all("natsfleet_subscription_state")) {
      if (s->labels.at("subscription") != sub.name) continue;
      EXPECT_EQ(s->labels.at("kind"), sub.kind);
      seen.insert(s->labels.at("state"));
      total += s->value;
      EXPECT_EQ(s->value, s->labels.at("state") == to_string(sub.state) ? 1 : 0);
    }
    EXPECT_EQ(seen, states) << sub.name;
    EXPECT_EQ(total, 1) << sub.name;
  }
  EXPECT_EQ(r.parsed.value("natsfleet_subscription_state",
                           sub_labels("status", "broadcast", {{"state", "recovering"}})),
            1);
}

TEST(RenderMetrics, ConsumerGaugesOnlyWhereAConsumerExists) {
  Rendered r;
  const auto work = sub_labels("mail-relay", "work");
  EXPECT_EQ(r.parsed.value("natsfleet_consumer_pending", work), 42);
  EXPECT_EQ(r.parsed.value("natsfleet_consumer_ack_pending", work), 7);
  EXPECT_EQ(r.parsed.value("natsfleet_consumer_ack_floor", work), 99991);
  // The core NATS broadcast has no consumer: no figures rather than misleading zeros.
  EXPECT_EQ(r.parsed.find("natsfleet_consumer_pending", sub_labels("status", "broadcast")),
            nullptr);

  FleetHealth js = r.health;
  js.subscriptions[1].consumer = "status-replica-1";
  js.subscriptions[1].consumer_pending = 3;
  const auto p = parse_prometheus(render_metrics(js, r.metrics, kService));
  EXPECT_EQ(p.value("natsfleet_consumer_pending", sub_labels("status", "broadcast")), 3);
}

TEST(RenderMetrics, LatencyHistogramFollowsTheObservations) {
  Rendered r;
  const auto labels = sub_labels("mail-relay", "work");
  auto bucket = [&](const char* le) {
    PromLabels l = labels;
    l["le"] = le;
    return r.parsed.value("natsfleet_handler_latency_seconds_bucket", l);
  };
  // Observed: 3ms, 40ms, 300ms, 30s.
  EXPECT_EQ(bucket("0.001"), 0);
  EXPECT_EQ(bucket("0.005"), 1);
  EXPECT_EQ(bucket("0.025"), 1);
  EXPECT_EQ(bucket("0.05"), 2);
  EXPECT_EQ(bucket("0.25"), 2);
  EXPECT_EQ(bucket("0.5"), 3);
  EXPECT_EQ(bucket("1"), 3);
  EXPECT_EQ(bucket("2.5"), 3);
  EXPECT_EQ(bucket("10"), 3);
  EXPECT_EQ(bucket("+Inf"), 4);
  EXPECT_EQ(r.parsed.value("natsfleet_handler_latency_seconds_count", labels), 4);
  EXPECT_EQ(r.parsed.value("natsfleet_handler_latency_seconds_sum", labels), 30343000000.0 / 1e9);

  std::vector<std::string> les;
  for (const auto* s : r.parsed.all("natsfleet_handler_latency_seconds_bucket"))
    if (s->labels.at("subscription") == "mail-relay") les.push_back(s->labels.at("le"));
  const std::vector<std::string> expected = {"0.001", "0.005", "0.01", "0.025", "0.05",
                                             "0.1",   "0.25",  "0.5",  "1",     "2.5",
                                             "5",     "10",    "+Inf"};
  EXPECT_EQ(les, expected);

  // A registered subscription with nothing observed still exposes a complete, empty histogram.
  const auto quiet = sub_labels("status", "broadcast");
  EXPECT_EQ(r.parsed.value("natsfleet_handler_latency_seconds_count", quiet), 0);
  EXPECT_EQ(r.parsed.value("natsfleet_handler_latency_seconds_sum", quiet), 0);
}

TEST(RenderMetrics, DaemonCounters) {
  Rendered r;
  auto v = [&](const char* name, PromLabels extra = {}) {
    return r.parsed.value(name, sub_labels("mail-relay", "work", std::move(extra)));
  };
  EXPECT_EQ(v("natsfleet_sink_results_total", {{"outcome", "ack"}}), 2);
  EXPECT_EQ(v("natsfleet_sink_results_total", {{"outcome", "nak"}}), 1);
  EXPECT_EQ(v("natsfleet_sink_results_total", {{"outcome", "term"}}), 1);
  EXPECT_EQ(v("natsfleet_published_total"), 9);
  EXPECT_EQ(v("natsfleet_sink_errors_total"), 2);
  EXPECT_EQ(r.parsed.value("natsfleet_published_total", sub_labels("status", "broadcast")), 0);
}

TEST(RenderMetrics, EscapesLabelValues) {
  FleetHealth h;
  SubscriptionHealth s = testing::busy_work();
  s.name = "we\\ird \"name\"\nsecond line";
  h.subscriptions = {s};
  DaemonMetrics m;
  m.register_subscription(s.name);
  const std::string service = "svc\\\"\n";
  const std::string text = render_metrics(h, m, service);
  EXPECT_NE(text.find("subscription=\"we\\\\ird \\\"name\\\"\\nsecond line\""), std::string::npos)
      << text;
  EXPECT_NE(text.find("service=\"svc\\\\\\\"\\n\""), std::string::npos);

  const auto p = parse_prometheus(text);
  PromLabels labels = {{"service", service}, {"subscription", s.name}, {"kind", "work"}};
  EXPECT_EQ(p.value("natsfleet_redeliveries_total", labels), 13);
  EXPECT_EQ(p.value("natsfleet_published_total", labels), 0);
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

TEST(RenderMetrics, NoSubscriptionsStillParses) {
  DaemonMetrics m;
  const auto p = parse_prometheus(render_metrics(FleetHealth{}, m, kService));
  EXPECT_EQ(p.value("natsfleet_up", {{"service", kService}}), 1);
  EXPECT_EQ(p.value("natsfleet_ready", {{"service", kService}}), 0);
  EXPECT_TRUE(p.all("natsfleet_messages_total").empty());
}

TEST(RenderMetrics, UnknownSubscriptionHasNoKindLabel) {
  FleetHealth h;
  DaemonMetrics m;
  m.register_subscription("orphan");
  const auto p = parse_prometheus(render_metrics(h, m, kService));
  EXPECT_EQ(
      p.value("natsfleet_published_total", {{"service", kService}, {"subscription", "orphan"}}), 0);
}

// The system's Python, where Debian's python3-prometheus-client lives (a pyenv python on PATH
// would not see it).
constexpr const char* kPython = "/usr/bin/python3";

bool have_python_client() {
  const std::string probe = std::string(kPython) + " -c 'import prometheus_client' 2>/dev/null";
  return std::system(probe.c_str()) == 0;
}

// Runs the Prometheus project's Python client parser over `text`; returns its families and
// samples as JSON.
nlohmann::json python_parse(const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string tag = std::to_string(::getpid());
  const auto input = dir / ("natsfleet_metrics_" + tag + ".txt");
  const auto script = dir / ("natsfleet_parse_" + tag + ".py");
  std::ofstream(input, std::ios::binary) << text;
  std::ofstream(script) << "import json, sys\n"
                           "from prometheus_client.parser import text_string_to_metric_families\n"
                           "fams = list(text_string_to_metric_families(open(sys.argv[1]).read()))\n"
                           "print(json.dumps({'families': {f.name: f.type for f in fams},\n"
                           "  'samples': [[s.name, s.labels, s.value] for f in fams for s in "
                           "f.samples]}))\n";
  const std::string command =
      std::string(kPython) + " " + script.string() + " " + input.string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed");
  std::string output;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
  const int status = ::pclose(pipe);
  std::filesystem::remove(input);
  std::filesystem::remove(script);
  if (status != 0) throw std::runtime_error("python parser failed:\n" + output);
  return nlohmann::json::parse(output);
}

void expect_same_samples(const nlohmann::json& python, const ParsedMetrics& ours) {
  ASSERT_EQ(python["samples"].size(), ours.samples.size());
  for (const auto& s : python["samples"]) {
    const auto* mine = ours.find(s[0].get<std::string>(), s[1].get<PromLabels>());
    ASSERT_NE(mine, nullptr) << s.dump();
    EXPECT_EQ(mine->value, s[2].get<double>()) << s.dump();
  }
}

// Cross-checks with the reference parser from the Prometheus project's Python client: it must
// read the same samples, labels and values as the strict parser.
TEST(RenderMetrics, ReferencePythonParserAgrees) {
  if (!have_python_client()) GTEST_SKIP() << "python3-prometheus-client is not installed";
  Rendered r;
  const auto doc = python_parse(r.text);
  // The Python client names counter families without _total; every family is still there.
  EXPECT_EQ(doc["families"].size(), r.parsed.types.size());
  EXPECT_EQ(doc["families"]["natsfleet_handler_latency_seconds"], "histogram");
  EXPECT_EQ(doc["families"]["natsfleet_messages"], "counter");
  EXPECT_EQ(doc["families"]["natsfleet_subscription_state"], "gauge");
  expect_same_samples(doc, r.parsed);
}

TEST(RenderMetrics, ReferencePythonParserReadsEscapedLabels) {
  if (!have_python_client()) GTEST_SKIP() << "python3-prometheus-client is not installed";
  FleetHealth h;
  SubscriptionHealth s = testing::busy_work();
  s.name = "we\\ird \"name\"\nsecond line";
  h.subscriptions = {s};
  DaemonMetrics m;
  m.register_subscription(s.name);
  const std::string text = render_metrics(h, m, "svc\\\"\n");
  const auto doc = python_parse(text);
  expect_same_samples(doc, parse_prometheus(text));
  EXPECT_EQ(doc["samples"][4][1]["subscription"], s.name) << doc["samples"][4].dump();
}

}  // namespace
}  // namespace natsfleet::health

namespace natsfleet::health {
namespace {

TEST(RenderMetrics, PartitionFiguresOnlyForOrderedWork) {
  FleetHealth h = testing::two_subscriptions();
  DaemonMetrics metrics;
  metrics.register_subscription("mail-relay");
  metrics.register_subscription("status");
  const auto plain = parse_prometheus(render_metrics(h, metrics, kService));
  EXPECT_EQ(plain.find("natsfleet_partitions", sub_labels("mail-relay", "work")), nullptr);

  h.subscriptions[0].partitions = 16;
  h.subscriptions[0].partitions_owned = {2, 7, 11};
  h.subscriptions[0].leases_taken = 5;
  h.subscriptions[0].leases_lost = 1;
  h.subscriptions[0].rewinds = 3;
  const auto p = parse_prometheus(render_metrics(h, metrics, kService));
  const auto work = sub_labels("mail-relay", "work");
  EXPECT_EQ(p.value("natsfleet_partitions", work), 16);
  EXPECT_EQ(p.value("natsfleet_partitions_owned", work), 3);
  EXPECT_EQ(p.value("natsfleet_partition_leases_taken_total", work), 5);
  EXPECT_EQ(p.value("natsfleet_partition_leases_lost_total", work), 1);
  EXPECT_EQ(p.value("natsfleet_partition_rewinds_total", work), 3);
  EXPECT_EQ(p.find("natsfleet_partitions", sub_labels("status", "broadcast")), nullptr);
}

}  // namespace
}  // namespace natsfleet::health
