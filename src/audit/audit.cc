#include "audit/audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "audit/broker_snapshot.h"
#include "audit/unreachable_reason.h"
#include "config/duration.h"
#include "nats/connection.h"

namespace natsfleet::audit {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// nats.c's connect timeout per attempt; the audit's own timeout bounds it further.
constexpr milliseconds kConnectTimeout{2000};

// What the connection's callbacks (on nats.c's threads) tell the waiting audit.
struct ConnectOutcome {
  std::mutex mu;
  std::condition_variable cv;
  bool connected = false;
  bool closed = false;
};

nats::ConnectOptions connect_options(const AuditOptions& options) {
  nats::ConnectOptions c;
  c.servers = options.servers;
  c.name = "natsfleet-audit";
  c.credentials_file = options.credentials_file;
  c.tls_ca = options.tls.ca;
  c.tls_cert = options.tls.cert;
  c.tls_key = options.tls.key;
  c.max_reconnect = 0;  // an audit reports an unreachable broker; it never waits one out
  c.connect_timeout = std::min(kConnectTimeout, options.timeout);
  return c;
}

// "nats://a:4222: Connection refused; nats://b:4222: ...": nats.c only says that no server was
// available, so each server is probed for the reason, in what is left of the audit's time.
std::string unreachable(const AuditOptions& options, steady_clock::time_point deadline) {
  std::vector<std::string> reasons;
  for (const auto& server : options.servers) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now());
    reasons.push_back(
        fmt::format("{}: {}", server,
                    left > milliseconds(0)
                        ? unreachable_reason(server, std::min(left, kConnectTimeout))
                        : "no connection within " + config::format_duration(options.timeout)));
  }
  return fmt::format("{}", fmt::join(reasons, "; "));
}

Result<std::unique_ptr<nats::Connection>> connect(const AuditOptions& options,
                                                  const std::string& servers,
                                                  steady_clock::time_point deadline) {
  auto outcome = std::make_shared<ConnectOutcome>();
  nats::ConnectionEvents events;
  events.connected = [outcome] {
    std::lock_guard lock(outcome->mu);
    outcome->connected = true;
    outcome->cv.notify_all();
  };
  events.closed = [outcome](const std::string&) {
    std::lock_guard lock(outcome->mu);
    outcome->closed = true;
    outcome->cv.notify_all();
  };
  auto connection = nats::Connection::open(connect_options(options), std::move(events));
  if (!connection)
    return Error{connection.error().code,
                 fmt::format("cannot connect to {}: {}", servers, connection.error().describe())};

  {
    std::unique_lock lock(outcome->mu);
    outcome->cv.wait_until(lock, deadline, [&] { return outcome->connected || outcome->closed; });
    if (outcome->connected) return connection;
  }
  return Error{make_error_code(Errc::not_connected),
               "cannot reach " + unreachable(options, deadline)};
}

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
        servers, error.describe(), config::format_duration(timeout));
  else if (error.code == Errc::not_connected)
    text = fmt::format("lost the broker at {} midway through the audit: {}", servers,
                       error.describe());
  else
    text = fmt::format("the broker at {} refused a read: {}", servers, error.describe());
  return Error{error.code, text};
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
                    config::format_duration(options.interval),
                    config::format_duration(options.timeout)));
  const auto deadline = steady_clock::now() + options.timeout;
  const std::string servers = fmt::format("{}", fmt::join(options.servers, ", "));

  auto connection = connect(options, servers, deadline);
  if (!connection) return connection.error();
  auto first = read_snapshot(**connection, deadline);
  if (!first) return midway(first.error(), servers, options.timeout);
  std::this_thread::sleep_for(options.interval);
  auto second = read_snapshot(**connection, deadline);
  if (!second) return midway(second.error(), servers, options.timeout);

  AuditReport report;
  report.servers = options.servers;
  report.streams = second->streams.size();
  report.consumers = second->consumers.size();
  report.findings = consumer_findings(*first, *second, options.interval, options.storm);
  if (options.config) {
    auto work = work_findings(*options.config, *second);
    report.findings.insert(report.findings.end(), work.begin(), work.end());
  }
  return report;
}

}  // namespace natsfleet::audit
