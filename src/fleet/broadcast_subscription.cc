#include "fleet/broadcast_subscription.h"

#include <spdlog/spdlog.h>

#include "fleet/backoff.h"

namespace natsfleet::fleet {

BroadcastSubscription::BroadcastSubscription(BroadcastSpec spec, BroadcastHandler handler,
                                             FleetContext& context)
    : spec_(std::move(spec)),
      handler_(std::move(handler)),
      ctx_(context),
      status_(spec_.name, "broadcast", spec_.subject, context.log) {
  dispatcher_ = std::make_unique<consume::Dispatcher>(
      spec_.concurrency, [this](nats::InboundMessage&& m) { process(std::move(m)); });
}

BroadcastSubscription::~BroadcastSubscription() {
  begin_shutdown();
  finish_handlers(Clock::now());
  join();
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
  Backoff backoff(ctx_.options.bind_backoff_min, ctx_.options.bind_backoff_max);
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const bool connected = ctx_.connection->connected();
    if (connected && !subscription_) {
      auto sub = ctx_.connection->subscribe(spec_.subject, "", [this](nats::InboundMessage&& m) {
        dispatcher_->submit(std::move(m));
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
    auto wait = subscription_ || !connected ? std::chrono::milliseconds(500) : backoff.next();
    wake_.wait_for(lock, wait, [&] { return woken_ || stopping_.load(); });
    woken_ = false;
  }
}

void BroadcastSubscription::process(nats::InboundMessage&& in) {
  status_.counters.received++;
  Message message(std::move(in.subject), std::move(in.data), std::move(in.headers));
  try {
    handler_(message);
    status_.counters.acked++;
  } catch (const std::exception& e) {
    status_.counters.handler_errors++;
    SPDLOG_LOGGER_DEBUG(ctx_.log, "broadcast {}: handler threw: {}", spec_.name, e.what());
  } catch (...) {
    status_.counters.handler_errors++;
  }
}

}  // namespace natsfleet::fleet
