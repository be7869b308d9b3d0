#include "fleet/broadcast_subscription.h"

#include <spdlog/spdlog.h>

#include "base/backoff.h"
#include "natsfleet/validate.h"

namespace natsfleet::fleet {

BroadcastSubscription::BroadcastSubscription(BroadcastSpec spec, BroadcastHandler handler,
                                             FleetContext& context)
    : spec_(std::move(spec)),
      handler_(std::move(handler)),
      ctx_(context),
      status_(spec_.name, "broadcast", spec_.subject, context.log) {
  consume::Dispatcher::Options options;
  options.concurrency = spec_.concurrency;
  options.max_queued = static_cast<size_t>(std::max(spec_.max_queued, 1));
  if (spec_.key_token > 0)
    options.key = [token = spec_.key_token](const nats::InboundMessage& m) {
      return subject_token(m.subject, token);
    };
  dispatcher_ = std::make_unique<consume::Dispatcher>(
      std::move(options), [this](nats::InboundMessage&& m, const consume::Dispatcher::Turn&) {
        process(std::move(m));
      });
}

BroadcastSubscription::~BroadcastSubscription() {
  begin_shutdown();
  finish_handlers(Clock::now());
  join();
  dispatcher_->join();
}

bool BroadcastSubscription::await_handlers(Clock::time_point until) {
  return dispatcher_->await_idle(until);
}

void BroadcastSubscription::start() {
  thread_ = std::thread([this] { run(); });
}

void BroadcastSubscription::connection_changed(bool) {
  std::lock_guard lock(mu_);
  woken_ = true;
  wake_.notify_all();
}

void BroadcastSubscription::begin_shutdown() {
  stopping_ = true;
  control_->request_stop();
  std::unique_ptr<nats::Subscription> sub;
  {
    std::lock_guard lock(mu_);
    sub = std::move(subscription_);
    woken_ = true;
    wake_.notify_all();
  }
  sub.reset();
}

bool BroadcastSubscription::finish_handlers(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return dispatcher_->stop(std::max(left, std::chrono::milliseconds(0)), nullptr);
}

void BroadcastSubscription::join() {
  if (thread_.joinable()) thread_.join();
  status_.set_state(SubscriptionState::stopped);
}

SubscriptionHealth BroadcastSubscription::health() const { return status_.snapshot(); }

void BroadcastSubscription::run() {
  base::Backoff backoff(ctx_.options.bind_backoff_min, ctx_.options.bind_backoff_max);
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const bool connected = ctx_.connection->connected();
    if (connected && !subscription_) {
      auto sub = ctx_.connection->subscribe(spec_.subject, "", [this](nats::InboundMessage&& m) {
        if (dispatcher_->submit(std::move(m)).displaced) status_.counters.dropped++;
      });
      // Bound means the broker has the interest: a message published after readiness is seen.
      if (sub && ctx_.connection->flush(std::chrono::seconds(2))) {
        subscription_ = std::move(sub.value());
        backoff.reset();
      } else if (sub) {
        status_.warn("subscribed, but the broker did not confirm it in time; retrying");
      } else {
        status_.warn("subscribe failed: " + sub.error().describe());
      }
    }
    if (connected && subscription_)
      status_.set_state(SubscriptionState::bound);
    else if (!connected && status_.state() == SubscriptionState::bound)
      status_.set_state(SubscriptionState::recovering, "disconnected from the broker");
    watch_drops();
    auto wait = subscription_ || !connected ? std::chrono::milliseconds(500) : backoff.next();
    wake_.wait_for(lock, wait, [&] { return woken_ || stopping_.load(); });
    woken_ = false;
  }
}

void BroadcastSubscription::watch_drops() {
  const uint64_t dropped = status_.counters.dropped.load();
  const auto now = Clock::now();
  if (dropped != drops_seen_) {
    if (!dropping_) {
      dropping_ = true;
      episode_start_drops_ = drops_seen_;
      status_.event(
          spdlog::level::warn, "dropping",
          "broadcast {}: {} messages wait for the handler (the most it holds): dropping the "
          "oldest{}",
          spec_.name, spec_.max_queued,
          spec_.key_token > 0
              ? " of the same key (subject token " + std::to_string(spec_.key_token) + ")"
              : std::string());
    }
    drops_seen_ = dropped;
    last_drop_ = now;
  } else if (dropping_ && now - last_drop_ > std::chrono::seconds(5)) {
    dropping_ = false;
    status_.event(spdlog::level::info, "drops-ended",
                  "broadcast {}: no drops for 5s; {} messages were dropped before that", spec_.name,
                  drops_seen_ - episode_start_drops_);
  }
}

void BroadcastSubscription::process(nats::InboundMessage&& in) {
  status_.counters.received++;
  Message message(std::move(in.subject), std::move(in.data), std::move(in.headers), std::nullopt,
                  {}, control_);
  base::Backoff backoff(std::chrono::milliseconds(250), std::chrono::seconds(10));
  for (;;) {
    try {
      handler_(message);
      status_.counters.acked++;
      if (backoff.attempts() > 0) {
        status_.set_downstream(false, {}, 0);
        status_.event(spdlog::level::info, "downstream-up", "broadcast {}: the downstream is back",
                      spec_.name);
      }
      return;
    } catch (const DownstreamUnavailable& e) {
      // Not redeliverable: try this one again, while the bounded queue keeps the newest.
      status_.counters.retried++;
      if (backoff.attempts() == 0)
        status_.event_with(spdlog::level::warn, "downstream-down", {{"error", e.what()}},
                           "broadcast {}: the downstream is down ({}); retrying", spec_.name,
                           e.what());
      status_.set_downstream(true, e.what(), 1);
      auto wait = std::max(backoff.next(), std::min(e.after(), std::chrono::milliseconds(60000)));
      std::unique_lock lock(mu_);
      if (wake_.wait_for(lock, wait, [&] { return stopping_.load(); })) return;
    } catch (const std::exception& e) {
      status_.counters.handler_errors++;
      SPDLOG_LOGGER_DEBUG(ctx_.log, "broadcast {}: handler threw: {}", spec_.name, e.what());
      return;
    } catch (...) {
      status_.counters.handler_errors++;
      SPDLOG_LOGGER_DEBUG(ctx_.log,
                          "broadcast {}: handler threw something not derived from "
                          "std::exception",
                          spec_.name);
      return;
    }
  }
}

}  // namespace natsfleet::fleet
