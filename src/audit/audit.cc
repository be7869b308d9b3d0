#include "audit/audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "audit/broker_snapshot.h"
#include "audit/tool_connection.h"
#include "base/duration.h"
#include "fleet/ordered/partition_plan.h"
#include "fleet/ordered/partition_probe.h"
#include "nats/connection.h"
#include "natsfleet/redact.h"

namespace natsfleet::audit {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr milliseconds kProbeTimeout{2000};  // where the partition mapping sends a probe

// A failed read after the connection was up, in words that say what happened.
Error midway(const Error& error, const std::string& servers, milliseconds timeout) {
  std::string text;
  if (error.code == Errc::no_responders)
    text =
        fmt::format("JetStream is not enabled on {}: nobody answers {}", servers, error.describe());
  else if (error.code == Errc::timeout)
    text = fmt::format(
        "the broker at {} stopped answering midway through the audit ({}); gave up at the {} "
        "timeout",
        servers, error.describe(), base::format_duration(timeout));
  else if (error.code == Errc::not_connected)
    text = fmt::format("lost the broker at {} midway through the audit: {}", servers,
                       error.describe());
  else
    text = fmt::format("the broker at {} refused a read: {}", servers, error.describe());
  return Error{error.code, text};
}

// The dead-letter subjects of the configured works: counted in both samples, since a count that
// rises is still failing.
std::vector<std::string> dead_letter_subjects(const AuditOptions& options) {
  std::vector<std::string> counted;
  if (options.config)
    for (const auto& work : options.config->work)
      if (!work.spec.failure.dead_letter.empty()) counted.push_back(work.spec.failure.dead_letter);
  return counted;
}

// Per-key ordered works whose partition mapping the broker lacks: probed with one message that
// no stream stores (fleet::probe_partition_mapping).
std::vector<Finding> mapping_findings(nats::Connection& connection,
                                      const config::DaemonConfig& config,
                                      steady_clock::time_point deadline) {
  std::vector<Finding> found;
  for (const auto& w : config.work) {
    if (!w.spec.per_key) continue;
    auto plan = fleet::PartitionPlan::of(w.spec);
    if (!plan) continue;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now());
    auto probed = fleet::probe_partition_mapping(
        connection, *plan, std::clamp(left, milliseconds(100), kProbeTimeout));
    if (probed) continue;
    found.push_back({"", w.spec.name, "partition-mapping",
                     fmt::format("{}:{}: {}", config.file, w.line, probed.error().message),
                     fmt::format("add to nats-server's config (the account's mappings, or the top "
                                 "level for the default account) and reload: mappings {{ {} }}",
                                 plan->mapping_line())});
  }
  return found;
}

}  // namespace

std::vector<std::string> audit_servers(const std::vector<std::string>& flags,
                                       const std::vector<std::string>& configured) {
  if (!flags.empty()) return flags;
  if (!configured.empty()) return configured;
  return {kDefaultServer};
}

Result<AuditReport> run_audit(const AuditOptions& options) {
  if (options.interval <= milliseconds(0) || options.interval >= options.timeout)
    return Result<AuditReport>(
        Errc::invalid_argument,
        fmt::format("--interval {} must be above zero and below --timeout {}",
                    base::format_duration(options.interval),
                    base::format_duration(options.timeout)));
  const auto deadline = steady_clock::now() + options.timeout;
  const std::string servers = redact_urls(options.servers);

  auto connection = connect_once({.servers = options.servers,
                                  .name = "natsfleet-audit",
                                  .credentials_file = options.credentials_file,
                                  .auth = options.auth,
                                  .tls = options.tls,
                                  .timeout = options.timeout},
                                 deadline);
  if (!connection) return connection.error();
  const std::vector<std::string> counted = dead_letter_subjects(options);
  auto first = read_snapshot(**connection, deadline, counted);
  if (!first) return midway(first.error(), servers, options.timeout);
  std::this_thread::sleep_for(options.interval);
  auto second = read_snapshot(**connection, deadline, counted);
  if (!second) return midway(second.error(), servers, options.timeout);

  AuditReport report;
  for (const auto& server : options.servers) report.servers.push_back(redact_url(server));
  report.streams = second->streams.size();
  report.consumers = second->consumers.size();
  report.findings = consumer_findings(*first, *second, options.interval, options.storm);
  if (options.config) {
    for (auto found : {work_findings(*options.config, *second),
                       dead_letter_findings(*options.config, *first, *second),
                       mapping_findings(**connection, *options.config, deadline)})
      report.findings.insert(report.findings.end(), found.begin(), found.end());
  }
  return report;
}

}  // namespace natsfleet::audit
