#include "health/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <utility>
#include <vector>

#include "health/process_stats.h"

namespace natsfleet::health {
namespace {

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

constexpr std::array<SubscriptionState, 6> kAllStates = {
    SubscriptionState::binding, SubscriptionState::bound, SubscriptionState::recovering,
    SubscriptionState::stalled, SubscriptionState::fatal, SubscriptionState::stopped};

// Writes one family at a time: a family's HELP, TYPE and all of its series stay together, which
// the format requires.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void family(std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name,
                   type);
  }

  void sample(std::string_view name, const Labels& labels, uint64_t value) {
    begin(name, labels);
    fmt::format_to(std::back_inserter(out_), " {}\n", value);
  }

  void sample(std::string_view name, const Labels& labels, double value) {
    begin(name, labels);
    // {} is the shortest text that reads back as the same double.
    fmt::format_to(std::back_inserter(out_), " {}\n", value);
  }

 private:
  void begin(std::string_view name, const Labels& labels) {
    out_ += name;
    if (labels.empty()) return;
    out_ += '{';
    bool first = true;
    for (const auto& [key, value] : labels) {
      if (!first) out_ += ',';
      first = false;
      out_ += key;
      out_ += "=\"";
      out_ += escape_label_value(value);
      out_ += '"';
    }
    out_ += '}';
  }

  std::string& out_;
};

Labels subscription_labels(const std::string& service, const SubscriptionHealth& s) {
  return {{"service", service}, {"subscription", s.name}, {"kind", s.kind}};
}

// Consumer figures mean something only where a JetStream consumer exists; a core NATS broadcast
// reporting "0 pending" would read as a healthy backlog.
bool has_consumer(const SubscriptionHealth& s) { return s.kind == "work" || !s.consumer.empty(); }

void render_fleet(Writer& w, const FleetHealth& health, const std::string& service) {
  const Labels base = {{"service", service}};
  w.family("natsfleet_up", "gauge", "1 while the fleet is live, 0 once it reached a fatal state.");
  w.sample("natsfleet_up", base, uint64_t{health.live ? 1u : 0u});
  w.family("natsfleet_ready", "gauge",
           "1 when connected and every subscription is bound, 0 otherwise.");
  w.sample("natsfleet_ready", base, uint64_t{health.ready ? 1u : 0u});
  w.family("natsfleet_connected", "gauge", "1 while the connection to the broker is up.");
  w.sample("natsfleet_connected", base, uint64_t{health.connected ? 1u : 0u});
  w.family("natsfleet_reconnects_total", "counter", "Reconnections to the broker.");
  w.sample("natsfleet_reconnects_total", base, health.reconnects);
}

// How each subscription's deliveries ended, its other counters, and broadcasts dropped.
void render_message_counts(Writer& w, const std::vector<SubscriptionHealth>& subs,
                           const std::string& service) {
  w.family("natsfleet_messages_total", "counter",
           "Deliveries handed to handlers (received) and how they ended (acked, naked, termed).");
  for (const auto& s : subs) {
    const std::pair<std::string_view, uint64_t> outcomes[] = {{"received", s.counters.received},
                                                              {"acked", s.counters.acked},
                                                              {"naked", s.counters.naked},
                                                              {"termed", s.counters.termed}};
    for (const auto& [outcome, value] : outcomes) {
      Labels labels = subscription_labels(service, s);
      labels.emplace_back("outcome", outcome);
      w.sample("natsfleet_messages_total", labels, value);
    }
  }

  struct CounterFamily {
    std::string_view name;
    std::string_view help;
    uint64_t SubscriptionCounters::*field;
  };
  const CounterFamily counters[] = {
      {"natsfleet_redeliveries_total", "Deliveries with a delivered count above 1.",
       &SubscriptionCounters::redelivered},
      {"natsfleet_handler_errors_total", "Handlers that threw (the message was nak'd).",
       &SubscriptionCounters::handler_errors},
      {"natsfleet_recoveries_total",
       "Consumers recreated or pulls restarted after missed heartbeats.",
       &SubscriptionCounters::recoveries},
      {"natsfleet_retries_total",
       "Retryable failures (the downstream was unavailable; no delivery was used).",
       &SubscriptionCounters::retried},
      {"natsfleet_dead_lettered_total",
       "Terminated messages stored on the work's dead-letter subject.",
       &SubscriptionCounters::dead_lettered},
      {"natsfleet_kept_alive_total",
       "In-progress acks sent for messages held (waiting or handled) for a third of ack_wait.",
       &SubscriptionCounters::kept_alive},
  };
  for (const auto& family : counters) {
    w.family(family.name, "counter", family.help);
    for (const auto& s : subs)
      w.sample(family.name, subscription_labels(service, s), s.counters.*family.field);
  }

  w.family("natsfleet_dropped_total", "counter",
           "Core broadcast messages dropped unhandled, by reason (queue_full: the bounded queue "
           "was full and an older message gave way).");
  for (const auto& s : subs) {
    Labels labels = subscription_labels(service, s);
    labels.emplace_back("reason", "queue_full");
    w.sample("natsfleet_dropped_total", labels, s.counters.dropped);
  }
}

