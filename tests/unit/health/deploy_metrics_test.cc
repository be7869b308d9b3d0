// The dashboard and the alert rules under deploy/ read only metrics /metrics serves: every
// metric name they use is a family render_metrics() writes for a fleet with a work, a per-key
// ordered work and a broadcast.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "health/metrics.h"
#include "health_fixtures.h"
#include "prometheus_parser.h"

namespace natsfleet::health {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every natsfleet_* and process_* name in the files, as its family (histogram suffixes cut).
std::map<std::string, std::string> names_used(const std::vector<fs::path>& files) {
  std::map<std::string, std::string> used;  // family -> the file that uses it
  static const std::regex name(R"(\b((natsfleet|process)_[a-z_]+)\b)");
  for (const auto& file : files) {
    const std::string text = read(file);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name);
         it != std::sregex_iterator(); ++it) {
      std::string family = (*it)[1];
      for (const char* suffix : {"_bucket", "_sum", "_count"})
        if (family.ends_with(suffix) && !family.ends_with("_total"))
          family = family.substr(0, family.size() - std::string(suffix).size());
      used.emplace(family, fs::relative(file, NATSFLEET_SOURCE_DIR).string());
    }
  }
  return used;
}

TEST(DeployFiles, TheDashboardAndAlertRulesUseOnlyMetricsThatExist) {
  FleetHealth health = testing::two_subscriptions();
  SubscriptionHealth ordered = testing::busy_work();
  ordered.name = "orders";
  ordered.partitions = 16;
  ordered.partitions_owned = {1, 2};
  health.subscriptions.push_back(ordered);
  DaemonMetrics metrics;
  for (const auto& s : health.subscriptions) metrics.register_subscription(s.name);
  const auto parsed = testing::parse_prometheus(render_metrics(health, metrics, "svc"));

  const fs::path deploy = fs::path(NATSFLEET_SOURCE_DIR) / "deploy";
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(deploy))
    if (entry.path().extension() == ".json" ||
        entry.path().parent_path().filename() == "prometheus")
      files.push_back(entry.path());
  ASSERT_GE(files.size(), 2u) << "a dashboard and a rules file";
  const auto used = names_used(files);
  EXPECT_GE(used.size(), 15u);
  for (const auto& [family, file] : used)
    EXPECT_TRUE(parsed.types.count(family)) << file << " uses " << family << ", not in /metrics";
}

}  // namespace
}  // namespace natsfleet::health
