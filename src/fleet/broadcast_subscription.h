// A BroadcastSpec under supervision: a core NATS subscription on every replica, so each replica
// sees every message. nats.c re-subscribes after a reconnect; this keeps the state honest and
// subscribes once the first connect happens.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "consume/dispatcher.h"
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
  SubscriptionHealth health() const override;

 private:
  void run();
  void process(nats::InboundMessage&& msg);

  const BroadcastSpec spec_;
  const BroadcastHandler handler_;
  FleetContext& ctx_;
  SubscriptionStatus status_;
  std::unique_ptr<consume::Dispatcher> dispatcher_;

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool woken_ = false;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<nats::Subscription> subscription_;  // guarded by mu_
};

}  // namespace natsfleet::fleet
