#include "health/daemon_metrics.h"

namespace natsfleet::health {

SubscriptionMetrics& DaemonMetrics::register_subscription(const std::string& name) {
  std::unique_lock lock(mu_);
  return entries_.try_emplace(name).first->second;
}

bool DaemonMetrics::has_subscription(const std::string& name) const {
  std::shared_lock lock(mu_);
  return entries_.find(name) != entries_.end();
}

void SubscriptionMetrics::observe(std::chrono::nanoseconds latency, Disposition::Kind outcome) {
  latency_.observe(latency);
  switch (outcome) {
    case Disposition::Kind::ack:
      acked_.fetch_add(1, std::memory_order_relaxed);
      break;
    case Disposition::Kind::nak:
      naked_.fetch_add(1, std::memory_order_relaxed);
      break;
    case Disposition::Kind::term:
      termed_.fetch_add(1, std::memory_order_relaxed);
      break;
    case Disposition::Kind::retry:
      retried_.fetch_add(1, std::memory_order_relaxed);
      break;
    case Disposition::Kind::later:  // the daemon's sinks answer at once
      break;
  }
}

std::vector<DaemonMetrics::SubscriptionSnapshot> DaemonMetrics::snapshot() const {
  std::vector<SubscriptionSnapshot> out;
  std::shared_lock lock(mu_);
  out.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) {
    SubscriptionSnapshot s;
    s.name = name;
    s.latency = entry.latency_.snapshot();
    s.acked = entry.acked_.load(std::memory_order_relaxed);
    s.naked = entry.naked_.load(std::memory_order_relaxed);
    s.termed = entry.termed_.load(std::memory_order_relaxed);
    s.retried = entry.retried_.load(std::memory_order_relaxed);
    s.published = entry.published_.load(std::memory_order_relaxed);
    s.sink_errors = entry.sink_errors_.load(std::memory_order_relaxed);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace natsfleet::health