// Whether each subscription's downstream is down, and what it holds meanwhile.
void render_downstream(Writer& w, const std::vector<SubscriptionHealth>& subs,
                       const std::string& service) {
  w.family("natsfleet_sink_down", "gauge",
           "1 while the subscription's downstream is down: messages are held and retried.");
  for (const auto& s : subs)
    w.sample("natsfleet_sink_down", subscription_labels(service, s),
             uint64_t{s.downstream_down ? 1u : 0u});
  w.family("natsfleet_held_messages", "gauge",
           "Messages held for a retry while the downstream is down.");
  for (const auto& s : subs)
    w.sample("natsfleet_held_messages", subscription_labels(service, s), s.held);
}

// Partitions, leases and rewinds of per-key ordered work (WorkSpec::per_key); nothing when
// there is none.
void render_ordered(Writer& w, const std::vector<SubscriptionHealth>& subs,
                    const std::string& service) {
  if (std::none_of(subs.begin(), subs.end(), [](auto& s) { return s.partitions > 0; })) return;
  struct OrderedFamily {
    std::string_view name;
    std::string_view type;
    std::string_view help;
    double (*value)(const SubscriptionHealth&);
  };
  const OrderedFamily families[] = {
      {"natsfleet_partitions", "gauge", "Partitions of a per-key ordered work.",
       [](const SubscriptionHealth& s) { return static_cast<double>(s.partitions); }},
      {"natsfleet_partitions_owned", "gauge",
       "Partitions this replica owns now (holds their lease and reads them).",
       [](const SubscriptionHealth& s) { return static_cast<double>(s.partitions_owned.size()); }},
      {"natsfleet_partition_leases_taken_total", "counter",
       "Partitions this replica began to own (at start, after a member left, on a handover).",
       [](const SubscriptionHealth& s) { return static_cast<double>(s.leases_taken); }},
      {"natsfleet_partition_leases_lost_total", "counter",
       "Partitions another replica took while this one held them (it had stopped renewing: a "
       "pause or a cut link); this replica stopped them at once.",
       [](const SubscriptionHealth& s) { return static_cast<double>(s.leases_lost); }},
      {"natsfleet_partition_rewinds_total", "counter",
       "Times a partition's reader read again from its checkpoint after a hole in its log (a "
       "lost delivery, a lost consumer, missed heartbeats).",
       [](const SubscriptionHealth& s) { return static_cast<double>(s.rewinds); }},
  };
  for (const auto& family : families) {
    w.family(family.name, family.type, family.help);
    for (const auto& s : subs)
      if (s.partitions > 0) w.sample(family.name, subscription_labels(service, s), family.value(s));
  }
}

