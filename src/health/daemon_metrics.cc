#include "health/daemon_metrics.h"

#include <spdlog/spdlog.h>

#include "base/log_event.h"

namespace natsfleet::health {

void DaemonMetrics::register_subscription(const std::string& name) {
  std::unique_lock lock(mu_);
  entries_.try_emplace(name);
}

bool DaemonMetrics::has_subscription(const std::string& name) const {
  std::shared_lock lock(mu_);
  return entries_.find(name) != entries_.end();
}

DaemonMetrics::Entry* DaemonMetrics::find(const std::string& subscription) {
  {
    std::shared_lock lock(mu_);
    auto it = entries_.find(subscription);
    if (it != entries_.end()) return &it->second;
  }
  unregistered_.fetch_add(1, std::memory_order_relaxed);
  // Once is enough to find the bug; a log line per message would flood the daemon's output.
  if (!warned_unregistered_.exchange(true, std::memory_order_relaxed)) {
    base::log_event(*spdlog::default_logger(), spdlog::level::warn,
                    {{"event", "metrics-unregistered"}},
                    "metrics: subscription '{}' was never registered; its events are not counted",
                    subscription);
  }
  return nullptr;
}

void DaemonMetrics::observe(const std::string& subscription, std::chrono::nanoseconds latency,
                            Disposition::Kind outcome) {
  Entry* entry = find(subscription);
  if (entry == nullptr) return;
  entry->latency.observe(latency);
  switch (outcome) {
    case Disposition::Kind::ack:
      entry->acked.fetch_add(1, std::memory_order_relaxed);
      break;
    case Disposition::Kind::nak:
      entry->naked.fetch_add(1, std::memory_order_relaxed);
      break;
    case Disposition::Kind::term:
      entry->termed.fetch_add(1, std::memory_order_relaxed);
      break;
    case Disposition::Kind::retry:
      entry->retried.fetch_add(1, std::memory_order_relaxed);
      break;
  }
}

void DaemonMetrics::count_published(const std::string& subscription, uint64_t n) {
  if (Entry* entry = find(subscription)) entry->published.fetch_add(n, std::memory_order_relaxed);
}

void DaemonMetrics::count_sink_error(const std::string& subscription) {
  if (Entry* entry = find(subscription)) entry->sink_errors.fetch_add(1, std::memory_order_relaxed);
}

std::vector<DaemonMetrics::SubscriptionSnapshot> DaemonMetrics::snapshot() const {
  std::vector<SubscriptionSnapshot> out;
  std::shared_lock lock(mu_);
  out.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) {
    SubscriptionSnapshot s;
    s.name = name;
    s.latency = entry.latency.snapshot();
    s.acked = entry.acked.load(std::memory_order_relaxed);
    s.naked = entry.naked.load(std::memory_order_relaxed);
    s.termed = entry.termed.load(std::memory_order_relaxed);
    s.retried = entry.retried.load(std::memory_order_relaxed);
    s.published = entry.published.load(std::memory_order_relaxed);
    s.sink_errors = entry.sink_errors.load(std::memory_order_relaxed);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace natsfleet::health
