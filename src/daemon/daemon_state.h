// The running daemon's state, and the steps that start its subscriptions, shared by its start
// (daemon.cc) and its reload (reload.cc).
#pragma once

#include <spdlog/logger.h>

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "broker/embedded_broker.h"
#include "config/daemon_config.h"
#include "daemon/daemon.h"
#include "daemon/descriptor_budget.h"
#include "health/daemon_metrics.h"
#include "health/health_server.h"
#include "natsfleet/fleet.h"
#include "sinks/sink.h"

namespace natsfleet::daemon {

struct Daemon::State {
  config::DaemonConfig config;  // what runs: a reload replaces its subscriptions
  std::vector<std::string> server_overrides;
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<broker::EmbeddedBroker> broker;
  std::vector<std::pair<std::string, std::string>> broker_mappings;  // given at its start
  health::DaemonMetrics metrics;
  // Every sink made, stopped ones too (a handler that overran its stop may still hold one): freed
  // only after the fleet.
  std::vector<std::unique_ptr<sinks::Sink>> sinks;
  mutable std::mutex sinks_mu;  // sink_of: the health thread reads it while a reload changes it
  std::map<std::string, sinks::Sink*> sink_of;  // running subscription's name -> its sink
  std::unique_ptr<Fleet> fleet;
  // Held shared by every handler while it runs: it uses the fleet, the metrics and its sink,
  // which ~Fleet does not wait for. The daemon's exit takes it once the sinks are stopped.
  std::shared_mutex handlers_running;
  std::unique_ptr<health::HealthServer> health_server;
  std::string fatal_reason;
};

// On its own embedded broker the daemon also provides the streams: a file stream per work
// subject that no stream holds yet (on a real broker, streams are the operator's).
bool ensure_streams(const std::string& url, const config::DaemonConfig& cfg, spdlog::logger& log);
// Makes the work's sink and adds the work to the fleet: before start() it starts with the fleet,
// after, at once. An error names the work; the sink it made is stopped again.
Result<void> start_work(Daemon::State& s, const config::WorkConfig& work);
// The same for a broadcast; a websocket sink gets the sessions `budget` leaves it.
Result<void> start_broadcast(Daemon::State& s, const config::BroadcastConfig& bc,
                             const DescriptorBudget& budget);
// Reads the config file again and applies what changed, one subscription at a time; the others
// run on untouched. A config that fails to load changes nothing. A subscription whose new
// definition cannot start runs on as it was.
void reload(Daemon::State& s);

}  // namespace natsfleet::daemon