// Each subscription's state, and its consumer's counts at the last info poll.
void render_states(Writer& w, const std::vector<SubscriptionHealth>& subs,
                   const std::string& service) {
  w.family("natsfleet_subscription_state", "gauge",
           "1 for the state the subscription is in, 0 for the others.");
  for (const auto& s : subs) {
    for (SubscriptionState state : kAllStates) {
      Labels labels = subscription_labels(service, s);
      labels.emplace_back("state", to_string(state));
      w.sample("natsfleet_subscription_state", labels, uint64_t{state == s.state ? 1u : 0u});
    }
  }

  struct GaugeFamily {
    std::string_view name;
    std::string_view help;
    uint64_t SubscriptionHealth::*field;
  };
  const GaugeFamily gauges[] = {
      {"natsfleet_consumer_pending", "Messages the consumer has not delivered yet (last info).",
       &SubscriptionHealth::consumer_pending},
      {"natsfleet_consumer_ack_pending", "Messages delivered but not acked yet (last info).",
       &SubscriptionHealth::consumer_ack_pending},
      {"natsfleet_consumer_ack_floor",
       "Stream sequence at or below which every message is acked (last info).",
       &SubscriptionHealth::ack_floor},
  };
  for (const auto& family : gauges) {
    w.family(family.name, "gauge", family.help);
    for (const auto& s : subs) {
      if (has_consumer(s)) w.sample(family.name, subscription_labels(service, s), s.*family.field);
    }
  }
}

void render_subscriptions(Writer& w, const FleetHealth& health, const std::string& service) {
  const auto& subs = health.subscriptions;
  render_message_counts(w, subs, service);
  render_downstream(w, subs, service);
  render_ordered(w, subs, service);
  render_states(w, subs, service);
}

void render_daemon(Writer& w, const FleetHealth& health, const DaemonMetrics& metrics,
                   const std::string& service) {
  const auto snapshots = metrics.snapshot();
  std::map<std::string_view, std::string_view> kinds;
  for (const auto& s : health.subscriptions) kinds.emplace(s.name, s.kind);
  auto labels_of = [&](const DaemonMetrics::SubscriptionSnapshot& s) {
    Labels labels = {{"service", service}, {"subscription", s.name}};
    // A subscription the fleet does not report has no known kind; leave the label out rather
    // than guess.
    if (auto it = kinds.find(s.name); it != kinds.end()) labels.emplace_back("kind", it->second);
    return labels;
  };

  w.family("natsfleet_handler_latency_seconds", "histogram",
           "Time the sink took to accept or refuse a message.");
  for (const auto& s : snapshots) {
    const Labels labels = labels_of(s);
    for (std::size_t i = 0; i < LatencyHistogram::kBucketCount; ++i) {
      const std::string le = i < LatencyHistogram::kUpperBoundsSeconds.size()
                                 ? fmt::format("{}", LatencyHistogram::kUpperBoundsSeconds[i])
                                 : std::string("+Inf");
      Labels bucket = labels;
      bucket.emplace_back("le", le);
      w.sample("natsfleet_handler_latency_seconds_bucket", bucket, s.latency.cumulative[i]);
    }
    w.sample("natsfleet_handler_latency_seconds_sum", labels, s.latency.sum_seconds);
    w.sample("natsfleet_handler_latency_seconds_count", labels, s.latency.count);
  }

  w.family("natsfleet_sink_results_total", "counter", "Sink verdicts per outcome.");
  for (const auto& s : snapshots) {
    const std::pair<std::string_view, uint64_t> outcomes[] = {
        {"ack", s.acked}, {"nak", s.naked}, {"term", s.termed}, {"retry", s.retried}};
    for (const auto& [outcome, value] : outcomes) {
      Labels labels = labels_of(s);
      labels.emplace_back("outcome", outcome);
      w.sample("natsfleet_sink_results_total", labels, value);
    }
  }

  w.family("natsfleet_published_total", "counter", "Messages workers asked the daemon to publish.");
  for (const auto& s : snapshots) w.sample("natsfleet_published_total", labels_of(s), s.published);

  w.family("natsfleet_sink_errors_total", "counter",
           "Sink failures (write error, worker died, HTTP error or timeout).");
  for (const auto& s : snapshots) {
    w.sample("natsfleet_sink_errors_total", labels_of(s), s.sink_errors);
  }
}

