// Counters the daemon keeps itself, per subscription: handler (sink) latency, sink outcomes,
// messages workers asked to publish and sink errors. The fleet's own counters live in FleetHealth.
//
//   DaemonMetrics metrics;
//   metrics.register_subscription("mail-relay");   // before its first message
//   metrics.observe("mail-relay", elapsed, Disposition::Kind::ack);   // from any handler thread
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <shared_mutex>
#include <string>
#include <vector>

#include "health/latency_histogram.h"
#include "natsfleet/message.h"

namespace natsfleet::health {

class DaemonMetrics {
 public:
  struct SubscriptionSnapshot {
    std::string name;
    LatencyHistogram::Snapshot latency;
    uint64_t acked = 0;
    uint64_t naked = 0;
    uint64_t termed = 0;
    uint64_t retried = 0;
    uint64_t published = 0;
    uint64_t sink_errors = 0;
  };

  DaemonMetrics() = default;
  DaemonMetrics(const DaemonMetrics&) = delete;
  DaemonMetrics& operator=(const DaemonMetrics&) = delete;

  // Call for a subscription before its first message; any time, from any thread (a reload adds
  // subscriptions). Registering a name twice keeps the first entry.
  void register_subscription(const std::string& name);
  bool has_subscription(const std::string& name) const;

  // Safe from any thread. An unregistered name is a wiring bug: the
  // event is dropped, counted in unregistered_events() and logged once.
  void observe(const std::string& subscription, std::chrono::nanoseconds latency,
               Disposition::Kind outcome);
  void count_published(const std::string& subscription, uint64_t n);
  void count_sink_error(const std::string& subscription);

  // One entry per registered subscription, sorted by name.
  std::vector<SubscriptionSnapshot> snapshot() const;
  uint64_t unregistered_events() const { return unregistered_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    LatencyHistogram latency;
    std::atomic<uint64_t> acked{0};
    std::atomic<uint64_t> naked{0};
    std::atomic<uint64_t> termed{0};
    std::atomic<uint64_t> retried{0};
    std::atomic<uint64_t> published{0};
    std::atomic<uint64_t> sink_errors{0};
  };

  Entry* find(const std::string& subscription);

  // std::map nodes never move: an entry found stays put while others are added.
  mutable std::shared_mutex mu_;  // the map's shape; the counters are atomics
  std::map<std::string, Entry, std::less<>> entries_;
  std::atomic<uint64_t> unregistered_{0};
  std::atomic<bool> warned_unregistered_{false};
};

}  // namespace natsfleet::health
