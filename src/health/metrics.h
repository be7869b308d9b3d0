// /metrics: the fleet's health and the daemon's own counters in the Prometheus text exposition
// format 0.0.4. Every family carries HELP and TYPE, every series a `service` label, and
// per-subscription series add `subscription` and `kind` (work | broadcast).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "health/daemon_metrics.h"
#include "natsfleet/health.h"

namespace natsfleet::health {

// The media type a scraper expects for render_metrics() output.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// Families (all prefixed natsfleet_): up, ready, connected, reconnects_total, messages_total
// {outcome}, redeliveries_total, handler_errors_total, recoveries_total, kept_alive_total,
// partitions, partitions_owned, partition_leases_taken_total, partition_leases_lost_total,
// partition_rewinds_total (ordered work only),
// subscription_state {state} (all six states, 1 for the current one), consumer_pending,
// consumer_ack_pending, consumer_ack_floor (work subscriptions, and broadcasts bound to a
// JetStream consumer),
// handler_latency_seconds (histogram), sink_results_total{outcome}, published_total,
// sink_errors_total (registered DaemonMetrics subscriptions); http_connections{server},
// http_connections_cut_total{server,reason} (idle | slow | evicted | busy), websocket_sessions,
// websocket_max_sessions, websocket_attached_total, websocket_refused_total{reason},
// websocket_dropped_total{reason} (slow | idle) (servers); build_info{version}; and the standard
// process_* families (cpu_seconds_total, resident_memory_bytes, virtual_memory_bytes,
// start_time_seconds, open_fds, max_fds) read from /proc.
// One HTTP server's connections: the health endpoints ("health") or a websocket gateway (named
// after its subscription).
struct HttpServerStats {
  std::string server;
  std::size_t connections = 0;     // open now (WebSocket sessions not included)
  std::uint64_t cut_idle = 0;      // nothing received within the header deadline
  std::uint64_t cut_slow = 0;      // headers still incomplete at the header deadline
  std::uint64_t evicted = 0;       // waited longest for a request when a new connection needed room
  std::uint64_t refused_busy = 0;  // closed on accept: every connection busy answering
};

// A websocket gateway's sessions.
struct GatewaySessionStats {
  std::string server;
  std::size_t sessions = 0;
  std::size_t max_sessions = 0;
  std::uint64_t attached = 0;
  std::vector<std::pair<std::string, std::uint64_t>> refused;  // reason -> upgrades refused
  std::uint64_t dropped_slow = 0;
  std::uint64_t closed_idle = 0;
};

struct ServerMetrics {
  std::vector<HttpServerStats> http;
  std::vector<GatewaySessionStats> gateways;
};

std::string render_metrics(const FleetHealth& health, const DaemonMetrics& metrics,
                           const std::string& service, const ServerMetrics& servers = {});

// Escapes a label value for the text format: backslash, double quote and line feed.
std::string escape_label_value(std::string_view value);

}  // namespace natsfleet::health
