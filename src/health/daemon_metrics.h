// Counters the daemon keeps itself, per subscription: handler (sink) latency, sink outcomes,
// messages workers asked to publish and sink errors. The fleet's own counters live in FleetHealth.
//
//   DaemonMetrics metrics;
//   SubscriptionMetrics& relay = metrics.register_subscription("mail-relay");
//   relay.observe(elapsed, Disposition::Kind::ack);   // from any handler thread
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "health/latency_histogram.h"
#include "natsfleet/message.h"

namespace natsfleet::health {

// One subscription's counters: what its handler threads record, without a lookup or a lock.
class SubscriptionMetrics {
 public:
  // Safe from any thread.
  void observe(std::chrono::nanoseconds latency, Disposition::Kind outcome);
  void count_published(uint64_t n) { published_.fetch_add(n, std::memory_order_relaxed); }
  void count_sink_error() { sink_errors_.fetch_add(1, std::memory_order_relaxed); }

 private:
  friend class DaemonMetrics;
  LatencyHistogram latency_;
  std::atomic<uint64_t> acked_{0};
  std::atomic<uint64_t> naked_{0};
  std::atomic<uint64_t> termed_{0};
  std::atomic<uint64_t> retried_{0};
  std::atomic<uint64_t> published_{0};
  std::atomic<uint64_t> sink_errors_{0};
};

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

  // The counters of subscription `name`, made on first call (the same ones after); any time,
  // from any thread (a reload adds subscriptions). They live as long as this.
  SubscriptionMetrics& register_subscription(const std::string& name);
  bool has_subscription(const std::string& name) const;

  // One entry per registered subscription, sorted by name.
  std::vector<SubscriptionSnapshot> snapshot() const;

 private:
  // std::map nodes never move: counters handed out stay put while others are added.
  mutable std::shared_mutex mu_;  // the map's shape; the counters are atomics
  std::map<std::string, SubscriptionMetrics, std::less<>> entries_;
};

}  // namespace natsfleet::health
