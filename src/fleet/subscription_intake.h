// The intake a ConsumerSubscription consumes through (a pull engine, or a push consumer's deliver
// group), behind one lock: installed, replaced, ticked and stopped by the supervisor thread,
// read, freed and throttled by the pipeline's handler threads (IntakeControl), drained by the
// supervisor while those are busy, signalled by the pull engine from whichever thread reads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "consume/intake.h"
#include "consume/pull_status.h"
#include "fleet/delivery_pipeline.h"
#include "fleet/supervised.h"
#include "nats/consumer_config.h"

namespace natsfleet::fleet {

class SubscriptionIntake final : public IntakeControl {
 public:
  // `wake` tells the supervisor a pull signal waits (take_signal); called on nats.c's threads.
  SubscriptionIntake(FleetContext& context, std::function<void()> wake);
  ~SubscriptionIntake() override;
  SubscriptionIntake(const SubscriptionIntake&) = delete;
  SubscriptionIntake& operator=(const SubscriptionIntake&) = delete;

  // Replaces the intake with one for `config` on stream/consumer, feeding `pipeline` (which
  // outlives every intake installed here). An error, and no intake, when it cannot subscribe.
  Result<void> install(const nats::ConsumerConfig& config, const std::string& stream,
                       const std::string& consumer, const WorkSpec& spec,
                       DeliveryPipeline& pipeline);
  // Whether an intake runs and delivers where `config` says; if so, pulls afresh on it.
  bool restart_if_serving(const nats::ConsumerConfig& config);
  // Pulls afresh (after anything that may have dropped waiting pulls); false when none runs.
  bool restart_pulls();

  // One look per supervisor tick: heartbeats owed and missed, a new gap since the last look.
  struct Check {
    bool running = false;
    bool missed_heartbeats = false;
    bool new_gap = false;
    uint64_t stale_dropped = 0;  // deliveries the engine skipped for gaps so far
  };
  Check check();
  // The latest pull status the engine could not settle itself, taken (at most one is kept).
  std::optional<consume::PullStatus> take_signal();
  void clear_signal();
  // When the consumer last showed it serves this intake; the epoch when no intake runs.
  Clock::time_point last_served() const;

  // Shutdown: asks for nothing more (what is on its way still arrives), then how much is still
  // on its way, then no more deliveries at all.
  void stop_pulling();
  int64_t outstanding() const;
  void stop();

  // Delivers what waits now, without waiting: the supervisor's, each tick (the handler threads
  // read the pull inbox only when idle).
  void drain();

  // IntakeControl, from handler threads.
  bool read(std::chrono::milliseconds wait) override;
  void message_done() override;
  void message_back() override;
  void hold_back(bool hold) override;
  void set_window(int messages) override;

 private:
  void on_signal(const consume::PullStatus& status);
  // The running intake, to call outside the lock (its reads and stop wait for deliveries).
  std::shared_ptr<consume::Intake> current() const;

  FleetContext& ctx_;
  const std::function<void()> wake_;

  mutable std::mutex mu_;
  // Shared with a handler thread reading it (read()), which may outlast its replacement.
  std::shared_ptr<consume::Intake> engine_;
  std::string deliver_subject_;  // of the running intake; empty when pulling
  uint64_t gaps_seen_ = 0;
  bool closing_ = false;  // after stop_pulling(): nothing is installed any more

  std::mutex signal_mu_;
  std::optional<consume::PullStatus> signal_;
};

}  // namespace natsfleet::fleet
