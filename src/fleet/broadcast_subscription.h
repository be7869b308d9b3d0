// A BroadcastSpec under supervision: a core NATS subscription on every replica, so each replica
// sees every message. nats.c re-subscribes after a reconnect; this keeps the state honest and
// subscribes once the first connect happens.
//
// A core message cannot be redelivered, so a handler that throws DownstreamUnavailable gets the
// same message again, with backoff, until it goes through or shutdown; meanwhile the queue of
// waiting messages is bounded (spec.max_queued), dropping the oldest (of the same key when
// spec.key_token is set), counted and logged once an episode.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "consume/dispatcher.h"
#include "fleet/delivery_control.h"
#include "fleet/subscription_status.h"
#include "fleet/supervised.h"
#include "nats/connection.h"

namespace natsfleet::fleet {

class BroadcastSubscription final : public Supervised {
 public:
  BroadcastSubscription(BroadcastSpec spec, BroadcastHandler handler, FleetContext& context);
  ~BroadcastSubscription() override;

  void start() override;
  void connection_changed(bool connected) override;
  void begin_shutdown() override;
  bool finish_handlers(Clock::time_point deadline) override;
  void join() override;
  bool await_handlers(Clock::time_point until) override;
  SubscriptionHealth health() const override;

 private:
  void run();
  void process(nats::InboundMessage&& msg);
  // Logs the start and the end of a run of drops (a full queue), once each.
  void watch_drops();

  const BroadcastSpec spec_;
  const BroadcastHandler handler_;
  FleetContext& ctx_;
  SubscriptionStatus status_;
  std::unique_ptr<consume::Dispatcher> dispatcher_;
  // Its messages' stop_token() (core messages need no in-progress acks).
  const std::shared_ptr<DeliveryControl> control_ = std::make_shared<DeliveryControl>(nullptr);

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool woken_ = false;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<nats::Subscription> subscription_;  // guarded by mu_

  // Supervisor thread: the drop episode being watched.
  uint64_t drops_seen_ = 0;
  uint64_t episode_start_drops_ = 0;
  bool dropping_ = false;
  Clock::time_point last_drop_{};
};

}  // namespace natsfleet::fleet
