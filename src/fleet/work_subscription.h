// A WorkSpec under supervision: reconcile and bind the shared durable pull consumer, consume it
// through the pull engine, and recover from everything the broker can do to it.
//
//   binding --bound--> bound <--> recovering ; bound <--> stalled ; any -> fatal | stopped
//
// Missed heartbeats, a reconnect, a "consumer deleted" status or a failed info poll move a bound
// subscription to recovering, which looks the consumer up: present -> pull again; missing
// (confirmed by several lookups) -> recreate or fatal per on_missing; stream gone -> fatal;
// broker unreachable -> a warning, and wait.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "consume/dispatcher.h"
#include "consume/pull_engine.h"
#include "fleet/subscription_status.h"
#include "fleet/supervised.h"
#include "nats/jetstream_api.h"

namespace natsfleet::fleet {

class WorkSubscription final : public Supervised {
 public:
  WorkSubscription(WorkSpec spec, WorkHandler handler, FleetContext& context);
  ~WorkSubscription() override;

  void start() override;
  void connection_changed(bool connected) override;
  void begin_shutdown() override;
  bool finish_handlers(Clock::time_point deadline) override;
  void join() override;
  SubscriptionHealth health() const override;

 private:
  enum class Lookup { present, consumer_missing, stream_missing, unreachable };

  void run();
  void run_binding();
  void run_bound();
  void run_recovering();
  Result<void> bind();
  void install_engine(const std::string& stream);
  Lookup lookup_once(Error* error);
  Lookup confirm_lookup(Error* error);
  Result<void> recreate_consumer();
  void poll_info();
  void enter_recovering(const std::string& why);
  void go_fatal(const std::string& reason);

  void process(nats::InboundMessage&& msg);
  void on_pull_signal(const consume::PullStatus& status);
  void send_ack(const std::string& reply, std::string_view body);
  // Sizes the pull window from measured handler times: large for fast handlers (throughput),
  // small for slow ones (nothing waits in the buffer past ack_wait).
  void adapt_window(Clock::duration handler_time);
  // Naks a message this replica will not handle, so another replica gets it at once.
  void give_back(nats::InboundMessage&& msg);

  // Sleeps until `d` passes or something happens (a signal, a reconnect, shutdown).
  void wait_for(std::chrono::milliseconds d);
  bool stopping() const { return stopping_.load(); }

  const WorkSpec spec_;
  const WorkHandler handler_;
  FleetContext& ctx_;
  SubscriptionStatus status_;
  nats::JetStreamApi api_;
  std::chrono::milliseconds tick_;
  std::shared_ptr<detail::DeliveryControl> in_progress_;

  std::thread thread_;
  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool woken_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> reconnected_{false};

  std::mutex signal_mu_;
  std::optional<consume::PullStatus> signal_;  // the latest unsettled status from the engine

  std::atomic<int64_t> handler_ns_avg_{0};
  std::atomic<uint64_t> handled_since_adapt_{0};

  std::mutex engine_mu_;
  std::unique_ptr<consume::PullEngine> engine_;
  std::unique_ptr<consume::Dispatcher> dispatcher_;

  // Supervisor-thread state.
  std::string stream_;
  std::string recovering_reason_;
  uint64_t ack_floor_ = 0;
  uint64_t last_floor_seen_ = 0;
  uint64_t last_acked_seen_ = 0;
  Clock::time_point last_info_{};
  Clock::time_point last_progress_{};
};

}  // namespace natsfleet::fleet
