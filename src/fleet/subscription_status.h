// The shared bookkeeping of every supervised subscription: state, last error, counters. State
// changes and new errors are logged once each, never once per message.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "base/log_event.h"
#include "natsfleet/health.h"

namespace natsfleet::fleet {

struct AtomicCounters {
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> acked{0};
  std::atomic<uint64_t> naked{0};
  std::atomic<uint64_t> termed{0};
  std::atomic<uint64_t> redelivered{0};
  std::atomic<uint64_t> handler_errors{0};
  std::atomic<uint64_t> recoveries{0};
  std::atomic<uint64_t> retried{0};
  std::atomic<uint64_t> dead_lettered{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> kept_alive{0};
};

class SubscriptionStatus {
 public:
  SubscriptionStatus(std::string name, std::string kind, std::string subject,
                     std::shared_ptr<spdlog::logger> log);

  SubscriptionState state() const;
  // Logs "name: old -> new (why)" when the state changes; `why` becomes last_error unless empty.
  void set_state(SubscriptionState state, const std::string& why = {});
  // Records a warning; logged only when it differs from the previous one.
  void warn(const std::string& error);
  void set_location(const std::string& stream, const std::string& consumer);
  void set_consumer_counts(uint64_t pending, uint64_t ack_pending, uint64_t ack_floor);
  // The downstream's state as the subscription's gate sees it (error: the last retryable one).
  void set_downstream(bool down, const std::string& error, uint64_t held);
  SubscriptionHealth snapshot() const;

  AtomicCounters counters;
  spdlog::logger& log() const { return *log_; }
  // A line about this subscription: the fields `work` (or `broadcast`) with its name, `stream`
  // once known, and `event`, plus `extra`.
  template <typename... Args>
  void event_with(spdlog::level::level_enum level, std::string_view event,
                  std::initializer_list<base::LogField> extra,
                  spdlog::format_string_t<Args...> format, Args&&... args) const {
    if (!log_->should_log(level)) return;
    base::LogScope where({{kind_, name_}, {"stream", stream_copy()}, {"event", event}});
    base::LogScope more(extra);
    log_->log(level, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void event(spdlog::level::level_enum level, std::string_view event,
             spdlog::format_string_t<Args...> format, Args&&... args) const {
    event_with(level, event, {}, format, std::forward<Args>(args)...);
  }
  // Logs `text` at `level` as `event` the first time it is said here, never again after.
  void event_once(std::string_view event, const std::string& text,
                  spdlog::level::level_enum level = spdlog::level::info);
  const std::string& name() const { return name_; }

 private:
  std::string stream_copy() const {
    std::lock_guard lock(mu_);
    return stream_;
  }

  const std::string name_;
  const std::string kind_;
  const std::string subject_;
  std::shared_ptr<spdlog::logger> log_;
  mutable std::mutex mu_;
  SubscriptionState state_ = SubscriptionState::binding;
  std::string last_error_;
  std::string stream_;
  std::string consumer_;
  uint64_t pending_ = 0;
  uint64_t ack_pending_ = 0;
  uint64_t ack_floor_ = 0;
  bool downstream_down_ = false;
  std::string downstream_error_;
  uint64_t held_ = 0;
  std::set<std::string> said_;  // by event_once()
};

}  // namespace natsfleet::fleet
