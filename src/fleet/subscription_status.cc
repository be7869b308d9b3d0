#include "fleet/subscription_status.h"

#include <spdlog/spdlog.h>

namespace natsfleet {

const char* to_string(SubscriptionState state) noexcept {
  switch (state) {
    case SubscriptionState::binding:
      return "binding";
    case SubscriptionState::bound:
      return "bound";
    case SubscriptionState::recovering:
      return "recovering";
    case SubscriptionState::stalled:
      return "stalled";
    case SubscriptionState::fatal:
      return "fatal";
    case SubscriptionState::stopped:
      return "stopped";
  }
  return "?";
}

namespace fleet {

SubscriptionStatus::SubscriptionStatus(std::string name, std::string kind, std::string subject,
                                       std::shared_ptr<spdlog::logger> log)
    : name_(std::move(name)),
      kind_(std::move(kind)),
      subject_(std::move(subject)),
      log_(std::move(log)) {}

SubscriptionState SubscriptionStatus::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

void SubscriptionStatus::set_state(SubscriptionState state, const std::string& why) {
  std::lock_guard lock(mu_);
  if (!why.empty()) last_error_ = why;
  if (state == state_) return;
  auto level = state == SubscriptionState::fatal        ? spdlog::level::err
               : state == SubscriptionState::recovering ? spdlog::level::warn
               : state == SubscriptionState::stalled    ? spdlog::level::warn
                                                        : spdlog::level::info;
  // Under mu_: the fields are written from the members directly.
  base::LogScope where({{kind_, name_},
                        {"stream", stream_},
                        {"event", "state"},
                        {"from", to_string(state_)},
                        {"to", to_string(state)}});
  if (why.empty()) {
    log_->log(level, "{} {}: {} -> {}", kind_, name_, to_string(state_), to_string(state));
  } else {
    base::LogScope error({{"error", why}});
    log_->log(level, "{} {}: {} -> {} ({})", kind_, name_, to_string(state_), to_string(state),
              why);
  }
  state_ = state;
}

void SubscriptionStatus::warn(const std::string& error) {
  std::lock_guard lock(mu_);
  if (error == last_error_) return;
  last_error_ = error;
  base::log_event(*log_, spdlog::level::warn,
                  {{kind_, name_}, {"stream", stream_}, {"event", "warning"}, {"error", error}},
                  "{} {}: {}", kind_, name_, error);
}

void SubscriptionStatus::set_location(const std::string& stream, const std::string& consumer) {
  std::lock_guard lock(mu_);
  stream_ = stream;
  consumer_ = consumer;
}

void SubscriptionStatus::set_consumer_counts(uint64_t pending, uint64_t ack_pending,
                                             uint64_t ack_floor) {
  std::lock_guard lock(mu_);
  pending_ = pending;
  ack_pending_ = ack_pending;
  ack_floor_ = ack_floor;
}

void SubscriptionStatus::set_downstream(bool down, const std::string& error, uint64_t held) {
  std::lock_guard lock(mu_);
  downstream_down_ = down;
  downstream_error_ = down ? error : std::string();
  held_ = held;
}

SubscriptionHealth SubscriptionStatus::snapshot() const {
  SubscriptionHealth h;
  h.name = name_;
  h.kind = kind_;
  h.subject = subject_;
  {
    std::lock_guard lock(mu_);
    h.state = state_;
    h.last_error = last_error_;
    h.stream = stream_;
    h.consumer = consumer_;
    h.consumer_pending = pending_;
    h.consumer_ack_pending = ack_pending_;
    h.ack_floor = ack_floor_;
    h.downstream_down = downstream_down_;
    h.downstream_error = downstream_error_;
    h.held = held_;
  }
  h.counters.received = counters.received.load();
  h.counters.acked = counters.acked.load();
  h.counters.naked = counters.naked.load();
  h.counters.termed = counters.termed.load();
  h.counters.redelivered = counters.redelivered.load();
  h.counters.handler_errors = counters.handler_errors.load();
  h.counters.recoveries = counters.recoveries.load();
  h.counters.retried = counters.retried.load();
  h.counters.dead_lettered = counters.dead_lettered.load();
  h.counters.dropped = counters.dropped.load();
  h.counters.kept_alive = counters.kept_alive.load();
  return h;
}

void SubscriptionStatus::event_once(std::string_view event, const std::string& text,
                                    spdlog::level::level_enum level) {
  {
    std::lock_guard lock(mu_);
    if (!said_.insert(text).second) return;
  }
  this->event(level, event, "{}", text);
}

}  // namespace fleet
}  // namespace natsfleet
