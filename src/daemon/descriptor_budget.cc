#include "daemon/descriptor_budget.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <variant>

namespace natsfleet::daemon {

namespace {

constexpr std::uint64_t kUnlimited = std::uint64_t{1} << 20;
constexpr std::uint64_t kEmbeddedBroker = 8;  // the child's pipes
constexpr std::uint64_t kFileSink = 2;        // the file, and its reopen after a rotation
constexpr std::uint64_t kWorkerSink = 8;      // three pipes (both ends while spawning), a spare
constexpr std::uint64_t kGatewayOwn = 3;      // listener, its io_context's epoll and eventfd
constexpr std::size_t kMinHttpConnections = 16;
constexpr std::size_t kMaxHttpConnections = 1024;

std::uint64_t sink_needs(const sinks::SinkConfig& sink, int concurrency) {
  if (std::holds_alternative<sinks::FileSinkOptions>(sink)) return kFileSink;
  if (std::holds_alternative<sinks::WorkerSinkOptions>(sink)) return kWorkerSink;
  // One connection per delivery in flight, and one being replaced.
  if (std::holds_alternative<sinks::HttpSinkOptions>(sink))
    return 2 * static_cast<std::uint64_t>(std::max(concurrency, 1)) + 2;
  return 0;
}

// The websocket gateways, each with the max_sessions configured (computed: none configured).
std::vector<DescriptorBudget::Gateway> gateways_of(const config::DaemonConfig& config) {
  std::vector<DescriptorBudget::Gateway> gateways;
  for (const auto& bc : config.broadcast) {
    const auto* websocket = std::get_if<sinks::WebSocketSinkOptions>(&bc.sink);
    if (!websocket) continue;
    DescriptorBudget::Gateway g;
    g.subscription = bc.spec.name;
    g.computed = websocket->max_sessions == 0;
    if (!g.computed) g.max_sessions = websocket->max_sessions;
    gateways.push_back(g);
  }
  return gateways;
}

// Shares `left` descriptors among `gateways`: HTTP connections for each, then sessions, the
// configured ones first (marked over_limit past what is left), the rest in equal parts to the
// computed ones (`starved` when that is none). Returns the HTTP connections per gateway.
std::size_t share(std::vector<DescriptorBudget::Gateway>& gateways, std::uint64_t left,
                  bool& starved) {
  std::size_t computed = 0;
  std::uint64_t explicit_sessions = 0;
  for (const auto& g : gateways) {
    if (g.computed)
      ++computed;
    else
      explicit_sessions += g.max_sessions;
  }
  const std::uint64_t n = gateways.size();
  // An eighth of what is left goes to connections not upgraded (yet): pages and upgrades being
  // read. Idle ones are evicted when a new one needs room, so this need not be large.
  const std::size_t http = static_cast<std::size_t>(
      std::clamp<std::uint64_t>(left / (8 * n), kMinHttpConnections, kMaxHttpConnections));
  const std::uint64_t gateway_own = n * (kGatewayOwn + http);
  const std::uint64_t for_sessions = left > gateway_own ? left - gateway_own : 0;
  const std::uint64_t for_computed =
      for_sessions > explicit_sessions
          ? (for_sessions - explicit_sessions) / std::max<std::size_t>(computed, 1)
          : 0;
  std::uint64_t explicit_left = for_sessions;
  for (auto& g : gateways) {
    g.http_connections = http;
    if (g.computed) {
      g.max_sessions = static_cast<std::size_t>(for_computed);
      if (g.max_sessions == 0) starved = true;
    } else {
      g.over_limit = g.max_sessions > explicit_left;
      explicit_left = explicit_left > g.max_sessions ? explicit_left - g.max_sessions : 0;
    }
  }
  return http;
}

}  // namespace

std::uint64_t descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kUnlimited;
  return static_cast<std::uint64_t>(limit.rlim_cur);
}

DescriptorBudget plan_descriptors(std::uint64_t limit, const config::DaemonConfig& config,
                                  std::size_t health_max_connections, bool embedded_broker) {
  DescriptorBudget budget;
  budget.limit = limit;
  std::uint64_t sinks = 0;
  for (const auto& work : config.work) sinks += sink_needs(work.sink, work.spec.flow.concurrency);
  for (const auto& bc : config.broadcast) sinks += sink_needs(bc.sink, bc.spec.concurrency);
  const std::uint64_t health = health_max_connections + 1;
  const std::uint64_t embedded = embedded_broker ? kEmbeddedBroker : 0;
  // Room for what nobody counted (a static file being read, a burst of closes not yet done).
  const std::uint64_t spare = std::max<std::uint64_t>(32, limit / 16);
  budget.reserved = kBaseDescriptors + embedded + health + sinks + spare;

  budget.gateways = gateways_of(config);
  if (budget.gateways.empty()) return budget;
  const std::uint64_t left = limit > budget.reserved ? limit - budget.reserved : 0;
  const std::size_t http = share(budget.gateways, left, budget.starved);

  std::string sessions;
  for (const auto& g : budget.gateways) {
    if (!sessions.empty()) sessions += ", ";
    sessions += fmt::format(
        "{} {}{}", g.subscription, g.max_sessions,
        g.computed
            ? ""
            : (g.over_limit ? " (as configured, MORE than the limit leaves)" : " (as configured)"));
  }
  budget.explanation = fmt::format(
      "websocket max_sessions: {}. The file-descriptor limit (RLIMIT_NOFILE) is {}; {} are kept "
      "for the broker connection and its reconnects, stdio and io threads ({}), the health "
      "endpoints ({}), sinks ({}){} and a spare ({}); {} per gateway for HTTP connections not "
      "upgraded and its listener; each session takes one. Sessions past max_sessions are "
      "answered 503. Raise the limit (ulimit -n, systemd LimitNOFILE=) for more",
      sessions, limit, budget.reserved, kBaseDescriptors, health, sinks,
      embedded ? fmt::format(", the embedded broker ({})", embedded) : std::string(), spare,
      http + kGatewayOwn);
  return budget;
}

}  // namespace natsfleet::daemon