void render_servers(Writer& w, const ServerMetrics& servers, const std::string& service) {
  auto labels_of = [&](const std::string& server) {
    return Labels{{"service", service}, {"server", server}};
  };
  if (!servers.http.empty()) {
    w.family("natsfleet_http_connections", "gauge", "HTTP connections open now.");
    for (const auto& s : servers.http)
      w.sample("natsfleet_http_connections", labels_of(s.server), uint64_t{s.connections});
    w.family("natsfleet_http_connections_cut_total", "counter",
             "HTTP connections cut: idle or slow (no complete request headers within the "
             "header deadline), evicted (waited longest when a new connection needed room), "
             "busy (closed on accept, every connection busy).");
    for (const auto& s : servers.http) {
      const std::pair<std::string_view, uint64_t> reasons[] = {{"idle", s.cut_idle},
                                                               {"slow", s.cut_slow},
                                                               {"evicted", s.evicted},
                                                               {"busy", s.refused_busy}};
      for (const auto& [reason, value] : reasons) {
        Labels labels = labels_of(s.server);
        labels.emplace_back("reason", reason);
        w.sample("natsfleet_http_connections_cut_total", labels, value);
      }
    }
  }
  if (servers.gateways.empty()) return;
  w.family("natsfleet_websocket_sessions", "gauge", "WebSocket sessions open or upgrading.");
  for (const auto& g : servers.gateways)
    w.sample("natsfleet_websocket_sessions", labels_of(g.server), uint64_t{g.sessions});
  w.family("natsfleet_websocket_max_sessions", "gauge",
           "WebSocket sessions allowed; further upgrades are answered 503.");
  for (const auto& g : servers.gateways)
    w.sample("natsfleet_websocket_max_sessions", labels_of(g.server), uint64_t{g.max_sessions});
  w.family("natsfleet_websocket_attached_total", "counter", "WebSocket sessions attached.");
  for (const auto& g : servers.gateways)
    w.sample("natsfleet_websocket_attached_total", labels_of(g.server), g.attached);
  w.family("natsfleet_websocket_refused_total", "counter",
           "WebSocket upgrades refused, by reason.");
  for (const auto& g : servers.gateways) {
    for (const auto& [reason, value] : g.refused) {
      Labels labels = labels_of(g.server);
      labels.emplace_back("reason", reason);
      w.sample("natsfleet_websocket_refused_total", labels, value);
    }
  }
  w.family("natsfleet_websocket_dropped_total", "counter",
           "WebSocket sessions closed by the gateway: slow (not reading its statuses) or idle "
           "(silent past the idle timeout).");
  for (const auto& g : servers.gateways) {
    const std::pair<std::string_view, uint64_t> reasons[] = {{"slow", g.dropped_slow},
                                                             {"idle", g.closed_idle}};
    for (const auto& [reason, value] : reasons) {
      Labels labels = labels_of(g.server);
      labels.emplace_back("reason", reason);
      w.sample("natsfleet_websocket_dropped_total", labels, value);
    }
  }
}

void render_process(Writer& w, const std::string& service) {
  const Labels base = {{"service", service}};
  w.family("natsfleet_build_info", "gauge", "Always 1; the version of natsfleet running.");
  w.sample("natsfleet_build_info", Labels{{"service", service}, {"version", NATSFLEET_VERSION}},
           uint64_t{1});
  const auto p = read_process_stats();
  if (!p) return;
  w.family("process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.");
  w.sample("process_cpu_seconds_total", base, p->cpu_seconds);
  w.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  w.sample("process_resident_memory_bytes", base, p->resident_bytes);
  w.family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
  w.sample("process_virtual_memory_bytes", base, p->virtual_bytes);
  w.family("process_start_time_seconds", "gauge",
           "Start time of the process since the Unix epoch, in seconds.");
  w.sample("process_start_time_seconds", base, p->start_time_seconds);
  w.family("process_open_fds", "gauge", "Open file descriptors.");
  w.sample("process_open_fds", base, p->open_fds);
  w.family("process_max_fds", "gauge", "The limit on open file descriptors.");
  w.sample("process_max_fds", base, p->max_fds);
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_metrics(const FleetHealth& health, const DaemonMetrics& metrics,
                           const std::string& service, const ServerMetrics& servers) {
  std::string out;
  out.reserve(4096 + health.subscriptions.size() * 4096);
  Writer w(out);
  render_fleet(w, health, service);
  render_subscriptions(w, health, service);
  render_daemon(w, health, metrics, service);
  render_servers(w, servers, service);
  render_process(w, service);
  return out;
}

}  // namespace natsfleet::health
