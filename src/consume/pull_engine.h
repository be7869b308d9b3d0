// The continuous pull loop nats.c 3.4.1 lacks: pipelined pull requests on a private inbox, with
// idle heartbeats, re-pulled before the buffer runs dry and re-issued after anything that may
// have dropped the waiting requests (a reconnect, a new leader, a silent expiry).
//
// Thread use: messages arrive on nats.c's subscription thread; message_done() is called from
// handler threads; tick() and restart_pulls() from the owner's supervisor thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "consume/intake.h"
#include "consume/pull_status.h"
#include "nats/connection.h"

namespace natsfleet::consume {

class PullEngine final : public Intake {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::string stream;
    std::string consumer;
    int batch = 64;  // at most this many messages requested or buffered at once
    std::chrono::milliseconds expires{30000};
    std::chrono::milliseconds heartbeat{5000};
  };
  // An ordinary message (to hand to a handler; call message_done() when it is finished).
  using Deliver = std::function<void(nats::InboundMessage&&)>;
  // A status the engine cannot settle itself: consumer deleted, no responders, bad request,
  // push consumer, leadership change, max waiting.
  using Signal = std::function<void(const PullStatus&)>;

  PullEngine(nats::Connection& connection, Options options, Deliver deliver, Signal signal);
  ~PullEngine() override;
  PullEngine(const PullEngine&) = delete;
  PullEngine& operator=(const PullEngine&) = delete;

  // Subscribes the inbox and sends the first pull.
  Result<void> start() override;
  // Unsubscribes: no more deliveries once it returns.
  void stop() override;
  // Sends no more pull requests; what the broker still sends for earlier ones is delivered.
  void stop_pulling() override;
  // Messages asked for and not yet delivered (nor released by a status).
  int64_t outstanding() const override;

  void message_done() override;
  // Forgets outstanding requests (they may be gone) and pulls afresh.
  void restart_pulls() override;
  // Periodic upkeep: forget requests that must have expired, refill.
  void tick() override;
  // Requests are outstanding and the broker has been silent for two heartbeats.
  bool heartbeat_missed() const override;
  int64_t buffered() const;
  // Changes how many messages may be requested or buffered at once (at least 1).
  void set_window(int messages) override;
  // Held back, the window is 2: what is held stays buffered, and one spare message may come.
  void hold_back(bool on) override;
  int window() const;
  uint64_t pulls_sent() const;

 private:
  void on_message(nats::InboundMessage&& msg);
  // Computes under the lock how much to ask for; sends outside it.
  void refill();
  std::string pull_body(int64_t batch) const;

  nats::Connection& connection_;
  const Options options_;
  Deliver deliver_;
  Signal signal_;
  const std::string pull_subject_;
  std::string inbox_;
  std::unique_ptr<nats::Subscription> subscription_;

  mutable std::mutex mu_;
  bool running_ = false;
  bool pulling_ = true;
  int64_t window_ = 1;
  int64_t normal_window_ = 1;  // while held back: the window to return to
  bool held_back_ = false;
  int64_t requested_ = 0;  // asked for and not yet delivered nor released by a status
  int64_t buffered_ = 0;   // delivered and not yet finished
  Clock::time_point last_activity_{};
  Clock::time_point last_pull_{};
  uint64_t pulls_sent_ = 0;
};

}  // namespace natsfleet::consume
