// A push consumer with a deliver group, joined by a queue subscription: the broker hands each
// message to one member of the group. nats.c 3.4.1 refuses idle heartbeats on a queue
// subscription, so this intake never reports a missed heartbeat; the work subscription watches
// the consumer by polling its info instead.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "consume/intake.h"
#include "nats/connection.h"

namespace natsfleet::consume {

class QueueIntake final : public Intake {
 public:
  using Deliver = std::function<void(nats::InboundMessage&&)>;

  QueueIntake(nats::Connection& connection, std::string deliver_subject, std::string group,
              Deliver deliver);
  ~QueueIntake() override;

  Result<void> start() override;
  void stop() override;
  // Leaving the group is the only way to ask for nothing more: the broker stops sending here.
  void stop_pulling() override { stop(); }
  int64_t outstanding() const override { return 0; }
  void message_done() override {}
  void restart_pulls() override {}  // nats.c re-subscribes after a reconnect by itself
  void tick() override {}
  bool heartbeat_missed() const override { return false; }
  void set_window(int) override {}  // the consumer's max_ack_pending bounds what is in flight
  void hold_back(bool on) override;
  // The last message delivered here (no heartbeats on a queue subscription).
  std::chrono::steady_clock::time_point last_served() const override;

 private:
  nats::Connection& connection_;
  const std::string deliver_subject_;
  const std::string group_;
  Deliver deliver_;
  std::mutex mu_;
  std::unique_ptr<nats::Subscription> subscription_;
  bool held_back_ = false;
  std::atomic<std::chrono::steady_clock::rep> served_at_{0};
};

}  // namespace natsfleet::consume
