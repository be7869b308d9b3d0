#include "audit/tool_connection.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "base/duration.h"
#include "nats/unreachable_reason.h"
#include "natsfleet/redact.h"

namespace natsfleet::audit {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// nats.c's connect timeout per attempt; the command's own timeout bounds it further.
constexpr milliseconds kConnectTimeout{2000};

// What the connection's callbacks (on nats.c's threads) tell the waiting command.
struct ConnectOutcome {
  std::mutex mu;
  std::condition_variable cv;
  bool connected = false;
  bool closed = false;
};

nats::ConnectOptions connect_options(const ToolConnectOptions& options) {
  nats::ConnectOptions c;
  c.servers = options.servers;
  c.name = options.name;
  c.credentials_file = options.credentials_file;
  c.auth = options.auth;
  c.tls_ca = options.tls.ca;
  c.tls_cert = options.tls.cert;
  c.tls_key = options.tls.key;
  c.max_reconnect = 0;  // a tool reports an unreachable broker; it never waits one out
  c.connect_timeout = std::min(kConnectTimeout, options.timeout);
  return c;
}

// "nats://a:4222: Connection refused; nats://b:4222: ...": nats.c only says that no server was
// available, so each server is probed for the reason, in what is left of the command's time.
std::string unreachable(const ToolConnectOptions& options, steady_clock::time_point deadline) {
  std::vector<std::string> reasons;
  for (const auto& server : options.servers) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now());
    reasons.push_back(fmt::format(
        "{}: {}", redact_url(server),
        left > milliseconds(0) ? nats::unreachable_reason(server, std::min(left, kConnectTimeout))
                               : "no connection within " + base::format_duration(options.timeout)));
  }
  return fmt::format("{}", fmt::join(reasons, "; "));
}

}  // namespace

milliseconds time_left(steady_clock::time_point deadline) {
  return std::max(std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now()),
                  milliseconds(1));
}

Result<std::unique_ptr<nats::Connection>> connect_once(const ToolConnectOptions& options,
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
                 fmt::format("cannot connect to {}: {}", redact_urls(options.servers),
                             redact(connection.error().describe()))};

  {
    std::unique_lock lock(outcome->mu);
    outcome->cv.wait_until(lock, deadline, [&] { return outcome->connected || outcome->closed; });
    if (outcome->connected) return connection;
  }
  return Error{make_error_code(Errc::not_connected),
               "cannot reach " + unreachable(options, deadline)};
}

}  // namespace natsfleet::audit
