// How many WebSocket sessions a daemon can hold without starving what it needs to stay correct:
// every session is a file descriptor, and so are the broker connection (and the new socket each
// reconnect opens), the health endpoints, files, workers' pipes and http sinks' connections. A
// session past the limit must be refused at the door (503), never be the reason a reconnect or a
// worker restart fails with EMFILE.
//
//   auto budget = plan_descriptors(descriptor_limit(), config, health_max_connections);
//   log.info("{}", budget.explanation);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/daemon_config.h"

namespace natsfleet::daemon {

// Kept for what every daemon opens besides its sinks: stdio, log files, the io threads' epoll and
// eventfds, the broker connection and a reconnect's new socket, DNS lookups, config and secret
// reads.
inline constexpr std::uint64_t kBaseDescriptors = 64;

struct DescriptorBudget {
  std::uint64_t limit = 0;     // RLIMIT_NOFILE (soft) when the daemon started
  std::uint64_t reserved = 0;  // for everything but the gateways (base, health, sinks, spare)
  // Per websocket sink, in [[broadcast]] order: HTTP connections (pages, upgrades being read) and
  // sessions. A max_sessions set in the config is kept as written.
  struct Gateway {
    std::string subscription;
    std::size_t http_connections = 0;
    std::size_t max_sessions = 0;
    bool computed = false;    // from the limit (not set in the config)
    bool over_limit = false;  // set in the config beyond what the limit leaves
  };
  std::vector<Gateway> gateways;
  // One line for the log: the computed values and why.
  std::string explanation;
  // Too few descriptors left for sessions at all (the limit is tiny): say so loudly.
  bool starved = false;
};

// The soft RLIMIT_NOFILE of this process (a large number when unlimited).
std::uint64_t descriptor_limit();

// Pure: the budget for `config` under `limit` descriptors; `embedded_broker` when the daemon runs
// its own nats-server (the config's servers may be replaced by --server).
DescriptorBudget plan_descriptors(std::uint64_t limit, const config::DaemonConfig& config,
                                  std::size_t health_max_connections, bool embedded_broker);

}  // namespace natsfleet::daemon
