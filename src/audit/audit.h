// `natsfleet audit`: a read-only walk of every stream and consumer on a broker, sampled twice an
// interval apart, judged by the rules in findings.h. Bounded in time: one connection attempt, no
// reconnects, and the whole audit within `timeout`.
//
//   auto report = run_audit({.servers = audit_servers(flags, config.fleet.servers)});
//   if (!report) die(report.error().describe());        // exit 2
//   std::cout << render_table(*report);                   // exit report->findings.empty() ? 0 : 1
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "audit/findings.h"
#include "audit/report.h"
#include "config/daemon_config.h"
#include "natsfleet/error.h"
#include "natsfleet/fleet.h"

namespace natsfleet::audit {

inline constexpr const char* kDefaultServer = "nats://127.0.0.1:4222";

struct AuditOptions {
  std::vector<std::string> servers;
  std::string credentials_file;
  BrokerAuth auth;
  TlsFiles tls;
  std::chrono::milliseconds interval{3000};  // between the two samples
  std::chrono::milliseconds timeout{20000};  // for everything, connecting included
  StormThresholds storm;
  std::optional<config::DaemonConfig> config;  // its [[work]] is checked against the broker
};

// --server flags win, then the config's servers, then kDefaultServer.
std::vector<std::string> audit_servers(const std::vector<std::string>& flags,
                                       const std::vector<std::string>& configured);

// The error names the servers and why: unreachable (and nats.c's reason), JetStream not enabled,
// the broker stopped answering midway, or unusable options (interval not below timeout, TLS files).
Result<AuditReport> run_audit(const AuditOptions& options);

}  // namespace natsfleet::audit
