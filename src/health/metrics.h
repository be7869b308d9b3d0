// /metrics: the fleet's health and the daemon's own counters in the Prometheus text exposition
// format 0.0.4. Every family carries HELP and TYPE, every series a `service` label, and
// per-subscription series add `subscription` and `kind` (work | broadcast).
#pragma once

#include <string>
#include <string_view>

#include "health/daemon_metrics.h"
#include "natsfleet/health.h"

namespace natsfleet::health {

// The media type a scraper expects for render_metrics() output.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// Families (all prefixed natsfleet_): up, ready, connected, reconnects_total, messages_total
// {outcome}, redeliveries_total, handler_errors_total, recoveries_total, subscription_state
// {state} (all six states, 1 for the current one), consumer_pending, consumer_ack_pending,
// consumer_ack_floor (work subscriptions, and broadcasts bound to a JetStream consumer),
// handler_latency_seconds (histogram), sink_results_total{outcome}, published_total,
// sink_errors_total (registered DaemonMetrics subscriptions).
std::string render_metrics(const FleetHealth& health, const DaemonMetrics& metrics,
                           const std::string& service);

// Escapes a label value for the text format: backslash, double quote and line feed.
std::string escape_label_value(std::string_view value);

}  // namespace natsfleet::health
